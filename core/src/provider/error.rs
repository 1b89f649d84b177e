//! How a model request fails: [`ProviderError`], and the helpers that turn transport errors
//! and provider text into its messages (shared by the request, the stream and the decoders).

use serde_json::{Value, json};

/// Why a model request failed. Messages are written for the person reading them in the editor.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("model provider returned {status}{}: {hint}", detail_suffix(.detail))]
    Status { status: String, code: u16, detail: Option<String>, hint: String },
    #[error("could not connect to the model provider at {url}: {reason}: {hint}")]
    Connect { url: String, reason: String, hint: &'static str },
    #[error("model provider sent an invalid stream event: {0}")]
    BadStream(String),
    #[error("model provider reported an error mid-stream: {0}")]
    StreamError(String),
    #[error("model provider closed the stream before the answer was complete")]
    Truncated,
    #[error("model provider sent nothing for {0} s; giving up")]
    Stalled(u64),
    #[error("model provider at {url} offers no models: set CORVID_MODEL")]
    NoModels { url: String },
    #[error("model provider at {url} could not list models ({reason}): set CORVID_MODEL")]
    ModelList { url: String, reason: String },
}

fn detail_suffix(detail: &Option<String>) -> String {
    detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default()
}

impl ProviderError {
    /// Structured details for the JSON-RPC error's `data`.
    pub fn wire_data(&self) -> Value {
        match self {
            ProviderError::Status { code, .. } => json!({ "kind": "provider", "httpStatus": code }),
            _ => json!({ "kind": "provider" }),
        }
    }
}

/// A request that never reached the provider, with what to check. A certificate the system
/// does not trust is said as such (and is not worth retrying): "check that the server is
/// running" would send the user to the wrong place.
pub(super) fn connect_error(url: &str, e: &reqwest::Error) -> (ProviderError, bool) {
    let untrusted = matches!(tls_error(e), Some(rustls::Error::InvalidCertificate(_)));
    let hint = if untrusted {
        "the server's TLS certificate is not trusted by this system: add its CA to the system's trust store, or name a file of trusted certificates in SSL_CERT_FILE"
    } else {
        "check CORVID_BASE_URL and that the server is running"
    };
    (ProviderError::Connect { url: url.to_string(), reason: connect_reason(e), hint }, !untrusted)
}

/// The TLS error behind a transport error, if that is what it was. rustls' error reaches us
/// inside an `io::Error` inside another (tokio-rustls', then hyper-rustls'), and an
/// `io::Error`'s `source()` skips what it holds, so each `io::Error` is opened instead.
fn tls_error(e: &reqwest::Error) -> Option<&rustls::Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = next {
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match error.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(held) => Some(held),
            None => error.source(),
        };
    }
    None
}

/// The innermost cause of a transport error (the outer ones just say "error sending request").
pub(super) fn connect_reason(e: &reqwest::Error) -> String {
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        reason = s.to_string();
        source = s.source();
    }
    reason
}

/// `s` cut to at most `max` bytes (on a character boundary): a provider's text quoted in an
/// error stays readable.
pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
