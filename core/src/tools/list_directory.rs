//! list_directory: a directory's entries (respecting .gitignore), optionally the whole tree.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{self, blocking, check};
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
    fn reads_only(&self) -> bool {
        true
    }

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
    let mut walker = walk::walker(&root);
    walker.follow_links(false);
    if !a.recursive {
        walker.max_depth(Some(1));
    }
    let walker = walker.build();
    let (entries, truncated) = walk::confined(&dir, &root, || {
        let mut entries = Vec::new();
        for entry in walker {
            check(cancel)?;
            let Some(entry) = walk::checked(entry, &dir, shown)? else { continue };
            if entry.depth() == 0 || entry.path().components().any(|c| c.as_os_str() == ".git") {
                continue;
            }
            if entries.len() >= LIST_MAX {
                return Ok((entries, true));
            }
            let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path()).display().to_string();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            entries.push(if is_dir { format!("{rel}/") } else { rel });
        }
        Ok((entries, false))
    })?;
    let mut out = entries.join("\n");
    if truncated {
        out.push_str(&format!("\n[stopped after {LIST_MAX} entries]"));
    }
    if out.is_empty() {
        out = "(empty)".into();
    }
    Ok(Output::text(out, json!({ "path": root, "count": entries.len(), "truncated": truncated })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk held beneath the directory it lists still reads the ignore rules above it: the
    /// parents' `.gitignore` (one outside the session's folder too) and the repository's
    /// `info/exclude`.
    #[test]
    fn ignore_rules_above_the_listed_directory_still_apply() {
        let base = std::env::temp_dir().join(format!("corvid-list-{}", uuid::Uuid::new_v4()));
        for d in ["repo/.git/info", "repo/app/src/gen", "repo/app/src/scratch", "repo/app/src/kept"] {
            std::fs::create_dir_all(base.join(d)).expect("mkdir");
        }
        let base = std::fs::canonicalize(&base).expect("canonical");
        for (file, text) in [
            ("repo/.gitignore", "*.log\n"),
            ("repo/.git/info/exclude", "scratch/\n"),
            ("repo/app/.gitignore", "gen/\n"),
            ("repo/app/src/main.rs", ""),
            ("repo/app/src/debug.log", ""),
            ("repo/app/src/gen/out.rs", ""),
            ("repo/app/src/scratch/try.rs", ""),
            ("repo/app/src/kept/lib.rs", ""),
        ] {
            std::fs::write(base.join(file), text).expect("write");
        }
        let jail = Jail::new(crate::roots::Roots::new(base.join("repo/app"), Vec::new()), vec![]);
        let out = list_directory(&json!({ "path": "src", "recursive": true }), &jail, &CancellationToken::new())
            .expect("listed");
        assert_eq!(out.for_model, "kept/\nkept/lib.rs\nmain.rs");
        std::fs::remove_dir_all(&base).expect("rm");
    }
}
