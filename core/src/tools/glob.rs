//! glob: files whose path matches a pattern (respecting .gitignore).

use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use futures_util::future::BoxFuture;
use ignore::WalkState;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{self, blocking, check, glob_matcher, skip};
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
    fn reads_only(&self) -> bool {
        true
    }

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

/// A parallel walk (the paths it finds come in no order), keeping the [`GLOB_MAX`] smallest
/// matching paths: the result is the first matches in sorted order, as a walk in order would
/// give, in bounded memory however many files match.
pub fn glob(args: &Value, jail: &Jail, cancel: &CancellationToken) -> Result<Output, ToolError> {
    let a: Args = parse_args("glob", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let matcher = glob_matcher(&a.pattern)?;
    // The kept paths (the largest on top, so it is the one to drop) and how many matched.
    let kept = Mutex::new((BinaryHeap::<PathBuf>::new(), 0usize));
    let refused = Mutex::new(None);
    let walker = walk::walker(&root).threads(walk::threads()).build_parallel();
    walk::confined(&dir, &root, || {
        walker.run(|| {
            Box::new(|entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let entry = match walk::checked(entry, &dir, shown) {
                    Ok(Some(entry)) => entry,
                    Ok(None) => return WalkState::Continue,
                    Err(e) => {
                        *refused.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                        return WalkState::Quit;
                    }
                };
                if skip(&entry) {
                    return WalkState::Continue;
                }
                let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                if matcher.is_match(rel) {
                    let (heap, total) = &mut *kept.lock().unwrap_or_else(PoisonError::into_inner);
                    *total += 1;
                    if heap.len() < GLOB_MAX {
                        heap.push(rel.to_path_buf());
                    } else if heap.peek().is_some_and(|largest| rel < largest.as_path()) {
                        heap.pop();
                        heap.push(rel.to_path_buf());
                    }
                }
                WalkState::Continue
            })
        });
        Ok(())
    })?;
    check(cancel)?;
    if let Some(e) = refused.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(e);
    }
    let (heap, total) = kept.into_inner().unwrap_or_else(PoisonError::into_inner);
    let found: Vec<String> = heap.into_sorted_vec().iter().map(|p| p.display().to_string()).collect();
    let truncated = total > GLOB_MAX;
    let mut out = if found.is_empty() { "no files match".to_string() } else { found.join("\n") };
    if truncated {
        out.push_str(&format!("\n[stopped after {GLOB_MAX} files]"));
    }
    Ok(Output::text(out, json!({ "count": found.len(), "truncated": truncated })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parallel walk finds paths in any order; what the model gets is the first matches in
    /// sorted order, cut at GLOB_MAX, the same on every call.
    #[test]
    fn over_the_cap_the_first_paths_in_order_are_kept() {
        let base = std::env::temp_dir().join(format!("corvid-glob-{}", uuid::Uuid::new_v4()));
        for d in 0..11 {
            let dir = base.join(format!("d{d:02}"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            for f in 0..100 {
                std::fs::write(dir.join(format!("f{f:03}.rs")), "").expect("write");
            }
            std::fs::write(dir.join("skip.txt"), "").expect("write");
        }
        let root = std::fs::canonicalize(&base).expect("canon");
        let jail = Jail::new(crate::roots::Roots::new(root, Vec::new()), vec![]);
        let run = || glob(&json!({ "pattern": "**/*.rs" }), &jail, &CancellationToken::new()).expect("glob");
        let out = run();
        let lines: Vec<&str> = out.for_model.lines().collect();
        assert_eq!(lines.len(), GLOB_MAX + 1, "1,000 paths and the note");
        assert_eq!(lines[0], "d00/f000.rs");
        assert_eq!(lines[GLOB_MAX - 1], "d09/f099.rs");
        assert_eq!(lines[GLOB_MAX], format!("[stopped after {GLOB_MAX} files]"));
        assert_eq!(out.raw, json!({ "count": GLOB_MAX, "truncated": true }));
        assert_eq!(run().for_model, out.for_model, "the same every time");
        std::fs::remove_dir_all(&base).expect("rm");
    }
}
