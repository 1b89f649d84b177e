//! Prompt content conversion: text, resource links (`file://` inside, outside, through links,
//! percent-escaped), embedded text resources, and base64 blobs and images (valid, mangled,
//! oversize-looking), as structured blocks or as raw JSON params.
//!
//! Properties: never panics; accepted prompts only ever inline files inside the session's root
//! (never the outside or forbidden secrets), write nothing but their uploads, and images point
//! at files under `uploads/`; refused prompts write nothing.
#![no_main]

#[path = "common/tree.rs"]
mod tree;

use arbitrary::Arbitrary;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
use corvid_core::agent::fuzzing::prompt_content;
use corvid_core::roots::Roots;
use corvid_core::rpc::RpcError;
use corvid_core::tools::Jail;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Arbitrary, Debug)]
enum Input {
    Blocks(Vec<Block>),
    /// `prompt` as a plain string (the ZeroClaw shorthand).
    Shorthand(String),
    Json(String),
}

#[derive(Arbitrary, Debug)]
enum Block {
    Text(String),
    /// `{"text": …}` without a type (ZeroClaw).
    Untyped(String),
    Link {
        name: String,
        uri: Uri,
    },
    TextResource {
        uri: Uri,
        text: String,
    },
    Blob {
        uri: Uri,
        data: Data,
        mime: Option<Mime>,
    },
    Image {
        data: Data,
        mime: Mime,
        uri: Option<Uri>,
    },
    Audio(Data),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
enum Uri {
    /// `file://<tree base>/<path>`.
    InTree(String),
    /// Same, each byte percent-escaped where `escape` says so.
    Escaped {
        path: String,
        escape: Vec<bool>,
    },
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Data {
    Standard(Vec<u8>),
    NoPad(Vec<u8>),
    UrlSafe(Vec<u8>),
    Padded { bytes: Vec<u8>, before: String, after: String },
    Text(String),
}

#[derive(Arbitrary, Debug)]
enum Mime {
    Known(u8),
    Other(String),
}

const MIMES: &[&str] = &["image/png", "image/jpeg", "application/pdf", "text/plain", "image/svg+xml; charset=x", ""];

impl Uri {
    fn render(&self, base: &str) -> String {
        match self {
            Uri::InTree(p) => format!("file://{base}/{p}"),
            Uri::Escaped { path, escape } => {
                let mut s = format!("file://{base}/");
                for (i, b) in path.bytes().enumerate() {
                    if escape.get(i).copied().unwrap_or(false) {
                        s.push_str(&format!("%{b:02X}"));
                    } else {
                        s.push(char::from(b));
                    }
                }
                s
            }
            Uri::Other(s) => s.clone(),
        }
    }
}

impl Data {
    fn render(&self) -> String {
        match self {
            Data::Standard(b) => STANDARD.encode(b),
            Data::NoPad(b) => STANDARD_NO_PAD.encode(b),
            Data::UrlSafe(b) => URL_SAFE.encode(b),
            Data::Padded { bytes, before, after } => format!("{before}{}{after}", STANDARD.encode(bytes)),
            Data::Text(s) => s.clone(),
        }
    }
}

impl Mime {
    fn render(&self) -> String {
        match self {
            Mime::Known(i) => MIMES[usize::from(*i) % MIMES.len()].to_string(),
            Mime::Other(s) => s.clone(),
        }
    }
}

fn block(b: &Block, base: &str) -> Value {
    match b {
        Block::Text(t) => json!({ "type": "text", "text": t }),
        Block::Untyped(t) => json!({ "text": t }),
        Block::Link { name, uri } => json!({ "type": "resource_link", "name": name, "uri": uri.render(base) }),
        Block::TextResource { uri, text } => {
            json!({ "type": "resource", "resource": { "uri": uri.render(base), "text": text } })
        }
        Block::Blob { uri, data, mime } => json!({ "type": "resource", "resource": {
            "uri": uri.render(base), "blob": data.render(), "mimeType": mime.as_ref().map(Mime::render) } }),
        Block::Image { data, mime, uri } => json!({ "type": "image", "data": data.render(),
            "mimeType": mime.render(), "uri": uri.as_ref().map(|u| u.render(base)) }),
        Block::Audio(data) => json!({ "type": "audio", "data": data.render(), "mimeType": "audio/wav" }),
        Block::Raw(s) => serde_json::from_str(s).unwrap_or(Value::Null),
    }
}

/// `%XX` escapes decoded, so a secret spelled with escapes in a uri counts as given.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| char::from(c).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fuzz_target!(|input: Input| {
    let t = tree::tree();
    let base = t.base.to_string_lossy().into_owned();
    let params = match &input {
        Input::Blocks(blocks) => {
            json!({ "sessionId": "s", "prompt": blocks.iter().map(|b| block(b, &base)).collect::<Vec<_>>() })
        }
        Input::Shorthand(text) => json!({ "sessionId": "s", "prompt": text }),
        Input::Json(s) => match serde_json::from_str::<Value>(&s.replace('@', &base)) {
            Ok(v) => v,
            Err(_) => return,
        },
    };
    let uploads = t.base.join("uploads");
    let _ = std::fs::remove_dir_all(&uploads);
    let outside_before = tree::listing(&t.outside);
    let jail = Jail::new(Roots::new(t.root.clone(), Vec::new()), vec![t.forbidden.clone()]);
    // What the prompt itself holds, as sent and percent-decoded (decoding alone can break a
    // secret that is typed in: `%eFORBIDDEN` decodes to a byte 0xEF before "ORBIDDEN").
    let raw = params.to_string();
    let shown = format!("{raw}\n{}", percent_decoded(&raw));
    let result = prompt_content(params, &uploads, &jail);
    assert_eq!(tree::listing(&t.outside), outside_before, "something was written outside");
    match result {
        Ok(content) => {
            for secret in [tree::OUTSIDE_SECRET, tree::FORBIDDEN_SECRET] {
                assert!(
                    shown.contains(secret) || !content.text.contains(secret),
                    "a file outside the jail was inlined: {}",
                    content.text
                );
            }
            for image in &content.images {
                assert!(image.starts_with(&uploads) && image.is_file(), "image {image:?} is not an upload");
            }
        }
        Err(RpcError::InvalidParams(_)) => {
            assert!(tree::listing(&uploads).is_empty(), "a refused prompt wrote uploads");
        }
        Err(other) => panic!("unexpected error kind {other:?}"),
    }
});
