//! OpenAI-compatible Chat Completions with streaming (SSE), with bounded retries.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::sse::SseDecoder;
use super::{ChatMessage, FinishReason, ModelEvent, ProviderError, ToolSpec};

/// Connection details of one OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: Option<String>,
}

impl Endpoint {
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base_url.trim_end_matches('/'), path.trim_start_matches('/'))
    }

    pub fn authorize(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(key) => req.bearer_auth(key),
            None => req,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "<[ToolSpec]>::is_empty")]
    tools: &'a [ToolSpec],
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// Outcome of starting a request: either a stream, or cancelled before it began.
pub enum Started {
    Stream(ChatStream),
    Cancelled,
}

/// Starts a streaming completion. Retries 429, 5xx and connection failures (bounded, with
/// backoff that honours `Retry-After`); nothing is retried once the stream has begun.
#[allow(clippy::too_many_arguments)]
pub async fn start_chat(
    http: &reqwest::Client,
    endpoint: &Endpoint,
    model: &str,
    messages: &[ChatMessage],
    tools: &[ToolSpec],
    retry: &RetryPolicy,
    stall_timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Started, ProviderError> {
    let url = endpoint.url("chat/completions");
    let body =
        ChatRequest { model, messages, tools, stream: true, stream_options: StreamOptions { include_usage: true } };
    let mut attempt = 0;
    loop {
        let send = endpoint.authorize(http.post(&url)).json(&body).send();
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(Started::Cancelled),
            r = send => r,
        };
        let (error, retry_after) = match result {
            Ok(resp) if resp.status().is_success() => {
                return Ok(Started::Stream(ChatStream::new(resp, stall_timeout)));
            }
            Ok(resp) => {
                let retry_after = resp
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let status = resp.status();
                let detail = error_detail(resp).await;
                let retryable = status.as_u16() == 429 || status.is_server_error();
                let err = status_error(status, detail, model, &url, attempt);
                if !retryable {
                    return Err(err);
                }
                (err, retry_after)
            }
            Err(e) => (ProviderError::Connect { url: url.clone(), reason: connect_reason(&e) }, None),
        };
        if attempt >= retry.max_retries {
            return Err(error);
        }
        let delay = retry_after.unwrap_or(retry.base_delay * 2u32.saturating_pow(attempt)).min(retry.max_delay);
        tracing::warn!(error = %error, attempt, delay_ms = delay.as_millis() as u64, "model request failed; retrying");
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(Started::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

fn connect_reason(e: &reqwest::Error) -> String {
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        reason = s.to_string();
        source = s.source();
    }
    reason
}

async fn error_detail(resp: reqwest::Response) -> Option<String> {
    let text = resp.text().await.ok()?;
    let from_json = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str().map(str::to_string))
    });
    let detail = from_json.unwrap_or(text);
    let detail = detail.trim();
    (!detail.is_empty()).then(|| truncate(detail, 300))
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn status_error(
    status: reqwest::StatusCode,
    detail: Option<String>,
    model: &str,
    url: &str,
    attempt: u32,
) -> ProviderError {
    let code = status.as_u16();
    let hint = match code {
        401 | 403 => "check CORVID_API_KEY (or OPENAI_API_KEY)".to_string(),
        404 => format!("check CORVID_MODEL (`{model}`) and CORVID_BASE_URL ({url})"),
        400 | 422 => format!("the provider rejected the request; check that model `{model}` exists and supports chat"),
        429 => format!("rate limited after {} attempts; wait a moment and try again", attempt + 1),
        _ if status.is_server_error() => format!("the provider failed after {} attempts; try again later", attempt + 1),
        _ => "unexpected answer from the provider".to_string(),
    };
    ProviderError::Status { status: status.to_string(), code, detail, hint }
}

/// The streamed answer, decoded into [`ModelEvent`]s.
pub struct ChatStream {
    body: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    decoder: SseDecoder,
    queue: VecDeque<Result<ModelEvent, ProviderError>>,
    stall_timeout: Duration,
    finished: bool,
    done: bool,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<UsageChunk>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter, Ollama.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallChunk>>,
}

#[derive(Deserialize)]
struct ToolCallChunk {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionChunk>,
}

#[derive(Deserialize)]
struct FunctionChunk {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct UsageChunk {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl ChatStream {
    fn new(resp: reqwest::Response, stall_timeout: Duration) -> Self {
        let body = resp.bytes_stream().map(|r| r.map(|b| b.to_vec())).boxed();
        Self {
            body,
            decoder: SseDecoder::default(),
            queue: VecDeque::new(),
            stall_timeout,
            finished: false,
            done: false,
        }
    }

    /// The next event; `None` once the stream has ended cleanly.
    pub async fn next(&mut self) -> Option<Result<ModelEvent, ProviderError>> {
        loop {
            if let Some(ev) = self.queue.pop_front() {
                return Some(ev);
            }
            if self.done {
                return None;
            }
            let chunk = match tokio::time::timeout(self.stall_timeout, self.body.next()).await {
                Err(_) => {
                    self.done = true;
                    return Some(Err(ProviderError::Stalled(self.stall_timeout.as_secs())));
                }
                Ok(c) => c,
            };
            let mut payloads = Vec::new();
            match chunk {
                Some(Ok(bytes)) => self.decoder.feed(&bytes, |p| payloads.push(p)),
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(ProviderError::StreamError(connect_reason(&e))));
                }
                None => {
                    self.decoder.finish(|p| payloads.push(p));
                    self.done = true;
                }
            }
            for payload in payloads {
                self.decode(&payload);
            }
            if self.done && !self.finished && self.queue.iter().all(Result::is_ok) {
                self.queue.push_back(Err(ProviderError::Truncated));
            }
        }
    }

    fn decode(&mut self, payload: &str) {
        if self.finished && self.queue.back().is_some_and(Result::is_err) {
            return;
        }
        let payload = payload.trim();
        if payload == "[DONE]" {
            self.finished = true;
            self.done = true;
            return;
        }
        let chunk: Chunk = match serde_json::from_str(payload) {
            Ok(c) => c,
            Err(_) => {
                self.fail(ProviderError::BadStream(truncate(payload, 200)));
                return;
            }
        };
        if let Some(err) = chunk.error {
            let msg =
                err.get("message").and_then(|m| m.as_str()).map(str::to_string).unwrap_or_else(|| err.to_string());
            self.fail(ProviderError::StreamError(truncate(&msg, 300)));
            return;
        }
        for choice in chunk.choices {
            let delta = choice.delta.unwrap_or_default();
            if let Some(r) = delta.reasoning_content.or(delta.reasoning).filter(|s| !s.is_empty()) {
                self.queue.push_back(Ok(ModelEvent::Reasoning(r)));
            }
            if let Some(t) = delta.content.filter(|s| !s.is_empty()) {
                self.queue.push_back(Ok(ModelEvent::Text(t)));
            }
            for tc in delta.tool_calls.unwrap_or_default() {
                let (name, arguments) = match tc.function {
                    Some(f) => (f.name, f.arguments.unwrap_or_default()),
                    None => (None, String::new()),
                };
                self.queue.push_back(Ok(ModelEvent::ToolCallDelta { index: tc.index, id: tc.id, name, arguments }));
            }
            if let Some(reason) = choice.finish_reason {
                self.finished = true;
                self.queue.push_back(Ok(ModelEvent::Finish(FinishReason::parse(&reason))));
            }
        }
        if let Some(u) = chunk.usage {
            self.queue
                .push_back(Ok(ModelEvent::Usage { input_tokens: u.prompt_tokens, output_tokens: u.completion_tokens }));
        }
    }

    fn fail(&mut self, e: ProviderError) {
        self.queue.push_back(Err(e));
        self.done = true;
        self.finished = true;
    }
}
