//! read_file: a text file's lines, numbered, from the disk or the editor's buffer.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, display, location, parse_args};
use crate::event::ToolKind;
use crate::provider::ToolSpec;

/// Most lines returned by one read.
const READ_LINES: usize = 2000;

#[derive(Deserialize)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

pub struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "read_file",
            "Read a text file. Lines are numbered. Use offset/limit (1-based lines) for large files.",
            json!({"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}},"required":["path"]}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("read_file", args)?;
        let path = jail.resolve(&a.path)?;
        let start = a.offset.unwrap_or(1);
        let title = match a.limit {
            // Saturating: offset and limit come from the model (0, or usize::MAX, must not wrap).
            Some(l) => {
                format!("Read {}:{}-{}", display(&path, jail), start, start.saturating_add(l).saturating_sub(1))
            }
            None if start > 1 => format!("Read {}:{}-", display(&path, jail), start),
            None => format!("Read {}", display(&path, jail)),
        };
        Ok(Announce {
            kind: ToolKind::Read,
            title,
            locations: vec![location(&path, Some(start as u32))],
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let a: Args = parse_args("read_file", args)?;
            let (path, text) = cx.files().read(cx.jail, &a.path).await?;
            let text = text.ok_or_else(|| ToolError::Failed(format!("{} does not exist", a.path)))?;
            Ok(numbered(&path, &text, a.offset, a.limit))
        })
    }
}

/// The requested lines, numbered, with a note on how to read on when more remain.
fn numbered(path: &std::path::Path, text: &str, offset: Option<usize>, limit: Option<usize>) -> Output {
    let lines: Vec<&str> = text.lines().collect();
    let start = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(READ_LINES).min(READ_LINES);
    let end = (start - 1 + limit).min(lines.len());
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate().take(end).skip(start - 1) {
        out.push_str(&format!("{:>6}\t{line}\n", i + 1));
    }
    if end < lines.len() {
        out.push_str(&format!(
            "\n[{} more lines not shown: call read_file with offset={} to read on]\n",
            lines.len() - end,
            end + 1
        ));
    }
    if start > lines.len() && !lines.is_empty() {
        out = format!("[the file has only {} lines]\n", lines.len());
    }
    let raw = json!({ "path": path, "lines": lines.len(), "shown": [start, end] });
    Output::text(out, raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Offsets and limits come from the model: zero or huge ones must not wrap the title's range
    /// (found reviewing the fuzz work: `start + limit - 1` underflowed for 0/0).
    #[test]
    fn read_titles_never_wrap() {
        let root = std::env::temp_dir();
        let jail = Jail::new(crate::roots::Roots::new(root.clone(), Vec::new()), vec![]);
        let title = |offset: usize, limit: usize| {
            ReadFile
                .announce(&json!({ "path": "x.txt", "offset": offset, "limit": limit }), &jail)
                .map(|a| a.title)
                .expect("announce")
        };
        assert!(title(0, 0).ends_with(":0-0"), "{}", title(0, 0));
        assert!(title(usize::MAX, usize::MAX).ends_with(&format!(":{}-{}", usize::MAX, usize::MAX - 1)));
        assert!(title(10, 5).ends_with(":10-14"));
    }
}
