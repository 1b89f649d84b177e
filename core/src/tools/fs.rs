//! File tools: read_file, list_directory, write_file, edit_file.

use agent_client_protocol_schema::v1 as acp;
use serde::Deserialize;
use serde_json::{Value, json};

use super::files::Files;
use super::{Announce, Jail, Needs, Output, ToolError, display, location, parse_args};

/// Most lines returned by one read.
const READ_LINES: usize = 2000;
const LIST_MAX: usize = 1000;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct ListArgs {
    path: Option<String>,
    #[serde(default)]
    recursive: bool,
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_text: String,
    new_text: String,
}

pub fn announce_read(args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
    let a: ReadArgs = parse_args("read_file", args)?;
    let path = jail.resolve(&a.path)?;
    let start = a.offset.unwrap_or(1);
    let title = match a.limit {
        // Saturating: offset and limit come from the model (0, or usize::MAX, must not wrap).
        Some(l) => format!("Read {}:{}-{}", display(&path, jail), start, start.saturating_add(l).saturating_sub(1)),
        None if start > 1 => format!("Read {}:{}-", display(&path, jail), start),
        None => format!("Read {}", display(&path, jail)),
    };
    Ok(Announce {
        kind: acp::ToolKind::Read,
        title,
        locations: vec![location(&path, Some(start as u32))],
        needs: Needs::Nothing,
    })
}

pub async fn read_file(args: &Value, jail: &Jail, files: &Files) -> Result<Output, ToolError> {
    let a: ReadArgs = parse_args("read_file", args)?;
    let (path, text) = files.read(jail, &a.path).await?;
    let text = text.ok_or_else(|| ToolError::Failed(format!("{} does not exist", a.path)))?;
    Ok(numbered(&path, &text, a.offset, a.limit))
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

pub fn announce_list(args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
    let a: ListArgs = parse_args("list_directory", args)?;
    let path = jail.resolve(a.path.as_deref().unwrap_or("."))?;
    Ok(Announce {
        kind: acp::ToolKind::Read,
        title: format!("List {}{}", shown_dir(&path, jail), if a.recursive { " (recursive)" } else { "" }),
        locations: vec![location(&path, None)],
        needs: Needs::Nothing,
    })
}

fn shown_dir(path: &std::path::Path, jail: &Jail) -> String {
    let d = display(path, jail);
    if d.is_empty() { ".".into() } else { d }
}

pub fn list_directory(args: &Value, jail: &Jail) -> Result<Output, ToolError> {
    let a: ListArgs = parse_args("list_directory", args)?;
    let shown = a.path.as_deref().unwrap_or(".");
    let (root, dir) = jail.open_dir(shown)?;
    let mut walk = ignore::WalkBuilder::new(&root);
    walk.hidden(false).follow_links(false).require_git(false).sort_by_file_name(|a, b| a.cmp(b));
    if !a.recursive {
        walk.max_depth(Some(1));
    }
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in walk.build().flatten() {
        if entry.depth() == 0 {
            if !entry.metadata().is_ok_and(|m| super::jail::same_dir(&dir, &m)) {
                return Err(super::JailError::Swapped(shown.to_string()).into());
            }
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

pub fn announce_change(tool: &str, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
    let path = match tool {
        "write_file" => parse_args::<WriteArgs>(tool, args)?.path,
        _ => parse_args::<EditArgs>(tool, args)?.path,
    };
    let resolved = jail.resolve(&path)?;
    let verb = if tool == "write_file" { "Write" } else { "Edit" };
    Ok(Announce {
        kind: acp::ToolKind::Edit,
        title: format!("{verb} {}", display(&resolved, jail)),
        locations: vec![location(&resolved, None)],
        needs: Needs::Edit(resolved.display().to_string()),
    })
}

fn diff_output(resolved: &std::path::Path, old: Option<String>, new: String, summary: String) -> Output {
    let diff = acp::Diff::new(resolved.to_path_buf(), new).old_text(old);
    Output {
        for_model: summary.clone(),
        content: vec![acp::ToolCallContent::from(diff)],
        raw: json!({ "path": resolved, "result": summary }),
    }
}

/// A file change worked out but not yet written. The permission question shows its diff,
/// and an edit that cannot apply fails before anyone is asked.
pub struct Change {
    path: String,
    resolved: std::path::PathBuf,
    old: Option<String>,
    new: String,
    summary: String,
}

impl Change {
    /// The proposed change as diff content.
    pub fn diff(&self) -> acp::ToolCallContent {
        acp::ToolCallContent::from(acp::Diff::new(self.resolved.clone(), self.new.clone()).old_text(self.old.clone()))
    }

    /// Writes it. Callers plan again right before applying, so edits the user made while a
    /// permission question was open are not overwritten with a stale text.
    pub async fn apply(self, jail: &Jail, files: &Files) -> Result<Output, ToolError> {
        let resolved = files.write(jail, &self.path, &self.new).await?;
        Ok(diff_output(&resolved, self.old, self.new, self.summary))
    }
}

/// Plans `write_file` or `edit_file`: reads the current text and computes the new one.
pub async fn plan_change(tool: &str, args: &Value, jail: &Jail, files: &Files) -> Result<Change, ToolError> {
    if tool == "write_file" {
        let a: WriteArgs = parse_args(tool, args)?;
        let (resolved, old) = files.read(jail, &a.path).await?;
        let summary = match &old {
            Some(_) => format!("Wrote {} ({} bytes, replaced the previous content)", a.path, a.content.len()),
            None => format!("Created {} ({} bytes)", a.path, a.content.len()),
        };
        return Ok(Change { path: a.path, resolved, old, new: a.content, summary });
    }
    let a: EditArgs = parse_args(tool, args)?;
    if a.old_text.is_empty() {
        return Err(ToolError::Failed("old_text is empty: use write_file to create a file".into()));
    }
    let (resolved, old) = files.read(jail, &a.path).await?;
    let old = old.ok_or_else(|| ToolError::Failed(format!("{} does not exist", a.path)))?;
    match old.matches(&a.old_text).count() {
        0 => {
            return Err(ToolError::Failed(format!(
                "old_text was not found in {}: read the file again and copy the text exactly, whitespace included",
                a.path
            )));
        }
        1 => {}
        n => {
            return Err(ToolError::Failed(format!(
                "old_text occurs {n} times in {}: include more surrounding lines so it matches exactly once",
                a.path
            )));
        }
    }
    let new = old.replacen(&a.old_text, &a.new_text, 1);
    let summary = format!("Edited {}", a.path);
    Ok(Change { path: a.path, resolved, old: Some(old), new, summary })
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
        let jail = Jail::new(vec![root.clone()], vec![]);
        let title = |offset: usize, limit: usize| {
            announce_read(&json!({ "path": "x.txt", "offset": offset, "limit": limit }), &jail)
                .map(|a| a.title)
                .expect("announce")
        };
        assert!(title(0, 0).ends_with(":0-0"), "{}", title(0, 0));
        assert!(title(usize::MAX, usize::MAX).ends_with(&format!(":{}-{}", usize::MAX, usize::MAX - 1)));
        assert!(title(10, 5).ends_with(":10-14"));
    }
}
