//! glob and search: ripgrep's own crates, so .gitignore is honoured as users expect.

use agent_client_protocol_schema::v1 as acp;
use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use grep_searcher::sinks::UTF8;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Jail, Needs, Output, ToolError, display, location, parse_args};

const GLOB_MAX: usize = 1000;
const SEARCH_MAX: usize = 200;
const LINE_MAX: usize = 300;

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
    path: Option<String>,
}

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
}

/// Refuses a walk whose root (the depth-0 entry) is not the directory opened through the jail.
fn check_root(entry: &ignore::DirEntry, dir: &std::fs::File, shown: &str) -> Result<(), ToolError> {
    if entry.metadata().is_ok_and(|m| super::jail::same_dir(dir, &m)) {
        Ok(())
    } else {
        Err(super::JailError::Swapped(shown.to_string()).into())
    }
}

fn walker(root: &std::path::Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root).hidden(false).require_git(false).sort_by_file_name(|a, b| a.cmp(b)).build()
}

fn skip(entry: &ignore::DirEntry) -> bool {
    !entry.file_type().is_some_and(|t| t.is_file()) || entry.path().components().any(|c| c.as_os_str() == ".git")
}

fn glob_matcher(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::Failed(format!("invalid glob `{pattern}`: {e}")))
}

pub fn announce_glob(args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
    let a: GlobArgs = parse_args("glob", args)?;
    let root = jail.resolve(a.path.as_deref().unwrap_or("."))?;
    Ok(Announce {
        kind: acp::ToolKind::Search,
        title: format!("Find files matching {}", a.pattern),
        locations: vec![location(&root, None)],
        needs: Needs::Nothing,
    })
}

pub fn glob(args: &Value, jail: &Jail) -> Result<Output, ToolError> {
    let a: GlobArgs = parse_args("glob", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let matcher = glob_matcher(&a.pattern)?;
    let mut found = Vec::new();
    let mut truncated = false;
    for entry in walker(&root).flatten() {
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

pub fn announce_search(args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
    let a: SearchArgs = parse_args("search", args)?;
    let root = jail.resolve(a.path.as_deref().unwrap_or("."))?;
    let scope = display(&root, jail);
    Ok(Announce {
        kind: acp::ToolKind::Search,
        title: if scope.is_empty() {
            format!("Search /{}/", a.pattern)
        } else {
            format!("Search /{}/ in {scope}", a.pattern)
        },
        locations: vec![location(&root, None)],
        needs: Needs::Nothing,
    })
}

pub fn search(args: &Value, jail: &Jail) -> Result<Output, ToolError> {
    let a: SearchArgs = parse_args("search", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let matcher = RegexMatcher::new_line_matcher(&a.pattern)
        .map_err(|e| ToolError::Failed(format!("invalid regular expression `{}`: {e}", a.pattern)))?;
    let filter = a.glob.as_deref().map(glob_matcher).transpose()?;
    let mut hits: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut searcher = Searcher::new();
    'files: for entry in walker(&root).flatten() {
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
                let mut text = line.trim_end().to_string();
                if text.len() > LINE_MAX {
                    let mut end = LINE_MAX;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                    text.push('…');
                }
                file_hits.push(format!("{}:{line_no}: {text}", rel.display()));
                Ok(file_hits.len() < SEARCH_MAX)
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
