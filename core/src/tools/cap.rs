//! Tool results capped for the model, nothing lost: a result longer than [`MODEL_CAP`] keeps
//! its head (where a compiler prints its first error) and its tail (where a test run prints its
//! summary) with a marker saying how much was left out, and the whole text is saved to a file
//! the model can page through with `read_file` (the marker names it). The client's card and
//! terminal still get the whole output; only what the model reads is cut.

use std::path::{Path, PathBuf};

/// Most bytes of one tool result the model reads (~8k tokens).
pub const MODEL_CAP: usize = 32 * 1024;

/// `text` cut to about `max` bytes: its head and its tail (cut at line ends where one is near)
/// around a marker that says what was left out and, with `saved`, where the whole text is.
pub fn head_and_tail(text: &str, max: usize, saved: Option<&Path>) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let head_len = floor_line(text, max / 2);
    let tail_start = ceil_line(text, text.len() - max / 2);
    let (head, tail) = (&text[..head_len], &text[tail_start..]);
    let left_out = &text[head_len..tail_start];
    let lines = left_out.matches('\n').count();
    let first_line = text[..head_len].matches('\n').count() + 1;
    let mut marker = format!("\n[… {} bytes ({lines} lines) left out here …", left_out.len());
    if let Some(path) = saved {
        marker.push_str(&format!(
            " The whole output is saved in {}: read_file it with offset={first_line} to read what was left out.",
            path.display()
        ));
    }
    marker.push_str("]\n");
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len());
    out.push_str(head);
    out.push_str(&marker);
    out.push_str(tail);
    out
}

/// The end of the head: a line end within the last eighth before `at`, else `at` (on a
/// character boundary).
fn floor_line(text: &str, at: usize) -> usize {
    let at = char_floor(text, at);
    match text[..at].rfind('\n') {
        Some(nl) if nl + 1 >= at - at / 8 => nl + 1,
        _ => at,
    }
}

/// The start of the tail: just past a line end within the first eighth after `at`, else `at`.
fn ceil_line(text: &str, at: usize) -> usize {
    let at = char_floor(text, at);
    let window = (text.len() - at) / 8;
    match text[at..].find('\n') {
        Some(nl) if nl <= window => at + nl + 1,
        _ => at,
    }
}

fn char_floor(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Where a session's whole tool outputs are saved: `<data dir>/outputs/<session id>/`.
pub fn outputs_dir(data_dir: &Path, session_id: &str) -> PathBuf {
    // Session ids are ours (UUIDs) or a client's; only a plain name becomes a folder.
    let name: String =
        session_id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    data_dir.join("outputs").join(name)
}

/// What the model reads of a tool's result: the result itself when short, else its head and
/// tail, the whole of it saved as `<outputs>/<call id>.txt` (said in the marker when saved).
pub fn for_model(text: String, outputs: &Path, call_id: &str) -> String {
    if text.len() <= MODEL_CAP {
        return text;
    }
    let path = outputs.join(format!("{call_id}.txt"));
    let saved = std::fs::create_dir_all(outputs).and_then(|()| std::fs::write(&path, &text));
    match saved {
        Ok(()) => head_and_tail(&text, MODEL_CAP, Some(&path)),
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "could not save a long tool output");
            head_and_tail(&text, MODEL_CAP, None)
        }
    }
}

/// Whether `path` could name a saved output (before the session's folder is known): an
/// absolute path to a `.txt` file in a folder of an `outputs` folder.
pub fn may_be_saved_output(path: &str) -> bool {
    let path = Path::new(path);
    path.is_absolute()
        && path.extension().is_some_and(|e| e == "txt")
        && path.parent().and_then(Path::parent).and_then(Path::file_name).is_some_and(|n| n == "outputs")
}

/// Whether `path` (as the model wrote it) names a saved output of this session: under
/// `outputs`, no `..`, a plain file (not a link). `read_file` reads those beside the jail.
pub fn is_saved_output(path: &str, outputs: &Path) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return None;
    }
    let rest = path.strip_prefix(outputs).ok()?;
    let meta = std::fs::symlink_metadata(path).ok()?;
    (rest.components().count() == 1 && meta.file_type().is_file()).then(|| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_results_pass_long_ones_keep_head_and_tail() {
        assert_eq!(head_and_tail("short", 100, None), "short");
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let cut = head_and_tail(&text, 4096, Some(Path::new("/data/outputs/s/t1-1.txt")));
        assert!(cut.len() < 4096 + 300, "{}", cut.len());
        assert!(cut.starts_with("line 0\nline 1\n") && cut.ends_with("line 9999\n"));
        assert!(cut.contains("lines) left out here") && cut.contains("/data/outputs/s/t1-1.txt"), "{cut}");
        // The marker's offset is the first line left out.
        let offset: usize =
            cut.split("offset=").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).expect("offset");
        let head_lines = cut.split("\n[…").next().map(|h| h.lines().count()).expect("head");
        assert_eq!(offset, head_lines + 1);
        // One long line: cut by bytes, on character boundaries.
        let line = "é".repeat(100_000);
        let cut = head_and_tail(&line, 1000, None);
        assert!(cut.starts_with('é') && cut.ends_with('é') && cut.len() < 1200);
    }

    #[test]
    fn long_results_are_saved_whole_and_found_again_by_read_file() {
        let dir = std::env::temp_dir().join(format!("corvid-cap-{}", uuid::Uuid::new_v4()));
        let outputs = outputs_dir(&dir, "sess/../x");
        assert!(outputs.ends_with("sess____x"));
        let text = "x".repeat(MODEL_CAP * 3);
        let read = for_model(text.clone(), &outputs, "t1-1");
        assert!(read.len() < MODEL_CAP + 400);
        let saved = outputs.join("t1-1.txt");
        assert_eq!(std::fs::read_to_string(&saved).ok().as_deref(), Some(text.as_str()));
        assert!(is_saved_output(&saved.to_string_lossy(), &outputs).is_some());
        assert!(is_saved_output(&format!("{}/../t1-1.txt", outputs.display()), &outputs).is_none());
        assert!(is_saved_output("t1-1.txt", &outputs).is_none());
        assert!(may_be_saved_output(&saved.to_string_lossy()) && !may_be_saved_output("/etc/passwd"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
