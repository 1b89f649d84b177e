//! edit_file: replace text in a file, one edit or several in order, all or nothing. The text is
//! found forgivingly (`text_match`): exactly if it can be, else by the strictest rule that
//! finds it once, and the model is told which rule that was.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::change::{self, Change};
use super::text_match::{self, MatchError, Rule};
use super::{Announce, Jail, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::ToolContent;
use crate::provider::ToolSpec;

#[derive(Deserialize)]
struct Args {
    path: String,
    old_text: Option<String>,
    new_text: Option<String>,
    #[serde(default)]
    replace_all: bool,
    edits: Option<Vec<Edit>>,
}

#[derive(Deserialize)]
struct Edit {
    old_text: String,
    new_text: String,
    #[serde(default)]
    replace_all: bool,
}

impl Args {
    /// The edits to make: `edits`, or the one given by `old_text` / `new_text`.
    fn edits(self) -> Result<(String, Vec<Edit>), ToolError> {
        let bad = |reason: &str| ToolError::Arguments { tool: "edit_file".into(), reason: reason.into() };
        let edits = match (self.edits, self.old_text, self.new_text) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(bad("give either old_text and new_text, or edits, not both"));
            }
            (Some(edits), None, None) if edits.is_empty() => return Err(bad("edits is empty")),
            (Some(edits), None, None) => edits,
            (None, Some(old_text), Some(new_text)) => vec![Edit { old_text, new_text, replace_all: self.replace_all }],
            (None, _, _) => return Err(bad("old_text and new_text are required (or edits)")),
        };
        Ok((self.path, edits))
    }
}

pub struct EditFile;

impl EditFile {
    async fn plan(args: &Value, cx: &ToolContext<'_>) -> Result<Change, ToolError> {
        let (path, edits) = parse_args::<Args>("edit_file", args)?.edits()?;
        if edits.iter().any(|e| e.old_text.is_empty()) {
            return Err(ToolError::Failed("old_text is empty: use write_file to create a file".into()));
        }
        let (resolved, old) = cx.files().read(cx.jail, &path).await?;
        let old = old.ok_or_else(|| ToolError::Failed(format!("{path} does not exist")))?;
        let (new, notes) = apply_all(&old, &edits, &path)?;
        let mut summary = format!("Edited {path}");
        if !notes.is_empty() {
            summary.push_str(&format!(" ({})", notes.join("; ")));
        }
        Ok(Change { path, resolved, old: Some(old), new, summary })
    }
}

/// Applies `edits` to `text` in order, each to the result of the one before; the first that
/// cannot apply fails them all, naming itself. Returns the text and what the model should know
/// about how the edits matched (nothing when all matched exactly once).
fn apply_all(text: &str, edits: &[Edit], path: &str) -> Result<(String, Vec<String>), ToolError> {
    let several = edits.len() > 1;
    let mut text = text.to_string();
    let mut notes = Vec::new();
    for (n, edit) in edits.iter().enumerate() {
        let which = if several { format!("edit {} of {}: ", n + 1, edits.len()) } else { String::new() };
        let done = text_match::replace(&text, &edit.old_text, &edit.new_text, edit.replace_all).map_err(|e| {
            let unchanged = if several { " Nothing was changed." } else { "" };
            ToolError::Failed(match e {
                MatchError::NotFound => format!(
                    "{which}old_text was not found in {path}, even ignoring line endings, trailing whitespace, \
                     indentation and Unicode punctuation: read the file again and copy the text.{unchanged}"
                ),
                MatchError::Ambiguous { count, rule } => format!(
                    "{which}old_text occurs {count} times in {path}{}: include more surrounding lines so it matches \
                     exactly once, or set replace_all to change every one.{unchanged}",
                    if rule == Rule::Exact { String::new() } else { format!(" ({})", rule.describe()) }
                ),
                MatchError::Empty => format!("{which}old_text is empty.{unchanged}"),
            })
        })?;
        let label = if several { format!("edit {}", n + 1) } else { "old_text".into() };
        if done.rule != Rule::Exact {
            notes.push(format!("{label} matched {}", done.rule.describe()));
        }
        if edit.replace_all {
            notes.push(format!("{label} replaced {} occurrence{}", done.count, if done.count == 1 { "" } else { "s" }));
        }
        text = done.text;
    }
    Ok((text, notes))
}

const DESCRIPTION: &str = "Replace text in a file. old_text must occur exactly once (include surrounding lines to make it \
unique), or set replace_all to replace every occurrence. If old_text is not found exactly, it is matched ignoring line \
endings, then trailing whitespace, then indentation (the new text is re-indented to fit), then Unicode punctuation; such a \
match must be unique, and the result says which rule matched. To make several edits to one file, pass edits: [{old_text, \
new_text, replace_all?}, ...] instead: they apply in order, each to the result of the one before, and all or none are \
written.";

impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn spec(&self) -> ToolSpec {
        let edit = json!({
            "type": "object",
            "properties": {
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
            },
            "required": ["old_text", "new_text"]
        });
        super::spec(
            "edit_file",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_text": {"type": "string", "description": "The text to replace (one edit)."},
                    "new_text": {"type": "string", "description": "What replaces it."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_text (default false)."},
                    "edits": {"type": "array", "items": edit, "description": "Several edits, applied in order, all or nothing (instead of old_text/new_text)."}
                },
                "required": ["path"]
            }),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        change::announce("Edit", &parse_args::<Args>("edit_file", args)?.path, jail)
    }

    fn writes_in_part(&self) -> bool {
        true
    }

    fn preview<'a>(
        &'a self,
        args: &'a Value,
        cx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Vec<ToolContent>, ToolError>> {
        change::preview(Self::plan(args, cx))
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        change::run(Self::plan(args, cx), cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Edit {
        Edit { old_text: old.into(), new_text: new.into(), replace_all: false }
    }

    #[test]
    fn several_edits_apply_in_order_or_not_at_all() {
        let file = "a = 1\nb = 2\n";
        let (text, notes) = apply_all(file, &[edit("a = 1", "a = 10"), edit("a = 10\nb", "c")], "f").ok().unzip();
        assert_eq!(text.as_deref(), Some("c = 2\n"));
        assert_eq!(notes, Some(vec![]));
        let failed = apply_all(file, &[edit("a = 1", "x"), edit("zzz", "y")], "f").err().map(|e| e.to_string());
        let failed = failed.unwrap_or_default();
        assert!(failed.starts_with("edit 2 of 2: old_text was not found in f"), "{failed}");
        assert!(failed.ends_with("Nothing was changed."), "{failed}");
    }

    #[test]
    fn the_model_is_told_how_a_loose_match_matched() {
        let edits = [edit("x  = 1\n", "y\n"), Edit { old_text: "q".into(), new_text: "r".into(), replace_all: true }];
        let (text, notes) = apply_all("x  = 1  \r\nq q\r\n", &edits, "f").ok().unzip();
        assert_eq!(text.as_deref(), Some("y\r\nr r\r\n"));
        assert_eq!(
            notes,
            Some(vec!["edit 1 matched ignoring trailing whitespace".into(), "edit 2 replaced 2 occurrences".into()])
        );
    }

    #[test]
    fn arguments_give_one_edit_or_a_list() {
        let args = |v: Value| parse_args::<Args>("edit_file", &v).and_then(Args::edits).map(|(_, e)| e.len());
        assert_eq!(args(json!({"path": "p", "old_text": "a", "new_text": "b"})).ok(), Some(1));
        let two = json!({"path": "p", "edits": [{"old_text": "a", "new_text": "b"}, {"old_text": "c", "new_text": "d", "replace_all": true}]});
        assert_eq!(args(two).ok(), Some(2));
        assert!(args(json!({"path": "p", "old_text": "a", "new_text": "b", "edits": []})).is_err());
        assert!(args(json!({"path": "p", "edits": []})).is_err());
        assert!(args(json!({"path": "p", "old_text": "a"})).is_err());
    }
}
