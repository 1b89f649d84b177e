//! list_directory: a directory's entries (respecting .gitignore), optionally the whole tree.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{self, blocking, check, check_root};
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, display, location, parse_args};
use crate::event::ToolKind;
use crate::provider::ToolSpec;

const LIST_MAX: usize = 1000;

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    #[serde(default)]
    recursive: bool,
}

pub struct ListDirectory;

impl Tool for ListDirectory {
    fn name(&self) -> &str {
        "list_directory"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "list_directory",
            "List a directory (respecting .gitignore). Set recursive to walk the tree.",
            json!({"type":"object","properties":{"path":{"type":"string"},"recursive":{"type":"boolean"}}}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("list_directory", args)?;
        let path = jail.resolve(a.path.as_deref().unwrap_or("."))?;
        let shown = display(&path, jail);
        let shown = if shown.is_empty() { ".".to_string() } else { shown };
        Ok(Announce {
            kind: ToolKind::Read,
            title: format!("List {shown}{}", if a.recursive { " (recursive)" } else { "" }),
            locations: vec![location(&path, None)],
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        let (args, jail) = (args.clone(), cx.jail.clone());
        Box::pin(blocking(cx.cancel, move |cancel| list_directory(&args, &jail, cancel)))
    }
}

pub fn list_directory(args: &Value, jail: &Jail, cancel: &CancellationToken) -> Result<Output, ToolError> {
    let a: Args = parse_args("list_directory", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let mut walk = walk::walker(&root);
    walk.follow_links(false);
    if !a.recursive {
        walk.max_depth(Some(1));
    }
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in walk.build().flatten() {
        check(cancel)?;
        if entry.depth() == 0 {
            check_root(&entry, &dir, shown)?;
            continue;
        }
        if entry.path().components().any(|c| c.as_os_str() == ".git") {
            continue;
        }
        if entries.len() >= LIST_MAX {
            truncated = true;
            break;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path()).display().to_string();
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        entries.push(if is_dir { format!("{rel}/") } else { rel });
    }
    let mut out = entries.join("\n");
    if truncated {
        out.push_str(&format!("\n[stopped after {LIST_MAX} entries]"));
    }
    if out.is_empty() {
        out = "(empty)".into();
    }
    Ok(Output::text(out, json!({ "path": root, "count": entries.len(), "truncated": truncated })))
}
