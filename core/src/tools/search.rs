//! search: file contents matching a regular expression, with ripgrep's own crates.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use futures_util::future::BoxFuture;
use grep_regex::RegexMatcher;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::walk::{self, blocking, check, glob_matcher, skip};
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
    fn reads_only(&self) -> bool {
        true
    }

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

/// Files handed to a worker at once: one channel message per file cost more in thread
/// wake-ups than searching the file did.
const BATCH: usize = 64;

/// One file's matches, shown as `path:line: text`, at most [`SEARCH_MAX`].
fn search_file(searcher: &mut Searcher, matcher: &RegexMatcher, file: &std::fs::File, rel: &Path) -> Vec<String> {
    let mut hits = Vec::new();
    let _ = searcher.search_file(
        matcher,
        file,
        UTF8(|line_no, line| {
            hits.push(format!("{}:{line_no}: {}", rel.display(), shown_line(line)));
            Ok(hits.len() < SEARCH_MAX)
        }),
    );
    hits
}

/// The walk finds files in sorted order and numbers them; workers search them in parallel;
/// the matches are put back in walk order, so the result is what a search of one file after
/// the other would give (the first [`SEARCH_MAX`] matches), and everything stops once that
/// many are in hand.
pub fn search(args: &Value, jail: &Jail, cancel: &CancellationToken) -> Result<Output, ToolError> {
    let a: Args = parse_args("search", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let matcher = RegexMatcher::new_line_matcher(&a.pattern)
        .map_err(|e| ToolError::Failed(format!("invalid regular expression `{}`: {e}", a.pattern)))?;
    let filter = a.glob.as_deref().map(glob_matcher).transpose()?;
    let stop = AtomicBool::new(false);
    let stopped = || stop.load(Ordering::Relaxed) || cancel.is_cancelled();
    let (file_tx, file_rx) = mpsc::sync_channel::<Vec<(usize, PathBuf)>>(8);
    let file_rx = Mutex::new(file_rx);
    let (hit_tx, hit_rx) = mpsc::channel::<Vec<(usize, Vec<String>)>>();
    let (hits, truncated, walked) = std::thread::scope(|scope| {
        // Files searched at once; the walk stays on its own thread, in order.
        for _ in 0..walk::threads() {
            let (hit_tx, file_rx, matcher, dir, root) = (hit_tx.clone(), &file_rx, &matcher, &dir, &root);
            let stopped = &stopped;
            scope.spawn(move || {
                // Binary files are skipped at their first NUL byte, as ripgrep does.
                let mut searcher = SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).build();
                loop {
                    let next = file_rx.lock().map_or(None, |rx| rx.recv().ok());
                    let Some(batch) = next else { break };
                    let mut results = Vec::with_capacity(batch.len());
                    for (n, rel) in batch {
                        // A stop still answers every number, so the collector never waits on a gap.
                        let found = match (stopped(), jail.open_found(dir, root, &rel)) {
                            (false, Ok(file)) => search_file(&mut searcher, matcher, &file, &rel),
                            // Refused (outside the jail, or swapped for a link meanwhile) or gone: skipped.
                            _ => Vec::new(),
                        };
                        results.push((n, found));
                    }
                    if hit_tx.send(results).is_err() {
                        break;
                    }
                }
            });
        }
        drop(hit_tx);
        let walker = walk::walker(&root).build();
        let walk = scope.spawn(|| -> Result<(), ToolError> {
            // Owned here, so the workers' queue closes when the walk ends, however it ends.
            let file_tx = file_tx;
            // Only the walk: the workers open what it finds in one jailed `openat2` each.
            walk::confine_thread(&dir, &root)?;
            let mut n = 0;
            let mut batch = Vec::with_capacity(BATCH);
            for entry in walker {
                if stopped() {
                    break;
                }
                let Some(entry) = walk::checked(entry, &dir, shown)? else { continue };
                if skip(&entry) {
                    continue;
                }
                let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path()).to_path_buf();
                if filter.as_ref().is_some_and(|g| !g.is_match(&rel)) {
                    continue;
                }
                batch.push((n, rel));
                n += 1;
                if batch.len() == BATCH && file_tx.send(std::mem::take(&mut batch)).is_err() {
                    break;
                }
            }
            if !batch.is_empty() {
                let _ = file_tx.send(batch);
            }
            Ok(())
        });
        // Results in walk order: those that arrive early wait in `ahead` for the gap to fill.
        let mut hits: Vec<String> = Vec::new();
        let mut truncated = false;
        let mut ahead = BTreeMap::new();
        let mut next = 0;
        for (n, found) in hit_rx.iter().flatten() {
            ahead.insert(n, found);
            while let Some(found) = ahead.remove(&next) {
                next += 1;
                for h in found {
                    if hits.len() >= SEARCH_MAX {
                        truncated = true;
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    hits.push(h);
                }
            }
        }
        (hits, truncated, walk.join())
    });
    check(cancel)?;
    walked.unwrap_or_else(|_| Err(ToolError::Failed("the search crashed".into())))?;
    let mut out = if hits.is_empty() { "no matches".to_string() } else { hits.join("\n") };
    if truncated {
        out.push_str(&format!("\n[stopped after {SEARCH_MAX} matches: narrow the pattern or the path]"));
    }
    Ok(Output::text(out, json!({ "matches": hits.len(), "truncated": truncated })))
}
