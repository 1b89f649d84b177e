//! How a model request fails: [`ProviderError`], and the helpers that turn transport errors
//! and provider text into its messages (shared by the request, the stream and the decoders).

use serde_json::{Value, json};

/// Why a model request failed. Messages are written for the person reading them in the editor.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("model provider returned {status}{}: {hint}", detail_suffix(.detail))]
    Status { status: String, code: u16, detail: Option<String>, hint: String },
    /// The request was longer than the model's context window (each server says it its own
    /// way: [`context_too_long`]). The turn compacts the conversation and tries once more, so
    /// the person reads this only when even the compacted request did not fit.
    #[error(
        "the conversation does not fit the model's context window even after compacting it ({detail}): start a new session, or set a larger window for this model ([models.\"<id>\"] context_window in Corvid's config) if the server allows one"
    )]
    ContextTooLong { detail: String, limit: Option<u64> },
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
    /// The stream failed after part of the answer reached the client: it cannot be asked
    /// again without showing it twice.
    #[error("the model's answer broke off after {shown} characters had arrived: {source}")]
    BrokeOff { shown: usize, source: Box<ProviderError> },
    #[error("model provider at {url} offers no models: set CORVID_MODEL")]
    NoModels { url: String },
    #[error("model provider at {url} could not list models ({reason}): set CORVID_MODEL")]
    ModelList { url: String, reason: String },
}

fn detail_suffix(detail: &Option<String>) -> String {
    detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default()
}

impl ProviderError {
    /// A stream failure that asking again may cure (the server's trouble, not the request's).
    pub fn worth_restarting(&self) -> bool {
        matches!(self, ProviderError::StreamError(_) | ProviderError::Truncated | ProviderError::Stalled(_))
    }

    /// Structured details for the JSON-RPC error's `data`.
    pub fn wire_data(&self) -> Value {
        match self {
            ProviderError::Status { code, .. } => json!({ "kind": "provider", "httpStatus": code }),
            ProviderError::ContextTooLong { limit, .. } => json!({ "kind": "contextLength", "limit": limit }),
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

/// What servers say when a request is longer than the model's window: OpenAI's
/// `context_length_exceeded`, Anthropic's "prompt is too long", vLLM's and OpenRouter's
/// "maximum context length", llama.cpp's `exceed_context_size_error`, Ollama's, Gemini's and
/// Mistral's wordings.
const CONTEXT_SIGNS: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "context size",
    "prompt is too long",
    "exceed_context_size",
    "too many tokens",
    "input is too long",
    "exceeds the maximum number of tokens",
    "input token count",
    "reduce the length",
    "too large for model",
];

/// Whether an error answer (`status`, its body) says the request did not fit the window, and
/// the window it names if it names one ("maximum context length is 8192 tokens").
pub(super) fn context_too_long(status: u16, body: &str) -> Option<Option<u64>> {
    if !matches!(status, 400 | 413 | 422 | 500) {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    if !CONTEXT_SIGNS.iter().any(|sign| lower.contains(sign)) {
        return None;
    }
    Some(named_limit(&lower))
}

/// The window an error message names: the number after "context length is", "maximum of",
/// "context window of", "n_ctx"… (the first number after such words, when it looks like a
/// window: at least 512).
fn named_limit(lower: &str) -> Option<u64> {
    const BEFORE: &[&str] = &[
        "context length is",
        "context length of",
        "context window of",
        "maximum of",
        "n_ctx",
        "limit of",
        "maximum context length",
    ];
    BEFORE.iter().find_map(|words| {
        let at = lower.find(words)? + words.len();
        let digits: String = lower[at..]
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .collect();
        digits.replace(',', "").parse::<u64>().ok().filter(|n| *n >= 512)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_s_wording_of_a_too_long_prompt_is_recognised() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(context_too_long(400, openai), Some(Some(8192)));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert_eq!(context_too_long(400, anthropic), Some(None));
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#;
        assert_eq!(context_too_long(400, llama), Some(Some(4096)));
        let gemini = r#"{"error":{"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}}"#;
        assert!(context_too_long(400, gemini).is_some());
        assert_eq!(context_too_long(400, r#"{"error":{"message":"model not found"}}"#), None);
        assert_eq!(context_too_long(401, openai), None, "only a bad request can be a long one");
    }
}
