//! Images a tool hands the model (`read_file` of a picture, an MCP server's image part).
//!
//! An image is recognised by its first bytes, never by its name (a `.png` that is text stays
//! text; a picture without an extension is still one), capped in size, and stored under the
//! data dir's `uploads/` by its SHA-256, like a prompt's attachments: the history keeps only the
//! path ([`ImageRef`]), so replay, forks and compaction find the bytes again, and the request
//! reads them when it is built.

use std::path::{Path, PathBuf};

use base64::Engine;

use crate::event::ToolContent;
use crate::provider::ImageRef;

/// Largest image handed to a model (providers refuse larger ones: Anthropic's limit is 5 MB).
pub const MAX_BYTES: usize = 5 * 1024 * 1024;

/// Largest image also shown on the tool's card: the card is stored in the session's ledger as
/// base64, and a client needs no more than this to draw a preview.
const CARD_BYTES: usize = 1024 * 1024;

/// The image MIME types every provider that takes images accepts.
pub const TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The MIME type of an image a model can take, from its magic bytes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Why an image was not kept.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("the image is {0} bytes; images over {MAX_BYTES} bytes are not sent to the model")]
    TooLarge(usize),
    #[error("storing the image under {dir}: {source}")]
    Store { dir: PathBuf, source: std::io::Error },
}

/// Stores `bytes` (an image of type `mime`, at most [`MAX_BYTES`]) under `uploads`.
pub fn keep(uploads: &Path, bytes: &[u8], mime: &str) -> Result<ImageRef, ImageError> {
    if bytes.len() > MAX_BYTES {
        return Err(ImageError::TooLarge(bytes.len()));
    }
    let path = store(uploads, bytes, extension(mime))
        .map_err(|source| ImageError::Store { dir: uploads.to_path_buf(), source })?;
    Ok(ImageRef { mime_type: mime.to_string(), path })
}

/// Writes `bytes` as `uploads/<sha256>.<ext>` unless it is already there.
pub fn store(uploads: &Path, bytes: &[u8], ext: &str) -> std::io::Result<PathBuf> {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>();
    let path = uploads.join(format!("{hash}.{ext}"));
    if !path.exists() {
        std::fs::create_dir_all(uploads)?;
        // Written aside and renamed: a reader never sees half a file under the final name.
        let tmp = uploads.join(format!(".{hash}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &path))?;
    }
    Ok(path)
}

/// The image on the tool's card when it is small enough to be stored there.
pub fn card(bytes: &[u8], mime: &str) -> Option<ToolContent> {
    use agent_client_protocol_schema::v1 as acp;
    (bytes.len() <= CARD_BYTES).then(|| {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        ToolContent::Block(Box::new(acp::ContentBlock::Image(acp::ImageContent::new(data, mime))))
    })
}

fn extension(mime: &str) -> &'static str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_known_by_their_bytes_alone() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a\x01\0"), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WAVEfmt "), None, "a RIFF that is not WebP");
        assert_eq!(sniff(b"\x89PN"), None, "cut short");
        assert_eq!(sniff(b"PNG is a format"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn kept_images_are_stored_once_and_capped() {
        let dir = std::env::temp_dir().join(format!("corvid-image-{}", uuid::Uuid::new_v4()));
        let png = b"\x89PNG\r\n\x1a\nrest";
        let a = keep(&dir, png, "image/png").expect("kept");
        let b = keep(&dir, png, "image/png").expect("kept again");
        assert_eq!(a, b);
        assert_eq!(std::fs::read(&a.path).expect("stored"), png);
        assert!(a.path.extension().is_some_and(|e| e == "png"));
        let big = vec![0u8; MAX_BYTES + 1];
        assert!(matches!(keep(&dir, &big, "image/png"), Err(ImageError::TooLarge(n)) if n == MAX_BYTES + 1));
        assert!(card(png, "image/png").is_some() && card(&big, "image/png").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
