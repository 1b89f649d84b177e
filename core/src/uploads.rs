//! Binary content kept for the model: a prompt's blobs and images and an MCP tool's binary
//! results, decoded from base64 within a size cap and written once under the data folder's
//! `uploads/`, named by SHA-256 with an extension from the MIME type. Knows nothing of where the
//! bytes came from: each caller words its own errors (a prompt's are the client's bad params; an
//! MCP tool's are a note in the tool's result).

use std::path::{Path, PathBuf};

use base64::Engine;

/// Largest decoded blob or image accepted.
pub const MAX_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("content is {len} bytes decoded; the limit is {MAX_BYTES}")]
    TooLarge { len: usize },
    #[error("invalid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("storing an upload in {}: {source}", dir.display())]
    Store { dir: PathBuf, source: std::io::Error },
}

/// Standard base64 (surrounding whitespace ignored) decoded, at most [`MAX_BYTES`].
pub fn decode(data: &str) -> Result<Vec<u8>, UploadError> {
    // The decoded size is known before decoding: refuse oversize input without allocating it.
    let estimate = data.len() / 4 * 3;
    if estimate > MAX_BYTES + 3 {
        return Err(UploadError::TooLarge { len: estimate });
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim())?;
    if bytes.len() > MAX_BYTES {
        return Err(UploadError::TooLarge { len: bytes.len() });
    }
    Ok(bytes)
}

/// Writes `bytes` as `uploads/<sha256>.<ext for mime>` unless it is already there.
pub fn store(uploads: &Path, bytes: &[u8], mime: &str) -> Result<PathBuf, UploadError> {
    crate::tools::image::store(uploads, bytes, extension(mime))
        .map_err(|source| UploadError::Store { dir: uploads.to_path_buf(), source })
}

/// A file extension for a MIME type (`bin` when unknown).
fn extension(mime: &str) -> &'static str {
    match mime.split(';').next().unwrap_or("").trim() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "text/csv" => "csv",
        "text/html" => "html",
        "application/json" => "json",
        "application/zip" => "zip",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_refuses_bad_base64_and_oversize_input_before_decoding_it() {
        assert_eq!(decode(" AAAA\n").expect("padded base64 with whitespace around"), vec![0, 0, 0]);
        assert!(matches!(decode("!!!!"), Err(UploadError::Base64(_))));
        assert!(matches!(decode("-_-_"), Err(UploadError::Base64(_))), "URL-safe is not standard base64");
        let huge = "A".repeat((MAX_BYTES + 8) / 3 * 4);
        let e = decode(&huge).expect_err("over the cap");
        assert!(e.to_string().contains(&format!("the limit is {MAX_BYTES}")), "{e}");
    }

    #[test]
    fn store_names_the_file_by_its_hash_and_type_and_writes_it_once() {
        let dir = std::env::temp_dir().join(format!("corvid-uploads-{}", uuid::Uuid::new_v4()));
        let a = store(&dir, b"%PDF-1", "application/pdf; charset=binary").expect("stored");
        assert_eq!(a.extension().and_then(|e| e.to_str()), Some("pdf"));
        assert_eq!(std::fs::read(&a).expect("written"), b"%PDF-1");
        assert_eq!(store(&dir, b"%PDF-1", "application/pdf").expect("again"), a);
        let unknown = store(&dir, b"x", "application/x-unknown").expect("unknown");
        assert_eq!(unknown.extension().and_then(|e| e.to_str()), Some("bin"));
        assert_eq!(std::fs::read_dir(&dir).expect("listed").count(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
