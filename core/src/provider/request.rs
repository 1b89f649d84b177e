//! Shared by every provider: sending a streaming request with bounded retries, and turning
//! HTTP failures into [`ProviderError`]s a person can act on.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::{connect_error, context_too_long, truncate};
use super::stream::{ChatStream, Decode};
use super::{Endpoint, ProviderError, ProviderKind};

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    /// The first backoff; each retry doubles it (with jitter) unless the server says when.
    pub base_delay: Duration,
    /// The longest one wait, even when the server asks for more.
    pub max_delay: Duration,
    /// The longest all of one request's waits together: past it the error stands.
    pub max_total: Duration,
}

/// A wait before a retry, as it begins (the caller may tell the user about a long one).
#[derive(Debug, Clone)]
pub struct RetryWait {
    pub delay: Duration,
    /// The attempt that failed (1 = the first).
    pub attempt: u32,
    pub error: String,
}

/// How a model request goes out, whatever it asks: the HTTP client, the endpoint (URL and
/// credentials), how failed starts are retried, and how long the stream may stay silent. A
/// turn holds the same for every request it makes; only the [`super::ChatParams`] change.
pub struct Call<'a> {
    pub http: &'a reqwest::Client,
    pub endpoint: &'a Endpoint,
    pub retry: RetryPolicy,
    pub stall_timeout: Duration,
    /// Told of each wait before a retry.
    pub waits: Option<&'a tokio::sync::mpsc::UnboundedSender<RetryWait>>,
}

/// What the endpoint's provider makes of one request: where it is posted, its body, and the
/// decoder of the streamed answer.
pub(super) struct Wire {
    pub url: String,
    pub body: serde_json::Value,
    pub decoder: Box<dyn Decode>,
}

/// Outcome of starting a request: either a stream, or cancelled before it began.
pub enum Started {
    Stream(ChatStream),
    Cancelled,
}

/// Posts `wire`'s body to its URL; on success the response is decoded by its decoder. Retries
/// 429, 5xx (Anthropic's 529 "overloaded" included) and connection failures, with exponential
/// backoff that honours `Retry-After`. `model` is named in error hints.
pub(super) async fn start(
    call: &Call<'_>,
    wire: Wire,
    model: &str,
    cancel: &CancellationToken,
) -> Result<Started, ProviderError> {
    let Call { http, endpoint, retry, stall_timeout, waits } = call;
    let Wire { url, body, decoder } = wire;
    let url = url.as_str();
    let target = Target { kind: endpoint.kind, model, url };
    let mut attempt = 0;
    let mut waited = Duration::ZERO;
    loop {
        let send = endpoint.authorize(http.post(url)).json(&body).send();
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(Started::Cancelled),
            r = send => r,
        };
        let (error, retry_after) = match result {
            Ok(resp) if resp.status().is_success() => {
                return Ok(Started::Stream(ChatStream::new(resp, *stall_timeout, decoder)));
            }
            Ok(resp) => {
                let retry_after = retry_after(resp.headers(), std::time::SystemTime::now());
                let status = resp.status();
                let body = resp.text().await.unwrap_or_default();
                if let Some(limit) = context_too_long(status.as_u16(), &body) {
                    let detail = detail_from_body(&body).unwrap_or_else(|| status.to_string());
                    return Err(ProviderError::ContextTooLong { detail, limit });
                }
                let detail = detail_from_body(&body);
                let retryable = status.as_u16() == 429 || status.is_server_error();
                let err = status_error(status, detail, attempt, &target);
                if !retryable {
                    return Err(err);
                }
                (err, retry_after)
            }
            Err(e) => {
                let (err, retryable) = connect_error(url, &e);
                if !retryable {
                    return Err(err);
                }
                (err, None)
            }
        };
        if attempt >= retry.max_retries {
            return Err(error);
        }
        let delay = retry_after.unwrap_or_else(|| backoff(retry.base_delay, attempt)).min(retry.max_delay);
        if waited + delay > retry.max_total {
            tracing::warn!(error = %error, waited_ms = waited.as_millis() as u64, "model request failed; retries have waited long enough");
            return Err(error);
        }
        waited += delay;
        tracing::warn!(error = %error, attempt, delay_ms = delay.as_millis() as u64, "model request failed; retrying");
        if let Some(waits) = waits {
            let _ = waits.send(RetryWait { delay, attempt: attempt + 1, error: error.to_string() });
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(Started::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

/// When the server asks for the retry: `retry-after-ms` (OpenAI's), else `Retry-After` in
/// seconds or as an HTTP date (`now` is the clock it is measured from).
fn retry_after(headers: &reqwest::header::HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|ms| ms.is_finite()) {
        return Some(Duration::from_secs_f64(ms.clamp(0.0, 86_400_000.0) / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>()
        && secs.is_finite()
    {
        return Some(Duration::from_secs_f64(secs.clamp(0.0, 86_400.0)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Exponential backoff with ±25 % jitter, so clients that failed together do not retry
/// together. The randomness comes from a v4 UUID (already a dependency) rather than a new crate.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(2u32.saturating_pow(attempt));
    let unit = (uuid::Uuid::new_v4().as_u128() % 1000) as f64 / 1000.0; // [0, 1)
    exp.mul_f64(0.75 + unit * 0.5)
}

/// The provider's own explanation from an error body: OpenAI's `{"error":{"message"}}`,
/// Anthropic's `{"type":"error","error":{"type","message"}}`, or the raw text.
pub(super) fn detail_from_body(text: &str) -> Option<String> {
    let from_json = serde_json::from_str::<serde_json::Value>(text).ok().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str().map(str::to_string))
    });
    let detail = from_json.unwrap_or_else(|| text.to_string());
    let detail = detail.trim();
    (!detail.is_empty()).then(|| truncate(detail, 300))
}

/// What a request was aimed at: what the hints of its errors tell a person to check.
struct Target<'a> {
    kind: ProviderKind,
    model: &'a str,
    url: &'a str,
}

fn status_error(
    status: reqwest::StatusCode,
    detail: Option<String>,
    attempt: u32,
    target: &Target<'_>,
) -> ProviderError {
    let Target { kind, model, url } = target;
    let code = status.as_u16();
    let hint = match code {
        401 | 403 => format!("check {}", kind.key_hint()),
        404 => format!("check CORVID_MODEL (`{model}`) and CORVID_BASE_URL ({url})"),
        400 | 422 => format!("the provider rejected the request; check that model `{model}` exists and supports chat"),
        429 => format!("rate limited after {} attempts; wait a moment and try again", attempt + 1),
        529 => format!("the provider is overloaded ({} attempts); try again later", attempt + 1),
        _ if status.is_server_error() => format!("the provider failed after {} attempts; try again later", attempt + 1),
        _ => "unexpected answer from the provider".to_string(),
    };
    // `StatusCode`'s Display says "<unknown status code>" for non-IANA codes such as 529.
    let status = match (code, status.canonical_reason()) {
        (_, Some(reason)) => format!("{code} {reason}"),
        (529, None) => "529 Overloaded".to_string(),
        (_, None) => code.to_string(),
    };
    ProviderError::Status { status, code, detail, hint }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_milliseconds_seconds_or_a_date() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let now = httpdate::parse_http_date("Sat, 05 Dec 2026 12:00:00 GMT").expect("date");
        let of = |pairs: &[(&'static str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_str(v).expect("value"));
            }
            retry_after(&h, now)
        };
        assert_eq!(of(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(of(&[("retry-after", "1.5")]), Some(Duration::from_millis(1500)));
        assert_eq!(of(&[("retry-after", "Sat, 05 Dec 2026 12:00:30 GMT")]), Some(Duration::from_secs(30)));
        assert_eq!(of(&[("retry-after", "Sat, 05 Dec 2026 11:00:00 GMT")]), Some(Duration::ZERO), "a past date: now");
        assert_eq!(of(&[("retry-after-ms", "250"), ("retry-after", "9")]), Some(Duration::from_millis(250)));
        assert_eq!(of(&[("retry-after", "soon")]), None);
        assert_eq!(of(&[]), None);
    }

    #[test]
    fn backoff_doubles_with_jitter() {
        for attempt in 0..5 {
            let d = backoff(Duration::from_millis(400), attempt).as_secs_f64();
            let exp = 0.4 * 2f64.powi(attempt as i32);
            assert!(d >= exp * 0.75 && d <= exp * 1.25, "attempt {attempt}: {d}");
        }
    }

    #[test]
    fn anthropic_error_bodies_become_the_detail() {
        let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(detail_from_body(body).as_deref(), Some("invalid x-api-key"));
        assert_eq!(detail_from_body("  ").as_deref(), None);
        let target = Target { kind: ProviderKind::Anthropic, model: "m", url: "u" };
        let e = status_error(reqwest::StatusCode::from_u16(529).expect("status"), None, 2, &target);
        assert_eq!(
            e.to_string(),
            "model provider returned 529 Overloaded: the provider is overloaded (3 attempts); try again later"
        );
        let e = status_error(reqwest::StatusCode::UNAUTHORIZED, None, 0, &target);
        assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
    }
}
