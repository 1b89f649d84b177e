//! edit_file: replace one exact occurrence of a text in a file.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::change::{self, Change};
use super::{Announce, Jail, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::ToolContent;
use crate::provider::ToolSpec;

#[derive(Deserialize)]
struct Args {
    path: String,
    old_text: String,
    new_text: String,
}

pub struct EditFile;

impl EditFile {
    async fn plan(args: &Value, cx: &ToolContext<'_>) -> Result<Change, ToolError> {
        let a: Args = parse_args("edit_file", args)?;
        if a.old_text.is_empty() {
            return Err(ToolError::Failed("old_text is empty: use write_file to create a file".into()));
        }
        let (resolved, old) = cx.files().read(cx.jail, &a.path).await?;
        let old = old.ok_or_else(|| ToolError::Failed(format!("{} does not exist", a.path)))?;
        // One pass over the file (SIMD, not `str::matches`' byte-wise search): the first match,
        // then the others after it, counted as `str::matches` counts them (not overlapping).
        let finder = memchr::memmem::Finder::new(a.old_text.as_bytes());
        let at = finder.find(old.as_bytes());
        let count = at.map_or(0, |at| 1 + finder.find_iter(&old.as_bytes()[at + a.old_text.len()..]).count());
        let at = match (count, at) {
            (1, Some(at)) => at,
            (0, _) => {
                return Err(ToolError::Failed(format!(
                    "old_text was not found in {}: read the file again and copy the text exactly, whitespace included",
                    a.path
                )));
            }
            (n, _) => {
                return Err(ToolError::Failed(format!(
                    "old_text occurs {n} times in {}: include more surrounding lines so it matches exactly once",
                    a.path
                )));
            }
        };
        let mut new = String::with_capacity(old.len() - a.old_text.len() + a.new_text.len());
        new.push_str(&old[..at]);
        new.push_str(&a.new_text);
        new.push_str(&old[at + a.old_text.len()..]);
        let summary = format!("Edited {}", a.path);
        Ok(Change { path: a.path, resolved, old: Some(old), new, summary })
    }
}

impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "edit_file",
            "Replace old_text with new_text in a file. old_text must occur exactly once; include surrounding lines to make it unique.",
            json!({"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}},"required":["path","old_text","new_text"]}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        change::announce("Edit", &parse_args::<Args>("edit_file", args)?.path, jail)
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
