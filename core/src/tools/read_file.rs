//! read_file: a text file's lines, numbered, from the disk or the editor's buffer.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, display, image, location, parse_args};
use crate::event::{ToolContent, ToolKind};
use crate::provider::ToolSpec;

/// Most lines returned by one read.
const READ_LINES: usize = 2000;
/// Most bytes one read returns, line numbers included (the rest is read on by offset).
const READ_BYTES: usize = 40 * 1024;
/// Longest line shown whole; a longer one keeps its head and tail.
const LINE_CHARS: usize = 2000;

#[derive(Deserialize)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

pub struct ReadFile;

impl Tool for ReadFile {
    fn reads_only(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        "read_file"
    }

    fn pages_itself(&self) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "read_file",
            "Read a text file. Lines are numbered. One call returns at most 2000 lines or about 40 KB; use offset/limit \
             (1-based lines) to read on. Lines longer than 2000 characters are shortened (head and tail kept). \
             An image (PNG, JPEG, GIF, WebP; at most 5 MB) is returned as the image itself.",
            json!({"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}},"required":["path"]}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("read_file", args)?;
        // A saved tool output lies outside the workspace: `run` checks it is one (else the
        // jail refuses the path there, as here).
        let path = match jail.resolve(&a.path) {
            Ok(path) => path,
            Err(_) if super::cap::may_be_saved_output(&a.path) => std::path::PathBuf::from(&a.path),
            Err(e) => return Err(e.into()),
        };
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
            // A long tool output this session saved (its marker names the file): outside the
            // workspace, Corvid's own, read as it is.
            if let Some(saved) = super::cap::is_saved_output(&a.path, cx.outputs) {
                let text = std::fs::read(&saved).map_err(|e| ToolError::Failed(format!("{}: {e}", a.path)))?;
                return Ok(numbered(&saved, &String::from_utf8_lossy(&text), a.offset, a.limit));
            }
            if let Some(output) = image(&a.path, cx).await? {
                return Ok(output);
            }
            let (path, text) = cx.files().read(cx.jail, &a.path).await?;
            let text = text.ok_or_else(|| ToolError::Failed(format!("{} does not exist", a.path)))?;
            Ok(numbered(&path, &text, a.offset, a.limit))
        })
    }
}

/// The file as an image for the model, when its first bytes say it is one (PNG, JPEG, GIF,
/// WebP). `None`: it is read as text, from the disk or the editor; a file that cannot be opened
/// is left to that read too, which says why. Images come from the disk alone: an editor's
/// buffers are text.
async fn image(path: &str, cx: &ToolContext<'_>) -> Result<Option<Output>, ToolError> {
    use std::io::Read;
    let (jail, path, uploads) = (cx.jail.clone(), path.to_string(), cx.uploads.to_path_buf());
    super::walk::blocking(cx.cancel, move |_| {
        let Ok((resolved, mut file)) = jail.open_read(&path) else { return Ok(None) };
        let mut bytes = Vec::new();
        if (&mut file).take(12).read_to_end(&mut bytes).is_err() {
            return Ok(None);
        }
        let Some(mime) = image::sniff(&bytes) else { return Ok(None) };
        let shown = display(&resolved, &jail);
        let failed = |why: String| ToolError::Failed(format!("{shown} is an image ({mime}): {why}"));
        // One byte past the cap tells a file that grew since its size was read.
        let room = (image::MAX_BYTES + 1 - bytes.len()) as u64;
        file.take(room).read_to_end(&mut bytes).map_err(|e| failed(e.to_string()))?;
        let kept = image::keep(&uploads, &bytes, mime).map_err(|e| failed(e.to_string()))?;
        let for_model = format!("{shown} is an image ({mime}, {} bytes).", bytes.len());
        let mut content = vec![ToolContent::Text(for_model.clone())];
        content.extend(image::card(&bytes, mime));
        let raw = json!({ "path": resolved, "mimeType": mime, "bytes": bytes.len() });
        Ok(Some(Output { for_model, content, raw, ok: true, images: vec![kept] }))
    })
    .await
}

/// The requested lines, numbered, with a note on how to read on when more remain.
fn numbered(path: &std::path::Path, text: &str, offset: Option<usize>, limit: Option<usize>) -> Output {
    let lines: Vec<&str> = text.lines().collect();
    let start = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(READ_LINES).min(READ_LINES);
    let end = (start - 1 + limit).min(lines.len());
    let mut out = String::new();
    let mut end = end;
    for (i, line) in lines.iter().enumerate().take(end).skip(start - 1) {
        let line = shortened(line);
        // The byte cap ends a read at a line, never inside one (at least one line is shown).
        if i + 1 > start && out.len() + line.len() + 8 > READ_BYTES {
            end = i;
            break;
        }
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

/// A line as read_file shows it: whole up to [`LINE_CHARS`] characters, else its head and
/// tail around a note of how much was left out.
fn shortened(line: &str) -> std::borrow::Cow<'_, str> {
    if line.len() <= LINE_CHARS {
        return line.into();
    }
    let chars = line.chars().count();
    if chars <= LINE_CHARS {
        return line.into();
    }
    let half = LINE_CHARS / 2;
    let head: String = line.chars().take(half).collect();
    let tail: String = line.chars().skip(chars - half).collect();
    format!(
        "{head} [… {} characters of this {chars}-character line left out; search or run_command (cut -c) to read them …] {tail}",
        chars - 2 * half
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_are_capped_by_bytes_and_long_lines_keep_head_and_tail() {
        let path = std::path::Path::new("/p/f.txt");
        let one_line = format!("BEGIN{}END", "x".repeat(2_000_000));
        let out = numbered(path, &one_line, None, None).for_model;
        assert!(out.len() < 3000, "{}", out.len());
        assert!(out.contains("BEGIN") && out.contains("END\n") && out.contains("1998008 characters"), "{out}");
        let many: String = (0..5000).map(|i| format!("{i:0>100}\n")).collect();
        let out = numbered(path, &many, None, None).for_model;
        assert!(out.len() <= READ_BYTES + 200, "{}", out.len());
        let next: usize =
            out.split("offset=").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).expect("offset");
        let shown = out.lines().filter(|l| l.contains('\t')).count();
        assert_eq!(next, shown + 1, "reading on starts after the last line shown");
        let on = numbered(path, &many, Some(next), None).for_model;
        assert!(on.starts_with(&format!("{next:>6}\t")), "{}", &on[..40]);
    }

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
