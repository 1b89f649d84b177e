//! The character-level rules: a normalized copy of a text (line endings made `\n`, trailing
//! whitespace dropped, punctuation made ASCII, as far as the rule goes) that remembers, for
//! each of its bytes, the range of the original it came from. A match in the copy maps back to
//! the original range it covers, so what is replaced is the file's own text.

use super::{Found, Rule};

struct View {
    text: String,
    /// For each byte of `text`, the original range of the character it came from.
    source: Vec<(usize, usize)>,
}

impl View {
    fn of(src: &str, rule: Rule) -> Self {
        let trailing = matches!(rule, Rule::TrailingWhitespace | Rule::Indentation | Rule::Punctuation);
        let punctuation = rule == Rule::Punctuation;
        let mut view = View { text: String::with_capacity(src.len()), source: Vec::with_capacity(src.len()) };
        let mut line_start = 0;
        loop {
            let newline = memchr::memchr(b'\n', &src.as_bytes()[line_start..]).map(|i| line_start + i);
            let line_end = newline.unwrap_or(src.len());
            let mut content = &src[line_start..line_end];
            // Every rule here forgives line endings: a `\r` before the `\n` is part of the break.
            let has_cr = newline.is_some() && content.ends_with('\r');
            if has_cr {
                content = &content[..content.len() - 1];
            }
            if trailing {
                content = content.trim_end_matches([' ', '\t']);
            }
            for (i, c) in content.char_indices() {
                let at = line_start + i;
                let range = (at, at + c.len_utf8());
                match punctuation.then(|| ascii_form(c)).flatten() {
                    Some(ascii) => view.push(ascii, range),
                    None => view.push_char(c, range),
                }
            }
            let Some(newline) = newline else { break };
            let break_start = if has_cr { newline - 1 } else { newline };
            view.push("\n", (break_start, newline + 1));
            line_start = newline + 1;
        }
        view
    }

    fn push(&mut self, s: &str, range: (usize, usize)) {
        self.text.push_str(s);
        self.source.extend(std::iter::repeat_n(range, s.len()));
    }

    fn push_char(&mut self, c: char, range: (usize, usize)) {
        self.text.push(c);
        self.source.extend(std::iter::repeat_n(range, c.len_utf8()));
    }
}

/// Every place `old` matches `text` once both are normalized by `rule`, as original ranges of
/// `text` (not overlapping).
pub(super) fn find(text: &str, old: &str, rule: Rule) -> Vec<Found> {
    let needle = View::of(old, rule).text;
    if needle.is_empty() {
        return Vec::new();
    }
    let hay = View::of(text, rule);
    let mut found = Vec::new();
    let mut next = 0;
    for at in memchr::memmem::find_iter(hay.text.as_bytes(), needle.as_bytes()) {
        if at < next {
            continue;
        }
        next = at + needle.len();
        // Both ends fall on characters of the copy, so both have a source.
        let (Some(first), Some(last)) = (hay.source.get(at), hay.source.get(next - 1)) else { continue };
        found.push(Found { start: first.0, end: last.1, reindent: None });
    }
    found
}

/// The ASCII form of a typographic character models tend to type plainly, if it has one.
pub(super) fn ascii_form(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => "-",
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => "\"",
        '\u{2026}' => "...",
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => " ",
        _ => return None,
    })
}

/// `line` with its punctuation in ASCII form (for the line-level search).
pub(super) fn ascii_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match ascii_form(c) {
            Some(a) => out.push_str(a),
            None => out.push(c),
        }
    }
    out
}
