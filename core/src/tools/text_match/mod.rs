//! Finding the text a model means in a file, forgivingly: `edit_file` and `apply_patch` both
//! match through here.
//!
//! Models copy text out of files imperfectly: `\n` for a file's `\r\n`, trailing spaces lost,
//! a block re-indented, typographic quotes typed as ASCII ones. Each [`Rule`] forgives one more
//! of these, and rules are tried in order, stopping at the first that finds anything: an exact
//! match is always preferred, and a looser rule is only reached when the stricter ones found
//! nothing. Past `Exact` a match must be unique (a loose rule that finds two places is a
//! guess), and the caller tells the model which rule matched, so it learns to copy better.
//!
//! `view` holds the character-level rules (a normalized copy of the text that remembers where
//! each byte came from); `lines` the line-level one (indentation) and the line-sequence search
//! that patches use.

mod lines;
mod view;

#[cfg(test)]
mod tests;

pub use lines::{LineMatch, Reindent, seek_lines};

/// How forgiving a match was, in the order the rules are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Exact,
    /// `\r\n` and `\n` taken as the same.
    LineEndings,
    /// Also spaces and tabs at the ends of lines ignored.
    TrailingWhitespace,
    /// Also whole lines matched with a uniform shift of their indentation (re-indented on write).
    Indentation,
    /// Also typographic quotes, dashes, ellipses and odd spaces taken as their ASCII forms.
    Punctuation,
}

impl Rule {
    pub const ALL: [Rule; 5] =
        [Rule::Exact, Rule::LineEndings, Rule::TrailingWhitespace, Rule::Indentation, Rule::Punctuation];

    /// What the model is told when this rule made the match.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Exact => "exactly",
            Rule::LineEndings => "after normalizing line endings",
            Rule::TrailingWhitespace => "ignoring trailing whitespace",
            Rule::Indentation => "with different indentation (the new text was re-indented to fit)",
            Rule::Punctuation => "after normalizing Unicode punctuation (quotes, dashes, spaces)",
        }
    }
}

/// Why a text could not be matched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    #[error("the text to replace is empty")]
    Empty,
    #[error("not found, even ignoring line endings, trailing whitespace, indentation and Unicode punctuation")]
    NotFound,
    #[error("found {count} times ({}): include more surrounding lines so it matches exactly once", .rule.describe())]
    Ambiguous { count: usize, rule: Rule },
}

/// A replacement made: the new text, the rule that matched, and how many places changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    pub text: String,
    pub rule: Rule,
    pub count: usize,
}

/// One place in the text that matched, as a byte range of the original, and how the new text
/// must be re-indented to fit there (the indentation rule only).
struct Found {
    start: usize,
    end: usize,
    reindent: Option<Reindent>,
}

/// Replaces `old` with `new` in `text`: the one place it matches (or every place, with `all`),
/// by the strictest rule that finds it. `new` is written with `text`'s own line endings.
pub fn replace(text: &str, old: &str, new: &str, all: bool) -> Result<Replaced, MatchError> {
    if old.is_empty() {
        return Err(MatchError::Empty);
    }
    for rule in Rule::ALL {
        let found = find(text, old, rule);
        match found.len() {
            0 => continue,
            1 => {}
            count if !all => return Err(MatchError::Ambiguous { count, rule }),
            _ => {}
        }
        let ending = LineEnding::of(text);
        let mut out = String::with_capacity(text.len() + new.len());
        let mut from = 0;
        for f in &found {
            out.push_str(&text[from..f.start]);
            let piece = match &f.reindent {
                Some(r) => r.text(new),
                None => new.to_string(),
            };
            out.push_str(&ending.apply(&piece));
            from = f.end;
        }
        out.push_str(&text[from..]);
        return Ok(Replaced { text: out, rule, count: found.len() });
    }
    Err(MatchError::NotFound)
}

/// Every place `old` matches in `text` under `rule` (not overlapping).
fn find(text: &str, old: &str, rule: Rule) -> Vec<Found> {
    match rule {
        Rule::Exact => memchr::memmem::find_iter(text.as_bytes(), old.as_bytes())
            .scan(0, |next, at| {
                // `find_iter` reports overlapping matches; `str::matches` does not.
                let keep = at >= *next;
                if keep {
                    *next = at + old.len();
                }
                Some(keep.then_some(at))
            })
            .flatten()
            .map(|at| Found { start: at, end: at + old.len(), reindent: None })
            .collect(),
        Rule::Indentation => lines::find_reindented(text, old),
        _ => view::find(text, old, rule),
    }
}

/// A file's line ending, which text written into it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    CrLf,
    /// The file has no line break: text goes in as the model wrote it.
    Unknown,
}

impl LineEnding {
    /// The ending of `text`'s first line break (editors write one kind; a mixed file keeps
    /// whatever it starts with).
    pub fn of(text: &str) -> Self {
        match memchr::memchr(b'\n', text.as_bytes()) {
            Some(at) if at > 0 && text.as_bytes()[at - 1] == b'\r' => LineEnding::CrLf,
            Some(_) => LineEnding::Lf,
            None => LineEnding::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::CrLf => "\r\n",
            LineEnding::Lf | LineEnding::Unknown => "\n",
        }
    }

    /// `text` with every line break made this ending.
    pub fn apply(self, text: &str) -> String {
        match self {
            LineEnding::Unknown => text.to_string(),
            LineEnding::Lf => text.replace("\r\n", "\n"),
            LineEnding::CrLf => text.replace("\r\n", "\n").replace('\n', "\r\n"),
        }
    }
}
