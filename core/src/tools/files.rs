//! Where the file tools get and put text: the disk, or the client's editor through
//! `fs/read_text_file` / `fs/write_text_file` when the client advertises them (so the model
//! sees unsaved buffers and its edits land in the editor, with the editor's undo).
//!
//! Either way the path is resolved through the jail first: the client is only ever asked about
//! canonical paths inside the session roots.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use super::{Jail, JailError, ToolError};
use crate::rpc::{Peer, RpcError};

/// Most bytes of a file read from disk at all.
pub const READ_BYTES: u64 = 4 * 1024 * 1024;

/// The client side of file access, for one session.
#[derive(Clone)]
pub struct ClientFiles {
    pub peer: Peer,
    pub session_id: String,
    pub deadline: Duration,
    /// The client advertised `fs.readTextFile`.
    pub read: bool,
    /// The client advertised `fs.writeTextFile`.
    pub write: bool,
}

/// File contents, from the disk or from the client.
#[derive(Clone)]
pub enum Files {
    Disk,
    Client(ClientFiles),
}

impl Files {
    /// The text of `path`, or `None` if it does not exist. Errors name the path.
    pub async fn read(&self, jail: &Jail, path: &str) -> Result<(PathBuf, Option<String>), ToolError> {
        match self {
            Files::Client(c) if c.read => {
                let resolved = jail.resolve(path)?;
                let params = json!({ "sessionId": c.session_id, "path": resolved });
                match c.peer.request("fs/read_text_file", params, c.deadline).await {
                    Ok(v) => match v.get("content").and_then(|c| c.as_str()) {
                        Some(text) => Ok((resolved, Some(text.to_string()))),
                        None => Err(ToolError::Failed(format!("{path}: the editor's answer had no `content`"))),
                    },
                    // A missing file is an error to the client (usually -32002); the disk
                    // tells us whether it is really missing or the editor failed.
                    Err(RpcError::Remote { .. }) if !resolved.exists() => Ok((resolved, None)),
                    Err(e) => Err(ToolError::Failed(format!("{path}: the editor could not read it: {e}"))),
                }
            }
            _ => {
                let (jail, path) = (jail.clone(), path.to_string());
                blocking(move || read_disk(&jail, &path)).await
            }
        }
    }

    /// Writes `content` to `path` (creating it), returning the canonical path.
    pub async fn write(&self, jail: &Jail, path: &str, content: &str) -> Result<PathBuf, ToolError> {
        match self {
            Files::Client(c) if c.write => {
                let resolved = jail.resolve(path)?;
                let params = json!({ "sessionId": c.session_id, "path": resolved, "content": content });
                c.peer
                    .request("fs/write_text_file", params, c.deadline)
                    .await
                    .map_err(|e| ToolError::Failed(format!("{path}: the editor could not write it: {e}")))?;
                Ok(resolved)
            }
            _ => {
                let (jail, path, content) = (jail.clone(), path.to_string(), content.to_string());
                blocking(move || write_disk(&jail, &path, &content)).await
            }
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(ToolError::Failed(format!("the file operation crashed: {e}"))))
}

fn read_disk(jail: &Jail, path: &str) -> Result<(PathBuf, Option<String>), ToolError> {
    let (resolved, file) = match jail.open_read(path) {
        Ok(opened) => opened,
        Err(JailError::Io { .. }) if !jail.resolve(path).is_ok_and(|p| p.exists()) => {
            return Ok((jail.resolve(path)?, None));
        }
        Err(e) => return Err(e.into()),
    };
    let mut bytes = Vec::new();
    file.take(READ_BYTES).read_to_end(&mut bytes).map_err(|e| ToolError::Failed(format!("{path}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| ToolError::Failed(format!("{path} is not a UTF-8 text file")))?;
    Ok((resolved, Some(text)))
}

fn write_disk(jail: &Jail, path: &str, content: &str) -> Result<PathBuf, ToolError> {
    use std::io::Write;
    let (resolved, mut file) = jail.open_write(path)?;
    file.write_all(content.as_bytes()).map_err(|e| ToolError::Failed(format!("{path}: {e}")))?;
    Ok(resolved)
}
