//! The line-level rule (indentation) and the line-sequence search of patches.
//!
//! A block the model quotes at a different depth (copied out of a nested function, pasted
//! flush left) still names the same lines if every line moved by the same indentation. Such a
//! match is whole lines only, and the new text is moved by the same shift before it is written.

use super::view::ascii_line;
use super::{Found, MatchError, Rule};

/// How a block matched by indentation is re-indented: the model's indentation `from` becomes
/// the file's `to` at the start of each line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reindent {
    from: String,
    to: String,
}

impl Reindent {
    /// One line of new text, moved to the file's indentation.
    pub fn line(&self, line: &str) -> String {
        if line.trim().is_empty() {
            return String::new();
        }
        match line.strip_prefix(self.from.as_str()) {
            Some(rest) => format!("{}{rest}", self.to),
            // Less indented than the block it replaces: its own indentation is not the model's
            // shift, so it gets the file's base indentation.
            None => format!("{}{}", self.to, line.trim_start()),
        }
    }

    /// A whole new text, line by line (line breaks kept as `\n`).
    pub fn text(&self, text: &str) -> String {
        text.split('\n').map(|l| self.line(l.strip_suffix('\r').unwrap_or(l))).collect::<Vec<_>>().join("\n")
    }
}

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The model's block of lines, ready to be compared at any depth: its lines (trailing
/// whitespace dropped), its base indentation, and which line has it.
struct Block<'a> {
    lines: Vec<&'a str>,
    indent: &'a str,
    base_line: usize,
}

impl<'a> Block<'a> {
    /// `None` for a block of blank lines, or one whose lines do not share their least
    /// indentation (tabs on one line, spaces on another): no uniform shift can move it.
    fn of(lines: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        let lines: Vec<&str> = lines.into_iter().map(|l| l.trim_end()).collect();
        let base_line = (0..lines.len()).filter(|&i| !is_blank(lines[i])).min_by_key(|&i| indent_of(lines[i]).len())?;
        let indent = indent_of(lines[base_line]);
        lines.iter().all(|l| is_blank(l) || l.starts_with(indent)).then_some(Block { lines, indent, base_line })
    }

    /// Whether `file` (as many lines as the block) holds the block shifted uniformly, and the
    /// shift.
    fn at(&self, file: &[&str]) -> Option<Reindent> {
        let to = indent_of(file.get(self.base_line)?);
        let same = self.lines.iter().zip(file).all(|(want, have)| {
            let have = have.trim_end();
            if is_blank(want) {
                return is_blank(have);
            }
            have.strip_prefix(to).is_some_and(|rest| rest == &want[self.indent.len()..])
        });
        same.then(|| Reindent { from: self.indent.to_string(), to: to.to_string() })
    }
}

/// One line of a text: where it starts, where its content ends (before `\r\n` or `\n`), and
/// where the next line starts.
struct Line {
    start: usize,
    content_end: usize,
    next: usize,
}

fn lines_of(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        match memchr::memchr(b'\n', &text.as_bytes()[start..]) {
            Some(i) => {
                let newline = start + i;
                let content_end = if text[start..newline].ends_with('\r') { newline - 1 } else { newline };
                out.push(Line { start, content_end, next: newline + 1 });
                start = newline + 1;
            }
            None => {
                out.push(Line { start, content_end: text.len(), next: text.len() });
                return out;
            }
        }
    }
}

/// The indentation rule of `replace`: every place (not overlapping) where `old`'s whole lines
/// are `text`'s lines at another depth.
pub(super) fn find_reindented(text: &str, old: &str) -> Vec<Found> {
    let old = old.replace("\r\n", "\n");
    // A block quoted with its last line break covers that line break too.
    let (old, with_break) = match old.strip_suffix('\n') {
        Some(o) => (o, true),
        None => (old.as_str(), false),
    };
    let Some(block) = Block::of(old.split('\n')) else { return Vec::new() };
    let n = block.lines.len();
    let lines = lines_of(text);
    let contents: Vec<&str> = lines.iter().map(|l| &text[l.start..l.content_end]).collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + n <= contents.len() {
        match block.at(&contents[i..i + n]) {
            Some(reindent) => {
                let last = &lines[i + n - 1];
                let end = if with_break { last.next } else { last.content_end };
                found.push(Found { start: lines[i].start, end, reindent: Some(reindent) });
                i += n;
            }
            None => i += 1,
        }
    }
    found
}

/// Where a patch's lines were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineMatch {
    /// The index of the first matching line.
    pub at: usize,
    pub rule: Rule,
    /// For a match by indentation: how the hunk's new lines are moved.
    pub reindent: Option<Reindent>,
}

/// Finds `pattern` in `lines` at or after `from`, by the strictest rule that finds it. An
/// exact match takes the first place (a patch's context and `@@` lines narrow it down); a
/// looser one must be the only place. With `at_end` (`*** End of File`), the last lines of the
/// file are tried first under each rule. `Ok(None)`: nowhere.
pub fn seek_lines(
    lines: &[&str],
    pattern: &[&str],
    from: usize,
    at_end: bool,
) -> Result<Option<LineMatch>, MatchError> {
    if pattern.is_empty() {
        return Ok(Some(LineMatch { at: from.min(lines.len()), rule: Rule::Exact, reindent: None }));
    }
    let n = pattern.len();
    if n > lines.len() || from > lines.len() - n {
        return Ok(None);
    }
    let block = Block::of(pattern.iter().copied());
    for rule in Rule::ALL {
        let matches_at = |i: usize| -> Option<Option<Reindent>> {
            let window = &lines[i..i + n];
            let same = |f: &dyn Fn(&str) -> String| window.iter().zip(pattern).all(|(a, b)| f(a) == f(b));
            match rule {
                Rule::Exact => (window == pattern).then_some(None),
                Rule::LineEndings => same(&|l| l.trim_end_matches('\r').to_string()).then_some(None),
                Rule::TrailingWhitespace => same(&|l| l.trim_end().to_string()).then_some(None),
                Rule::Indentation => block.as_ref().and_then(|b| b.at(window)).map(Some),
                Rule::Punctuation => same(&|l| ascii_line(l.trim_end())).then_some(None),
            }
        };
        let last = lines.len() - n;
        if at_end && let Some(reindent) = matches_at(last) {
            return Ok(Some(LineMatch { at: last, rule, reindent }));
        }
        let mut found = (from..=last).filter_map(|i| matches_at(i).map(|r| (i, r)));
        let Some((at, reindent)) = found.next() else { continue };
        if rule != Rule::Exact {
            let more = found.count();
            if more > 0 {
                return Err(MatchError::Ambiguous { count: more + 1, rule });
            }
        }
        return Ok(Some(LineMatch { at, rule, reindent }));
    }
    Ok(None)
}
