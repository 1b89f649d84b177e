//! Turning a prompt's content blocks into what the model reads.
//!
//! Text passes through; embedded text resources become tagged context; binary content (blobs
//! and images) is decoded, checked, and written once under `<data dir>/uploads/` named by its
//! SHA-256 (never by the client's file name), and the model gets a marker naming that file;
//! images also reach models that take them. `file://` links inside the session's folders are
//! inlined when small, otherwise pointed at; links elsewhere are only mentioned.
//!
//! Every block is validated before anything is written, so a bad block writes nothing.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use crate::provider::ImageRef;
use crate::rpc::RpcError;
use crate::tools::Jail;

const METHOD: &str = "session/prompt";
/// Linked workspace files up to this size are inlined for the model.
const INLINE_LINK_BYTES: u64 = 64 * 1024;

/// What the model gets from one prompt.
#[derive(Debug, Default)]
pub struct UserContent {
    pub text: String,
    /// Images for models that accept them (files under `uploads/`).
    pub images: Vec<ImageRef>,
}

/// Accepts ZeroClaw clients' shapes: `prompt` as a plain string, and parts `{"text": …}`
/// without a `type`.
pub fn normalize(params: &mut Value) {
    let Some(prompt) = params.get_mut("prompt") else { return };
    if let Value::String(text) = prompt {
        *prompt = serde_json::json!([{ "type": "text", "text": text }]);
        return;
    }
    if let Value::Array(parts) = prompt {
        for part in parts.iter_mut().filter_map(Value::as_object_mut) {
            if !part.contains_key("type") && part.get("text").is_some_and(Value::is_string) {
                part.insert("type".into(), "text".into());
            }
        }
    }
}

/// The id a client gave its prompt (`_meta.corvid.messageId`, as ACP's message-id proposal has
/// clients do), which the user message is stored under: a v1 client learns no id of its own
/// prompt otherwise, and needs one to rewind to it. Letters, digits and `-_.:`, 1–128 of them
/// (a UUID fits); `None` when not given.
pub fn client_message_id(meta: Option<&acp::Meta>) -> Result<Option<String>, RpcError> {
    let Some(given) = meta.and_then(|m| m.get("corvid")).and_then(|c| c.get("messageId")) else { return Ok(None) };
    let id = given.as_str().unwrap_or_default();
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.:".contains(c);
    if id.is_empty() || id.len() > 128 || !id.chars().all(allowed) {
        let why = "_meta.corvid.messageId: must be a string of 1 to 128 letters, digits or -_.: (a UUID)";
        return Err(RpcError::invalid_params(METHOD, why));
    }
    Ok(Some(id.to_string()))
}

/// A decoded binary block waiting to be written.
struct Upload {
    bytes: Vec<u8>,
    mime: String,
    /// Where it came from (a resource's uri), for the marker.
    from: Option<String>,
}

enum Part {
    Text(String),
    Upload(Upload),
}

/// Converts the blocks (blocking: decodes and writes files; run it off the async threads).
pub fn convert(blocks: &[acp::ContentBlock], uploads: &Path, jail: &Jail) -> Result<UserContent, RpcError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for (i, block) in blocks.iter().enumerate() {
        parts.push(match block {
            acp::ContentBlock::Text(t) => Part::Text(t.text.clone()),
            acp::ContentBlock::ResourceLink(link) => Part::Text(link_text(&link.name, &link.uri, jail)),
            acp::ContentBlock::Resource(res) => match &res.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    Part::Text(format!("<context uri=\"{}\">\n{}\n</context>", t.uri, t.text))
                }
                acp::EmbeddedResourceResource::BlobResourceContents(b) => {
                    let mime = b.mime_type.clone().unwrap_or_else(|| "application/octet-stream".into());
                    Part::Upload(Upload { bytes: decode(i, &b.blob)?, mime, from: Some(b.uri.clone()) })
                }
                _ => return Err(unsupported(i, "this kind of embedded resource")),
            },
            acp::ContentBlock::Image(img) => Part::Upload(Upload {
                bytes: decode(i, &img.data)?,
                mime: img.mime_type.clone(),
                from: img.uri.clone(),
            }),
            acp::ContentBlock::Audio(_) => return Err(unsupported(i, "audio (promptCapabilities.audio is false)")),
            _ => return Err(unsupported(i, "this content type")),
        });
    }
    if !parts.iter().any(|p| matches!(p, Part::Upload(_)) || matches!(p, Part::Text(t) if !t.trim().is_empty())) {
        return Err(RpcError::invalid_params(METHOD, "prompt must contain some text"));
    }
    let mut content = UserContent::default();
    let mut texts = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text(t) => texts.push(t),
            Part::Upload(u) => {
                let path = store_upload(uploads, &u.bytes, &u.mime)?;
                let from = u.from.map(|f| format!(", from {f}")).unwrap_or_default();
                let label = if u.mime.starts_with("image/") { "IMAGE" } else { "Document" };
                texts.push(format!("[{label}: {} ({}, {} bytes{from})]", path.display(), u.mime, u.bytes.len()));
                if u.mime.starts_with("image/") {
                    content.images.push(ImageRef { mime_type: u.mime, path });
                }
            }
        }
    }
    content.text = texts.join("\n\n");
    Ok(content)
}

fn decode(index: usize, data: &str) -> Result<Vec<u8>, RpcError> {
    crate::uploads::decode(data).map_err(|e| RpcError::invalid_params(METHOD, format!("prompt[{index}]: {e}")))
}

/// Writes `bytes` as `uploads/<sha256>.<ext>` unless it is already there.
fn store_upload(uploads: &Path, bytes: &[u8], mime: &str) -> Result<PathBuf, RpcError> {
    crate::uploads::store(uploads, bytes, mime).map_err(|e| RpcError::Internal(e.to_string()))
}

/// What the model reads for a resource link.
fn link_text(name: &str, uri: &str, jail: &Jail) -> String {
    let Some(path) = uri.strip_prefix("file://") else {
        return format!("[{name}]({uri})");
    };
    let path = percent_decode(path);
    match jail.resolve(&path) {
        Ok(resolved) => {
            let small = std::fs::metadata(&resolved).is_ok_and(|m| m.is_file() && m.len() <= INLINE_LINK_BYTES);
            let text = small.then(|| std::fs::read_to_string(&resolved).ok()).flatten();
            match text {
                Some(text) => format!("<context uri=\"{uri}\">\n{text}\n</context>"),
                None => format!("[{name}]({uri}) (in the workspace: read it with read_file {})", resolved.display()),
            }
        }
        Err(_) => format!("[{name}]({uri}) (outside the session's folders: not readable)"),
    }
}

/// `%XX` escapes in a file URI's path.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // Bytes, not `&s[..]`: the two after `%` may split a multi-byte character.
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (hex(bytes.get(i + 1)), hex(bytes.get(i + 2)))
        {
            out.push((hi << 4) | lo);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(digit: Option<&u8>) -> Option<u8> {
    digit.and_then(|d| char::from(*d).to_digit(16)).and_then(|v| u8::try_from(v).ok())
}

fn unsupported(index: usize, what: &str) -> RpcError {
    RpcError::invalid_params(METHOD, format!("prompt[{index}]: {what} is not supported by Corvid"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;
    use sha2::{Digest, Sha256};

    fn jail(root: &Path) -> Jail {
        Jail::new(crate::roots::Roots::new(root.to_path_buf(), Vec::new()), vec![])
    }

    fn blocks(v: Value) -> Vec<acp::ContentBlock> {
        serde_json::from_value(v).expect("blocks")
    }

    #[test]
    fn zeroclaw_shapes_are_normalized() {
        let mut p = json!({ "sessionId": "s", "prompt": "hello" });
        normalize(&mut p);
        assert_eq!(p["prompt"], json!([{ "type": "text", "text": "hello" }]));
        let mut p = json!({ "prompt": [{ "text": "a" }, { "type": "text", "text": "b" }] });
        normalize(&mut p);
        assert_eq!(p["prompt"][0]["type"], "text");
    }

    /// Found by the `prompt` fuzz target: a `%` followed by a character and half of a
    /// multi-byte one panicked (a `&str` sliced inside a character).
    #[test]
    fn percent_escapes_never_split_characters() {
        assert_eq!(percent_decode("%aé"), "%aé");
        assert_eq!(percent_decode("%é"), "%é");
        assert_eq!(percent_decode("a%20b%2"), "a b%2");
        assert_eq!(percent_decode("%+1%C3%A9"), "%+1é");
        let dir = std::env::temp_dir().join(format!("corvid-prompt-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let link = blocks(json!([{ "type": "resource_link", "name": "x", "uri": "file:///tmp/%aé" }]));
        let c = convert(&link, &dir.join("uploads"), &jail(&dir)).expect("converted");
        assert!(c.text.contains("outside the session's folders"), "{}", c.text);
    }

    #[test]
    fn blobs_are_stored_by_hash_and_bad_ones_write_nothing() {
        let dir = std::env::temp_dir().join(format!("corvid-prompt-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let uploads = dir.join("uploads");
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"%PDF-1.4 hi");
        let ok = blocks(json!([
            { "type": "text", "text": "see" },
            { "type": "resource", "resource": { "uri": "file:///x/report.pdf", "blob": b64, "mimeType": "application/pdf" } }
        ]));
        let c = convert(&ok, &uploads, &jail(&dir)).expect("converted");
        let hash = Sha256::digest(b"%PDF-1.4 hi").iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert!(
            c.text.contains(&format!(
                "[Document: {}/{hash}.pdf (application/pdf, 11 bytes, from file:///x/report.pdf)]",
                uploads.display()
            )),
            "{}",
            c.text
        );
        assert!(c.images.is_empty());

        let bad = blocks(json!([
            { "type": "image", "data": base64::engine::general_purpose::STANDARD.encode(b"png!"), "mimeType": "image/png" },
            { "type": "resource", "resource": { "uri": "file:///y", "blob": "not base64!!", "mimeType": "text/plain" } }
        ]));
        let e = convert(&bad, &uploads, &jail(&dir)).expect_err("invalid base64");
        assert!(e.to_string().contains("prompt[1]: invalid base64"), "{e}");
        assert_eq!(
            std::fs::read_dir(&uploads).expect("dir").count(),
            1,
            "the valid image before it was not written either"
        );
    }
}
