use super::*;

fn replaced(text: &str, old: &str, new: &str) -> (String, Rule) {
    let r = replace(text, old, new, false).unwrap_or_else(|e| panic!("{old:?} in {text:?}: {e}"));
    assert_eq!(r.count, 1);
    (r.text, r.rule)
}

#[test]
fn an_exact_match_wins_and_replaces_only_its_bytes() {
    let (text, rule) = replaced("let a = \"hi\";\n", "\"hi\"", "\"hello\"");
    assert_eq!((text.as_str(), rule), ("let a = \"hello\";\n", Rule::Exact));
}

#[test]
fn line_endings_are_forgiven_and_a_crlf_file_stays_crlf() {
    let file = "fn a() {\r\n    one();\r\n}\r\n";
    let (text, rule) = replaced(file, "    one();\n}\n", "    two();\n    three();\n}\n");
    assert_eq!(rule, Rule::LineEndings);
    assert_eq!(text, "fn a() {\r\n    two();\r\n    three();\r\n}\r\n");
    // An LF file given CRLF text stays LF.
    let (text, rule) = replaced("a\nb\nc\n", "a\r\nb\r\n", "x\r\ny\r\n");
    assert_eq!((text.as_str(), rule), ("x\ny\nc\n", Rule::LineEndings));
}

#[test]
fn trailing_whitespace_is_forgiven() {
    let (text, rule) = replaced("if x {  \n\treturn;\t\n}\n", "if x {\n\treturn;\n}", "if y {\n}");
    assert_eq!((text.as_str(), rule), ("if y {\n}\n", Rule::TrailingWhitespace));
}

#[test]
fn a_block_at_another_depth_matches_and_the_new_text_is_moved_there() {
    let file = "impl A {\n    fn f() {\n        if x {\n            go();\n        }\n    }\n}\n";
    let (text, rule) = replaced(file, "if x {\n    go();\n}\n", "if x {\n    stop();\n\n    go();\n}\n");
    assert_eq!(rule, Rule::Indentation);
    assert_eq!(
        text,
        "impl A {\n    fn f() {\n        if x {\n            stop();\n\n            go();\n        }\n    }\n}\n"
    );
    // Relative indentation must be the same: a block whose inner line moved differently is not it.
    assert_eq!(replace(file, "if x {\ngo();\n}", "y", false), Err(MatchError::NotFound));
}

#[test]
fn unicode_punctuation_is_forgiven() {
    let file = "say(\u{201C}it\u{2019}s fine\u{201D}) \u{2014} ok\u{00A0}then\u{2026}\n";
    let (text, rule) = replaced(file, "say(\"it's fine\") - ok then...", "say(\"done\")");
    assert_eq!((text.as_str(), rule), ("say(\"done\")\n", Rule::Punctuation));
}

#[test]
fn a_loose_match_must_be_unique_and_an_exact_one_is_preferred() {
    // Two places match ignoring trailing whitespace: a guess, refused.
    let file = "x = 1;  \ny = 2;\nx = 1;\t\n";
    assert_eq!(
        replace(file, "x = 1;\ny", "z", false),
        Ok(Replaced { text: "z = 2;\nx = 1;\t\n".into(), rule: Rule::TrailingWhitespace, count: 1 })
    );
    assert_eq!(
        replace("a  \nb\na \nb\n", "a\nb", "c", false),
        Err(MatchError::Ambiguous { count: 2, rule: Rule::TrailingWhitespace })
    );
    // The exact place wins over a looser one elsewhere.
    let (text, rule) = replaced("call()\r\ncall()\n", "call()\n", "done()\n");
    // Written with the file's first line ending.
    assert_eq!((text.as_str(), rule), ("call()\r\ndone()\r\n", Rule::Exact));
    assert_eq!(replace("a a a", "a", "b", false), Err(MatchError::Ambiguous { count: 3, rule: Rule::Exact }));
    assert_eq!(replace("abc", "", "b", false), Err(MatchError::Empty));
    assert_eq!(replace("abc", "xyz", "b", false), Err(MatchError::NotFound));
}

#[test]
fn replace_all_changes_every_place_of_the_strictest_rule() {
    let r = replace("aa aa aaa", "aa", "b", true).ok();
    assert_eq!(r, Some(Replaced { text: "b b ba".into(), rule: Rule::Exact, count: 3 }));
    let r = replace("  f(1)\n    f(1)\n", "f(1)\n", "g(2)\n", true).ok();
    assert_eq!(r.map(|r| (r.text, r.count)), Some(("  g(2)\n    g(2)\n".into(), 2)));
}

#[test]
fn line_endings_are_read_from_the_first_break() {
    assert_eq!(LineEnding::of("a\r\nb\n"), LineEnding::CrLf);
    assert_eq!(LineEnding::of("a\nb\r\n"), LineEnding::Lf);
    assert_eq!(LineEnding::of("ab"), LineEnding::Unknown);
    assert_eq!(LineEnding::CrLf.apply("a\nb\r\nc"), "a\r\nb\r\nc");
}

#[test]
fn seek_lines_tries_the_rules_in_order() {
    let file = ["fn f() {", "    let a = 1;  ", "    call(\u{2018}x\u{2019});", "}", "", "fn g() {", "}"];
    let at = |pattern: &[&str], from, end| seek_lines(&file, pattern, from, end);
    let m = at(&["}"], 0, false).ok().flatten();
    assert_eq!(m.map(|m| (m.at, m.rule)), Some((3, Rule::Exact)));
    // The first exact place at or after `from`; with `at_end`, the file's end first.
    assert_eq!(at(&["}"], 4, false).ok().flatten().map(|m| m.at), Some(6));
    assert_eq!(at(&["}"], 0, true).ok().flatten().map(|m| m.at), Some(6));
    let m = at(&["    let a = 1;", "    call('x');"], 0, false).ok().flatten();
    assert_eq!(m.map(|m| (m.at, m.rule)), Some((1, Rule::Punctuation)));
    let m = at(&["let a = 1;"], 0, false).ok().flatten();
    let m = m.expect("found by indentation");
    assert_eq!((m.at, m.rule), (1, Rule::Indentation));
    assert_eq!(m.reindent.map(|r| r.line("let b = 2;")), Some("    let b = 2;".into()));
    assert_eq!(at(&["nothing"], 0, false), Ok(None));
    assert_eq!(at(&["fn g() {", "}", "more"], 0, false), Ok(None));
    let twice = ["  a", "  b", "    a", "    b"];
    assert_eq!(
        seek_lines(&twice, &["a", "b"], 0, false),
        Err(MatchError::Ambiguous { count: 2, rule: Rule::Indentation })
    );
}
