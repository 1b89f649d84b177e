//! Applying an updated file's hunks to its text: each hunk's `@@` lines and old lines are found
//! (forgivingly, `text_match::seek_lines`) after the hunk before it, then all are replaced at
//! once. Pure: the text in, the new text out, or which hunk failed and why.

use super::parse::Hunk;
use crate::tools::text_match::{LineEnding, LineMatch, MatchError, Rule, seek_lines};

/// Why a hunk did not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HunkError {
    #[error("hunk {hunk} (patch line {line}): the line '@@ {context}' was not found")]
    NoContext { hunk: usize, line: usize, context: String },
    #[error("hunk {hunk} (patch line {line}): these lines were not found:\n{lines}")]
    NotFound { hunk: usize, line: usize, lines: String },
    #[error("hunk {hunk} (patch line {line}): its lines match {count} places ({}); add context or an '@@' line to tell them apart", .rule.describe())]
    Ambiguous { hunk: usize, line: usize, count: usize, rule: Rule },
}

/// The text with `hunks` applied, and for each hunk that did not match exactly, how it matched.
pub fn apply(text: &str, hunks: &[Hunk]) -> Result<(String, Vec<String>), HunkError> {
    let ending = match LineEnding::of(text) {
        LineEnding::Unknown => LineEnding::Lf,
        known => known,
    };
    let mut lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    // The empty piece after the last line break is not a line.
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut notes = Vec::new();
    let mut cursor = 0;
    for (i, hunk) in hunks.iter().enumerate() {
        let n = i + 1;
        let ambiguous = |e: MatchError| match e {
            MatchError::Ambiguous { count, rule } => HunkError::Ambiguous { hunk: n, line: hunk.line, count, rule },
            _ => HunkError::NotFound { hunk: n, line: hunk.line, lines: String::new() },
        };
        for context in &hunk.contexts {
            match seek_lines(&lines, &[context.as_str()], cursor, false).map_err(ambiguous)? {
                Some(m) => cursor = m.at + 1,
                None => return Err(HunkError::NoContext { hunk: n, line: hunk.line, context: context.clone() }),
            }
        }
        if hunk.old.is_empty() {
            // Only added lines: after the `@@` line that placed them, else at the end.
            let at = if hunk.contexts.is_empty() { lines.len() } else { cursor };
            replacements.push((at, 0, hunk.new.clone()));
            continue;
        }
        let (found, old_len, new) = match seek(&lines, &hunk.old, cursor, hunk.at_end).map_err(ambiguous)? {
            Some(m) => (m, hunk.old.len(), &hunk.new[..]),
            // A last empty line the file does not have (the patch's view of the final newline).
            None if hunk.old.last().is_some_and(String::is_empty) => {
                let old = &hunk.old[..hunk.old.len() - 1];
                let new = hunk.new.strip_suffix(&[String::new()]).unwrap_or(&hunk.new);
                match seek(&lines, old, cursor, hunk.at_end).map_err(ambiguous)? {
                    Some(m) => (m, old.len(), new),
                    None => return Err(not_found(n, hunk)),
                }
            }
            None => return Err(not_found(n, hunk)),
        };
        if found.rule != Rule::Exact {
            notes.push(format!("hunk {n} matched {}", found.rule.describe()));
        }
        let new = match &found.reindent {
            Some(r) => new.iter().map(|l| r.line(l)).collect(),
            None => new.to_vec(),
        };
        replacements.push((found.at, old_len, new));
        cursor = found.at + old_len;
    }
    // Applied from the end, so earlier indices still hold.
    replacements.sort_by_key(|r| r.0);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for (at, len, new) in replacements.into_iter().rev() {
        out.splice(at..at + len, new);
    }
    let mut text = out.join(ending.as_str());
    // Like Codex: a patched file ends with a line break.
    if !text.is_empty() {
        text.push_str(ending.as_str());
    }
    Ok((text, notes))
}

fn seek(lines: &[&str], old: &[String], from: usize, at_end: bool) -> Result<Option<LineMatch>, MatchError> {
    let old: Vec<&str> = old.iter().map(String::as_str).collect();
    seek_lines(lines, &old, from, at_end)
}

fn not_found(n: usize, hunk: &Hunk) -> HunkError {
    HunkError::NotFound { hunk: n, line: hunk.line, lines: hunk.old.join("\n") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(contexts: &[&str], old: &[&str], new: &[&str]) -> Hunk {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Hunk { line: 3, contexts: owned(contexts), old: owned(old), new: owned(new), at_end: false }
    }

    #[test]
    fn hunks_apply_in_order_after_their_context() {
        let file = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
        let hunks = [hunk(&["fn b() {"], &["    x();"], &["    y();"]), hunk(&[], &["}"], &["} // b"])];
        let (text, notes) = apply(file, &hunks).unwrap_or_default();
        assert_eq!(text, "fn a() {\n    x();\n}\nfn b() {\n    y();\n} // b\n");
        assert!(notes.is_empty());
    }

    #[test]
    fn a_crlf_file_stays_crlf_and_loose_matches_are_reported() {
        let file = "one  \r\n  two\r\nthree\r\n";
        let (text, notes) = apply(file, &[hunk(&[], &["one", "  two"], &["uno", "  dos"])]).unwrap_or_default();
        assert_eq!(text, "uno\r\n  dos\r\nthree\r\n");
        assert_eq!(notes, vec!["hunk 1 matched ignoring trailing whitespace".to_string()]);
        // Re-indented to the file's depth.
        let file = "if a:\n        go()\n        stop()\n";
        let (text, notes) = apply(file, &[hunk(&[], &["go()", "stop()"], &["go()", "    wait()"])]).unwrap_or_default();
        assert_eq!(text, "if a:\n        go()\n            wait()\n");
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn additions_only_and_missing_lines() {
        let (text, _) = apply("a\nb", &[hunk(&[], &[], &["c"])]).unwrap_or_default();
        assert_eq!(text, "a\nb\nc\n");
        let (text, _) = apply("a\nb\n", &[hunk(&["a"], &[], &["a2"])]).unwrap_or_default();
        assert_eq!(text, "a\na2\nb\n");
        assert_eq!(
            apply("a\n", &[hunk(&[], &["zzz"], &["y"])]).err().map(|e| e.to_string()),
            Some("hunk 1 (patch line 3): these lines were not found:\nzzz".into())
        );
        assert_eq!(
            apply("a\n", &[hunk(&["fn nope"], &["a"], &["y"])]).err().map(|e| e.to_string()),
            Some("hunk 1 (patch line 3): the line '@@ fn nope' was not found".into())
        );
        assert!(matches!(
            apply("  x\n    x\n", &[hunk(&[], &["x"], &["y"])]),
            Err(HunkError::Ambiguous { count: 2, rule: Rule::Indentation, .. })
        ));
    }
}
