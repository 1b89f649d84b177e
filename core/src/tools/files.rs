//! Where the file tools get and put text: the disk, or the client's editor through
//! `fs/read_text_file` / `fs/write_text_file` when the client advertises them (so the model
//! sees unsaved buffers and its edits land in the editor, with the editor's undo).
//!
//! Either way the path is resolved through the jail first: the client is only ever asked about
//! canonical paths inside the session roots. Either way the turn's cancel ends the wait.

use std::io::Read;
use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::walk::blocking;
use super::{Jail, JailError, ToolError};
use crate::editor::{EditorClient, EditorError};

/// Most bytes of a file read from disk at all.
pub const READ_BYTES: u64 = 4 * 1024 * 1024;

/// File access for one tool call.
pub struct Files<'a> {
    editor: &'a EditorClient,
    cancel: &'a CancellationToken,
}

impl<'a> Files<'a> {
    pub fn new(editor: &'a EditorClient, cancel: &'a CancellationToken) -> Self {
        Self { editor, cancel }
    }

    /// The text of `path`, or `None` if it does not exist. Errors name the path.
    pub async fn read(&self, jail: &Jail, path: &str) -> Result<(PathBuf, Option<String>), ToolError> {
        if self.editor.features().read_text_file {
            let resolved = jail.resolve(path)?;
            // A file that is not on disk is not asked for: the editor's answer would be an
            // error, which some clients show the user (once for the diff of a new file, once
            // more when it is written).
            if !resolved.exists() {
                return Ok((resolved, None));
            }
            return match self.editor.read_text_file(resolved.clone()).await {
                Ok(text) => Ok((resolved, Some(text))),
                Err(EditorError::Cancelled) => Err(ToolError::Cancelled),
                // A missing file is an error to the client (usually -32002); the disk
                // tells us whether it is really missing or the editor failed.
                Err(EditorError::Refused { .. }) if !resolved.exists() => Ok((resolved, None)),
                Err(e) => Err(ToolError::Failed(format!("{path}: the editor could not read it: {e}"))),
            };
        }
        let (jail, path) = (jail.clone(), path.to_string());
        blocking(self.cancel, move |_| read_disk(&jail, &path)).await
    }

    /// Writes `content` to `path` (creating it), returning the canonical path and `content`
    /// (taken and given back rather than copied: it may be a file of megabytes).
    pub async fn write(&self, jail: &Jail, path: &str, content: String) -> Result<(PathBuf, String), ToolError> {
        if self.editor.features().write_text_file {
            let resolved = jail.resolve(path)?;
            return match self.editor.write_text_file(resolved.clone(), content.clone()).await {
                Ok(()) => Ok((resolved, content)),
                Err(EditorError::Cancelled) => Err(ToolError::Cancelled),
                Err(e) => Err(ToolError::Failed(format!("{path}: the editor could not write it: {e}"))),
            };
        }
        let (jail, path) = (jail.clone(), path.to_string());
        blocking(self.cancel, move |_| Ok((write_disk(&jail, &path, &content)?, content))).await
    }
}

pub(crate) fn read_disk(jail: &Jail, path: &str) -> Result<(PathBuf, Option<String>), ToolError> {
    let (resolved, file) = match jail.open_read(path) {
        Ok(opened) => opened,
        Err(JailError::Io { .. }) if !jail.resolve(path).is_ok_and(|p| p.exists()) => {
            return Ok((jail.resolve(path)?, None));
        }
        Err(e) => return Err(e.into()),
    };
    // Sized from the file's length, so the buffer is never regrown (and the text copied) while
    // a large file is read; through `take` the reads themselves still start small and grow.
    let size = file.metadata().map_or(0, |m| m.len().min(READ_BYTES));
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0) + 1);
    file.take(READ_BYTES).read_to_end(&mut bytes).map_err(|e| ToolError::Failed(format!("{path}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| ToolError::Failed(format!("{path} is not a UTF-8 text file")))?;
    Ok((resolved, Some(text)))
}

pub(crate) fn write_disk(jail: &Jail, path: &str, content: &str) -> Result<PathBuf, ToolError> {
    use std::io::Write;
    let (resolved, mut file) = jail.open_write(path)?;
    let failed = |e: std::io::Error| ToolError::Failed(format!("{path}: {e}"));
    file.write_all(content.as_bytes()).map_err(failed)?;
    file.set_len(content.len() as u64).map_err(failed)?;
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::Roots;

    /// The disk side of write and read: a rewrite to a shorter text leaves no tail of the
    /// longer one (the file is overwritten, then cut to length).
    #[test]
    fn a_shorter_rewrite_leaves_nothing_of_the_longer_text() {
        let root = std::env::temp_dir().join(format!("corvid-files-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).expect("mkdir");
        let root = dunce::canonicalize(root).expect("canon");
        let jail = Jail::new(Roots::new(root.clone(), Vec::new()), Vec::new());
        let long = "0123456789\n".repeat(10_000);
        write_disk(&jail, "a.txt", &long).expect("write");
        let read = |jail: &Jail| read_disk(jail, "a.txt").ok().and_then(|(_, text)| text);
        assert_eq!(read(&jail).as_deref(), Some(&*long));
        write_disk(&jail, "a.txt", "short\n").expect("rewrite");
        assert_eq!(read(&jail).as_deref(), Some("short\n"));
        assert_eq!(read_disk(&jail, "missing.txt").ok().map(|(_, text)| text), Some(None));
        let _ = std::fs::remove_dir_all(root);
    }
}
