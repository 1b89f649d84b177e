//! A proposed change reviewed hunk by hunk: how the permission question numbers its hunks
//! (the request's diff carries them, so every client numbers them as the core does), and the
//! text that keeps only the hunks the user kept.
//!
//! A hunk is one run of changed lines (removed, added or both) with the unchanged lines
//! around it left out; two runs with at most 2 × `CONTEXT` unchanged lines between them are
//! one hunk, as in a unified diff with 3 lines of context, so the user never decides half of
//! a change whose shown parts overlap.

use std::ops::Range;

use serde_json::{Value, json};
use similar::{DiffOp, TextDiff};

use crate::event::ToolContent;

/// Lines of context around a hunk (the same as the clients' compact diff).
pub const CONTEXT: usize = 3;

/// One hunk: the old lines it replaces and the new lines it puts there (0-based line indexes,
/// end exclusive; an empty range is an insertion or a deletion point).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// A change approved in part: the change the user saw (its old and new text and hunks) and the
/// hunks they rejected (indexes into `hunks`, sorted; at least one kept).
#[derive(Debug, Clone)]
pub struct Part {
    pub old: Option<String>,
    pub new: String,
    pub hunks: Vec<Hunk>,
    pub rejected: Vec<usize>,
}

impl Part {
    /// The text to write instead of `new`: only the kept hunks applied. `None` when the change
    /// worked out again (`old` → `new`) is not the one the user saw: the file changed while
    /// they were asked, and their answer does not fit it.
    pub fn text_for(&self, old: Option<&str>, new: &str) -> Option<String> {
        (old == self.old.as_deref() && new == self.new).then(|| keep_only(old, new, &self.hunks, &self.rejected))
    }

    /// What the model is told about the hunks written and not written.
    pub fn note(&self) -> String {
        let n = self.hunks.len();
        let kept: Vec<usize> = (0..n).filter(|i| !self.rejected.contains(i)).collect();
        let mut out = format!(
            "The user approved only part of this change. Of its {n} hunks, {} written; {} rejected and NOT written \
             (the file keeps its old text there):\n```diff\n",
            numbered(&kept),
            numbered(&self.rejected),
        );
        for &i in &self.rejected {
            out.push_str(&hunk_text(self.old.as_deref(), &self.new, &self.hunks[i]));
        }
        out.push_str("```\nDo not make the rejected changes again unless the user asks for them.");
        out
    }
}

/// "hunk 2 was" or "hunks 1, 3 were", from 0-based indexes.
fn numbered(indexes: &[usize]) -> String {
    let list: Vec<String> = indexes.iter().map(|i| (i + 1).to_string()).collect();
    match list.len() {
        1 => format!("hunk {} was", list[0]),
        _ => format!("hunks {} were", list.join(", ")),
    }
}

/// The change a permission question offers hunk by hunk, if any: a preview that is one change
/// to an existing file with two hunks or more (a new file, or a single hunk, is all or nothing).
pub fn offered(preview: &[ToolContent]) -> Option<Part> {
    let [ToolContent::Diff { old: Some(old), new, .. }] = preview else { return None };
    let hunks = hunks(Some(old), new);
    (hunks.len() >= 2).then(|| Part { old: Some(old.clone()), new: new.clone(), hunks, rejected: Vec::new() })
}

/// The hunks from `old` (none for a new file) to `new`, in order.
pub fn hunks(old: Option<&str>, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(old.unwrap_or(""), new);
    diff.grouped_ops(CONTEXT)
        .iter()
        .filter_map(|group| {
            let changed: Vec<&DiffOp> = group.iter().filter(|op| !matches!(op, DiffOp::Equal { .. })).collect();
            let (first, last) = (changed.first()?, changed.last()?);
            Some(Hunk {
                old: first.old_range().start..last.old_range().end,
                new: first.new_range().start..last.new_range().end,
            })
        })
        .collect()
}

/// The hunks as the permission request's diff carries them, under `_meta.corvid.hunks`:
/// `[{"oldStart", "oldLines", "newStart", "newLines"}]`, 1-based starts as in a unified diff
/// header (a start of an empty range names the line it comes after, 0 for the top).
pub fn hunks_meta(hunks: &[Hunk]) -> Value {
    Value::Array(
        hunks
            .iter()
            .map(|h| {
                json!({ "oldStart": start(&h.old), "oldLines": h.old.len(), "newStart": start(&h.new), "newLines": h.new.len() })
            })
            .collect(),
    )
}

/// The new text with only the hunks not in `rejected` applied: a rejected hunk keeps the old
/// lines. `hunks` must be `hunks(old, new)`.
pub fn keep_only(old: Option<&str>, new: &str, hunks: &[Hunk], rejected: &[usize]) -> String {
    let old_lines = lines(old.unwrap_or(""));
    let new_lines = lines(new);
    let mut out = String::with_capacity(new.len());
    let mut at = 0;
    for (i, h) in hunks.iter().enumerate() {
        out.extend(old_lines[at..h.old.start].iter().copied());
        let taken = if rejected.contains(&i) { &old_lines[h.old.clone()] } else { &new_lines[h.new.clone()] };
        out.extend(taken.iter().copied());
        at = h.old.end;
    }
    out.extend(old_lines[at..].iter().copied());
    out
}

/// A hunk as unified-diff text, for the model: what was or was not written.
pub fn hunk_text(old: Option<&str>, new: &str, h: &Hunk) -> String {
    let old_lines = lines(old.unwrap_or(""));
    let new_lines = lines(new);
    let mut out = format!("@@ -{},{} +{},{} @@\n", start(&h.old), h.old.len(), start(&h.new), h.new.len());
    for (sign, text) in
        old_lines[h.old.clone()].iter().map(|l| ('-', l)).chain(new_lines[h.new.clone()].iter().map(|l| ('+', l)))
    {
        out.push(sign);
        out.push_str(text.strip_suffix('\n').unwrap_or(text));
        out.push('\n');
    }
    out
}

/// A range's start as a unified diff header gives it: 1-based, or for an empty range the line
/// it comes after (0 for the top).
fn start(r: &Range<usize>) -> usize {
    if r.is_empty() { r.start } else { r.start + 1 }
}

/// A text's lines, each with its line ending (the last may have none), so that joining them
/// gives the text back byte for byte.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";

    #[test]
    fn changes_more_than_six_lines_apart_are_separate_hunks_and_closer_ones_one() {
        let new = OLD.replace("b\n", "B\n").replace("k\n", "K\n");
        let h = hunks(Some(OLD), &new);
        assert_eq!(h, vec![Hunk { old: 1..2, new: 1..2 }, Hunk { old: 10..11, new: 10..11 }]);
        let close = OLD.replace("b\n", "B\n").replace("g\n", "G\n");
        assert_eq!(hunks(Some(OLD), &close), vec![Hunk { old: 1..7, new: 1..7 }]);
    }

    #[test]
    fn keeping_some_hunks_writes_exactly_those_and_the_old_text_elsewhere() {
        let new = OLD.replace("b\n", "B\nB2\n").replace("k\n", "");
        let h = hunks(Some(OLD), &new);
        assert_eq!(h.len(), 2);
        assert_eq!(keep_only(Some(OLD), &new, &h, &[]), new);
        assert_eq!(keep_only(Some(OLD), &new, &h, &[0, 1]), OLD);
        assert_eq!(keep_only(Some(OLD), &new, &h, &[1]), OLD.replace("b\n", "B\nB2\n"));
        assert_eq!(keep_only(Some(OLD), &new, &h, &[0]), OLD.replace("k\n", ""));
    }

    #[test]
    fn line_endings_and_a_last_line_without_one_survive_byte_for_byte() {
        let old = "one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\neight\r\n8b\r\nnine";
        let new = old.replace("two", "TWO").replace("nine", "NINE");
        let h = hunks(Some(old), &new);
        assert_eq!(h.len(), 2);
        assert_eq!(keep_only(Some(old), &new, &h, &[0]), old.replace("nine", "NINE"));
        assert_eq!(keep_only(Some(old), &new, &h, &[1]), old.replace("two", "TWO"));
    }

    #[test]
    fn a_part_fits_only_the_change_the_user_saw_and_tells_the_model_what_was_left_out() {
        let new = OLD.replace("b\n", "B\n").replace("k\n", "K\n");
        let part = Part { old: Some(OLD.into()), new: new.clone(), hunks: hunks(Some(OLD), &new), rejected: vec![1] };
        assert_eq!(part.text_for(Some(OLD), &new).as_deref(), Some(OLD.replace("b\n", "B\n").as_str()));
        let edited_meanwhile = OLD.replace("a\n", "A\n");
        assert_eq!(part.text_for(Some(&edited_meanwhile), &new), None);
        let note = part.note();
        assert!(note.contains("Of its 2 hunks, hunk 1 was written; hunk 2 was rejected and NOT written"), "{note}");
        assert!(note.contains("@@ -11,1 +11,1 @@\n-k\n+K\n"), "{note}");
    }

    #[test]
    fn the_meta_and_the_text_name_lines_as_a_unified_diff_does() {
        let new = OLD.replace("k\n", "");
        let h = hunks(Some(OLD), &new);
        assert_eq!(hunks_meta(&h), json!([{ "oldStart": 11, "oldLines": 1, "newStart": 10, "newLines": 0 }]));
        assert_eq!(hunk_text(Some(OLD), &new, &h[0]), "@@ -11,1 +10,0 @@\n-k\n");
        let created = hunks(None, "x\ny\n");
        assert_eq!(hunks_meta(&created), json!([{ "oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": 2 }]));
    }
}
