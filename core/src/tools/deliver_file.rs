//! deliver_file: hands a workspace file to the client as an embedded blob, named by its
//! content hash (`attachment://deliver/<sha256>.<ext>`), never by the file's own name.

use std::io::Read;

use agent_client_protocol_schema::v1 as acp;
use base64::Engine;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::walk::blocking;
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, display, location, parse_args};
use crate::event::{ToolContent, ToolKind};
use crate::provider::ToolSpec;

/// Largest file delivered.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;

#[derive(Deserialize)]
struct Args {
    path: String,
}

pub struct DeliverFile;

impl Tool for DeliverFile {
    fn name(&self) -> &str {
        "deliver_file"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "deliver_file",
            "Hand a file from the workspace to the user as an attachment (at most 10 MB).",
            json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        )
    }

    fn announce(&self, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("deliver_file", args)?;
        let path = jail.resolve(&a.path)?;
        Ok(Announce {
            kind: ToolKind::Read,
            title: format!("Deliver {}", display(&path, jail)),
            locations: vec![location(&path, None)],
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        let (args, jail) = (args.clone(), cx.jail.clone());
        // Reading and hashing up to 10 MB twice: off the async threads, and abandoned on cancel.
        Box::pin(blocking(cx.cancel, move |_| deliver(&args, &jail)))
    }
}

fn read_capped(jail: &Jail, path: &str) -> Result<Vec<u8>, ToolError> {
    let (_, file) = jail.open_read(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(|e| ToolError::Failed(format!("{path}: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ToolError::Failed(format!("{path} is larger than {} MB", MAX_BYTES / (1024 * 1024))));
    }
    Ok(bytes)
}

fn deliver(args: &Value, jail: &Jail) -> Result<Output, ToolError> {
    let a: Args = parse_args("deliver_file", args)?;
    let bytes = read_capped(jail, &a.path)?;
    let hash = hex(&Sha256::digest(&bytes));
    // The file may change between reading and embedding; re-read and re-hash right before.
    let again = read_capped(jail, &a.path)?;
    if hex(&Sha256::digest(&again)) != hash {
        return Err(ToolError::Failed(format!("{} changed while it was being delivered; try again", a.path)));
    }
    let ext = std::path::Path::new(&a.path)
        .extension()
        .and_then(|e| e.to_str())
        .filter(|e| e.chars().all(|c| c.is_ascii_alphanumeric()) && e.len() <= 16)
        .unwrap_or("bin")
        .to_ascii_lowercase();
    let uri = format!("attachment://deliver/{hash}.{ext}");
    let blob = base64::engine::general_purpose::STANDARD.encode(&again);
    let resource = acp::BlobResourceContents::new(blob, uri.clone()).mime_type(mime_for(&ext).to_string());
    let block = acp::ContentBlock::Resource(acp::EmbeddedResource::new(
        acp::EmbeddedResourceResource::BlobResourceContents(resource),
    ));
    let summary = format!("Delivered {} ({} bytes) to the user as {uri}", a.path, again.len());
    Ok(Output {
        for_model: summary,
        content: vec![ToolContent::Block(Box::new(block))],
        raw: json!({ "uri": uri, "sha256": hash, "bytes": again.len() }),
        ok: true,
        images: Vec::new(),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mime_for(ext: &str) -> &'static str {
    match ext {
        "txt" | "md" | "rs" | "py" | "js" | "ts" | "toml" | "json" | "csv" => "text/plain",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}
