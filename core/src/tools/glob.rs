//! glob: files whose path matches a pattern (respecting .gitignore).

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{self, blocking, check, check_root, glob_matcher, skip};
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, location, parse_args};
use crate::event::ToolKind;
use crate::provider::ToolSpec;

const GLOB_MAX: usize = 1000;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
}

pub struct Glob;

impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "glob",
            "Find files whose path matches a glob such as src/**/*.rs (respecting .gitignore).",
            json!({"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("glob", args)?;
        let root = jail.resolve(a.path.as_deref().unwrap_or("."))?;
        Ok(Announce {
            kind: ToolKind::Search,
            title: format!("Find files matching {}", a.pattern),
            locations: vec![location(&root, None)],
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        let (args, jail) = (args.clone(), cx.jail.clone());
        Box::pin(blocking(cx.cancel, move |cancel| glob(&args, &jail, cancel)))
    }
}

pub fn glob(args: &Value, jail: &Jail, cancel: &CancellationToken) -> Result<Output, ToolError> {
    let a: Args = parse_args("glob", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let matcher = glob_matcher(&a.pattern)?;
    let mut found = Vec::new();
    let mut truncated = false;
    for entry in walk::walker(&root).build().flatten() {
        check(cancel)?;
        if entry.depth() == 0 {
            check_root(&entry, &dir, shown)?;
        }
        if skip(&entry) {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        if matcher.is_match(rel) {
            if found.len() >= GLOB_MAX {
                truncated = true;
                break;
            }
            found.push(rel.display().to_string());
        }
    }
    let mut out = if found.is_empty() { "no files match".to_string() } else { found.join("\n") };
    if truncated {
        out.push_str(&format!("\n[stopped after {GLOB_MAX} files]"));
    }
    Ok(Output::text(out, json!({ "count": found.len(), "truncated": truncated })))
}
