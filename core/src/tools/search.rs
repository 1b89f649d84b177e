//! search: file contents matching a regular expression, with ripgrep's own crates.

use futures_util::future::BoxFuture;
use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use grep_searcher::sinks::UTF8;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{self, blocking, check, check_root, glob_matcher, skip};
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, display, location, parse_args};
use crate::event::ToolKind;
use crate::provider::ToolSpec;

const SEARCH_MAX: usize = 200;
const LINE_MAX: usize = 300;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
}

pub struct Search;

impl Tool for Search {
    fn name(&self) -> &str {
        "search"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "search",
            "Search file contents with a regular expression (respecting .gitignore). Returns path:line: text.",
            json!({"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"}},"required":["pattern"]}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("search", args)?;
        let root = jail.resolve(a.path.as_deref().unwrap_or("."))?;
        let scope = display(&root, jail);
        Ok(Announce {
            kind: ToolKind::Search,
            title: if scope.is_empty() {
                format!("Search /{}/", a.pattern)
            } else {
                format!("Search /{}/ in {scope}", a.pattern)
            },
            locations: vec![location(&root, None)],
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        let (args, jail) = (args.clone(), cx.jail.clone());
        Box::pin(blocking(cx.cancel, move |cancel| search(&args, &jail, cancel)))
    }
}

/// A line as shown: trimmed, at most `LINE_MAX` bytes (cut at a character boundary).
fn shown_line(line: &str) -> String {
    let mut text = line.trim_end().to_string();
    if text.len() > LINE_MAX {
        let mut end = LINE_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

pub fn search(args: &Value, jail: &Jail, cancel: &CancellationToken) -> Result<Output, ToolError> {
    let a: Args = parse_args("search", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let matcher = RegexMatcher::new_line_matcher(&a.pattern)
        .map_err(|e| ToolError::Failed(format!("invalid regular expression `{}`: {e}", a.pattern)))?;
    let filter = a.glob.as_deref().map(glob_matcher).transpose()?;
    let mut hits: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut searcher = Searcher::new();
    'files: for entry in walk::walker(&root).build().flatten() {
        check(cancel)?;
        if entry.depth() == 0 {
            check_root(&entry, &dir, shown)?;
        }
        if skip(&entry) {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path()).to_path_buf();
        if filter.as_ref().is_some_and(|g| !g.is_match(&rel)) {
            continue;
        }
        // Read through the jail: files that resolve outside it (symlinks, or swapped for
        // one meanwhile) are skipped, not read.
        let Ok((_, file)) = jail.open_read(&entry.path().display().to_string()) else {
            continue;
        };
        let mut file_hits = Vec::new();
        let _ = searcher.search_file(
            &matcher,
            &file,
            UTF8(|line_no, line| {
                file_hits.push(format!("{}:{line_no}: {}", rel.display(), shown_line(line)));
                Ok(file_hits.len() < SEARCH_MAX && !cancel.is_cancelled())
            }),
        );
        for h in file_hits {
            if hits.len() >= SEARCH_MAX {
                truncated = true;
                break 'files;
            }
            hits.push(h);
        }
    }
    let mut out = if hits.is_empty() { "no matches".to_string() } else { hits.join("\n") };
    if truncated {
        out.push_str(&format!("\n[stopped after {SEARCH_MAX} matches: narrow the pattern or the path]"));
    }
    Ok(Output::text(out, json!({ "matches": hits.len(), "truncated": truncated })))
}
