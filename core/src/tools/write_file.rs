//! write_file: create or overwrite a file.

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
    content: String,
}

pub struct WriteFile;

impl WriteFile {
    async fn plan(args: &Value, cx: &ToolContext<'_>) -> Result<Change, ToolError> {
        let a: Args = parse_args("write_file", args)?;
        let (resolved, old) = cx.files().read(cx.jail, &a.path).await?;
        let summary = match &old {
            Some(_) => format!("Wrote {} ({} bytes, replaced the previous content)", a.path, a.content.len()),
            None => format!("Created {} ({} bytes)", a.path, a.content.len()),
        };
        Ok(Change { path: a.path, resolved, old, new: a.content, summary })
    }
}

impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "write_file",
            "Create or overwrite a file with the given content.",
            json!({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        change::announce("Write", &parse_args::<Args>("write_file", args)?.path, jail)
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
