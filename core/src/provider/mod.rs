//! Model providers: OpenAI-compatible Chat Completions (OpenAI, OpenRouter, Ollama, vLLM,
//! llama.cpp server, LM Studio), OpenAI's Responses API and the Anthropic Messages API, all
//! streamed over SSE.
//!
//! The agent talks to [`start_chat`] only; the endpoint's [`ProviderKind`] picks the wire
//! format. The retry loop, error mapping and the stall-guarded stream are shared
//! ([`request`], [`stream`]); each provider contributes a request body and an SSE decoder.

pub mod anthropic;
pub mod discovery;
mod error;
mod fault;
pub mod openai;
mod request;
mod responses;
pub mod sse;
mod stream;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use error::ProviderError;
pub use request::{Call, RetryPolicy, RetryWait, Started};
pub use stream::ChatStream;

/// Which wire protocol an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`, bearer key).
    OpenAi,
    /// Anthropic Messages (`POST {base}/messages`, `x-api-key`).
    Anthropic,
    /// OpenAI Responses (`POST {base}/responses`, bearer key): OpenAI's codex models, and
    /// reasoning carried through a tool loop. Chosen by itself for a model the catalog says
    /// answers only there, on OpenAI's own API ([`ChatParams::responses_only`]).
    OpenAiResponses,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAiResponses => "openai-responses",
        }
    }

    /// Where the provider's own API answers: the base URL when none is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        }
    }

    /// Where the key comes from, for error hints.
    pub fn key_hint(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "CORVID_API_KEY (or OPENAI_API_KEY)",
            ProviderKind::Anthropic => "CORVID_API_KEY (or ANTHROPIC_API_KEY)",
        }
    }
}

/// A provider kind Corvid does not speak. It holds the name as given; the config adds where it
/// was given.
#[derive(Debug, thiserror::Error)]
#[error(
    "unsupported provider `{0}`: Corvid supports `openai` (any OpenAI-compatible Chat Completions server), `openai-responses` (OpenAI's Responses API) and `anthropic` (the Anthropic Messages API)"
)]
pub struct UnknownProvider(pub String);

impl std::str::FromStr for ProviderKind {
    type Err = UnknownProvider;

    /// The names of the config file's `kind` and `CORVID_PROVIDER`: the inverse of [`ProviderKind::as_str`].
    fn from_str(name: &str) -> Result<Self, UnknownProvider> {
        match name {
            "openai" => Ok(ProviderKind::OpenAi),
            "anthropic" => Ok(ProviderKind::Anthropic),
            "openai-responses" => Ok(ProviderKind::OpenAiResponses),
            other => Err(UnknownProvider(other.to_string())),
        }
    }
}

/// Connection details of one endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub kind: ProviderKind,
    pub base_url: String,
    pub api_key: Option<String>,
}

impl Endpoint {
    /// `path` under the API's root (for Anthropic, with or without `/v1` in the base URL).
    pub fn url(&self, path: &str) -> String {
        let root = match self.kind {
            ProviderKind::Anthropic => anthropic::api_root(&self.base_url),
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => self.base_url.trim_end_matches('/').to_string(),
        };
        format!("{root}/{}", path.trim_start_matches('/'))
    }

    /// The wire protocol a request speaks: the endpoint's, except that a model that answers
    /// only on the Responses API gets it on OpenAI's own API.
    pub fn wire_for(&self, params: &ChatParams<'_>) -> ProviderKind {
        match self.kind {
            ProviderKind::OpenAi if params.responses_only && self.is_openai_own() => ProviderKind::OpenAiResponses,
            kind => kind,
        }
    }

    /// Whether this is OpenAI's own API (which takes `prompt_cache_key`; other servers may
    /// refuse an unknown field).
    pub fn is_openai_own(&self) -> bool {
        self.base_url.starts_with("https://api.openai.com/")
    }

    /// Adds the credentials (and, for Anthropic, the API version every request must name).
    pub fn authorize(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.kind {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => match &self.api_key {
                Some(key) => req.bearer_auth(key),
                None => req,
            },
            ProviderKind::Anthropic => {
                let req = req.header("anthropic-version", anthropic::API_VERSION);
                match &self.api_key {
                    Some(key) => req.header("x-api-key", key),
                    None => req,
                }
            }
        }
    }
}

/// What one model request asks for, whatever the provider.
#[derive(Debug, Clone, Copy)]
pub struct ChatParams<'a> {
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    pub tools: &'a [ToolSpec],
    /// Extended-thinking budget in tokens; 0 = off. Only the Anthropic provider uses it.
    pub thinking_budget: u32,
    /// Upper bound of the answer's length (Anthropic requires one; OpenAI's is left unset).
    pub max_output_tokens: u32,
    /// The model takes images: user messages carry their `images`.
    pub images: bool,
    /// The session's id: the prompt-cache key where the server takes one (OpenAI's own API).
    pub cache_key: Option<&'a str>,
    /// The model is Claude: a Chat Completions route to it (OpenRouter) takes Anthropic's
    /// cache marks.
    pub claude: bool,
    /// The model wants its `reasoning_content` back in a tool loop (per the catalog).
    pub send_reasoning: bool,
    /// The reasoning effort to ask for (Responses, and OpenAI's own Chat Completions).
    pub effort: Option<&'a str>,
    /// The model answers only on the Responses API (per the catalog): on OpenAI's own API an
    /// `openai` endpoint speaks Responses to it.
    pub responses_only: bool,
}

/// Starts a streaming model request as `call` says (endpoint, retries, stall timeout).
/// Retries 429, 5xx and connection failures (bounded, with backoff that honours
/// `Retry-After`); nothing is retried once the stream has begun.
pub async fn start_chat(
    call: &Call<'_>,
    params: &ChatParams<'_>,
    cancel: &CancellationToken,
) -> Result<Started, ProviderError> {
    let endpoint = call.endpoint;
    let wire = match endpoint.wire_for(params) {
        ProviderKind::OpenAiResponses => request::Wire {
            url: endpoint.url("responses"),
            body: responses::request_body(params),
            decoder: Box::new(responses::Decoder::default()),
        },
        ProviderKind::OpenAi => request::Wire {
            url: endpoint.url("chat/completions"),
            body: openai::request_body(params, endpoint.is_openai_own()),
            decoder: Box::new(openai::Decoder::default()),
        },
        ProviderKind::Anthropic => request::Wire {
            url: endpoint.url("messages"),
            body: anthropic::request_body(params),
            decoder: Box::new(anthropic::Decoder::default()),
        },
    };
    request::start(call, wire, params.model, cancel).await
}

/// One thing the model said, in stream order.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    Text(String),
    Reasoning(String),
    /// A fragment of a tool call (tools arrive in a later issue; deltas are already parsed).
    ToolCallDelta {
        index: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    Usage(TokenUsage),
    /// What the provider attached to a tool call, to go back with it (Gemini's thought
    /// signature: [`ToolCallRequest::extra_content`]).
    ToolCallExtra {
        index: u32,
        extra: Value,
    },
    /// A complete provider-specific reasoning block that must be sent back verbatim with the
    /// assistant message (Anthropic's `thinking` block with its signature, or
    /// `redacted_thinking`; a Responses `reasoning` item; a Chat Completions server's
    /// `reasoning_content`, as `{"type": "reasoning_content", "text"}`). Its text was already
    /// streamed as [`ModelEvent::Reasoning`].
    ReasoningBlock(Value),
    Finish(FinishReason),
}

/// What one request used. `input_tokens` is everything the request put in the context,
/// cached or not (how full the window is); the cache counts are the parts of it read from and
/// written to the provider's prompt cache, priced at their own rates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ContentFilter,
    ToolCalls,
    Other(String),
}

impl FinishReason {
    pub(crate) fn parse(s: &str) -> Self {
        match s {
            "stop" | "end_turn" | "eos" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" | "refusal" => FinishReason::ContentFilter,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "stop_sequence" => FinishReason::Stop,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// A message of the model's context, in Chat Completions shape.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// Tool calls the assistant made in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// For `role: tool`: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Anthropic thinking blocks (with their signatures) that preceded this assistant
    /// message's text and tool calls. Anthropic requires them back, unchanged, when a tool
    /// loop continues with thinking on, so they are kept and stored with the message. The
    /// OpenAI wire format never sends them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Value>,
    /// Images attached to a user message (files under the data dir's `uploads/`), sent to
    /// models that take images; the text already names them for models that do not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
    /// For the user message that began a turn: its ACP `messageId`, so a rewind to before that
    /// message (`session/fork` with `_meta.corvid.beforeMessage`) knows where the model
    /// context is cut. Never sent to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
}

/// An image stored under `uploads/`, by path: the history stays small and the bytes are read
/// when a request is built.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ImageRef {
    pub mime_type: String,
    pub path: std::path::PathBuf,
}

impl ImageRef {
    /// The image as base64, or `None` if its file is gone (the marker text still says what it was).
    pub fn base64(&self) -> Option<String> {
        use base64::Engine;
        std::fs::read(&self.path).ok().map(|b| base64::engine::general_purpose::STANDARD.encode(b))
    }
}

/// What a model that cannot take images reads after a tool result that holds some: the result's
/// own text says what the image was, this says why the model does not see it.
pub const IMAGES_NOT_SHOWN: &str = "[This model does not take images, so the image is not shown to it.]";

impl ChatMessage {
    /// A tool result's text as the request carries it: with [`IMAGES_NOT_SHOWN`] when it holds
    /// images and the model takes none. Decided per request, so a session that changes models
    /// keeps its images for the ones that can see them.
    pub fn tool_text(&self, images: bool) -> std::borrow::Cow<'_, str> {
        if images || self.images.is_empty() {
            return self.content.as_str().into();
        }
        format!("{}\n{IMAGES_NOT_SHOWN}", self.content).into()
    }

    /// An image as a `data:` URL (Chat Completions' `image_url`, the Responses API's
    /// `input_image`), or `None` if its file is gone.
    pub fn data_urls(&self) -> impl Iterator<Item = String> + '_ {
        self.images.iter().filter_map(|img| img.base64().map(|data| format!("data:{};base64,{data}", img.mime_type)))
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            thinking: Vec::new(),
            images: Vec::new(),
            prompt_id: None,
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            thinking: Vec::new(),
            images: Vec::new(),
            prompt_id: None,
        }
    }
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCallRequest>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
            thinking: Vec::new(),
            images: Vec::new(),
            prompt_id: None,
        }
    }
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            thinking: Vec::new(),
            images: Vec::new(),
            prompt_id: None,
        }
    }
}

/// A complete tool call requested by the model (Chat Completions `tool_calls[]` shape).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolCallRequest {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
    /// What the provider attached to the call and needs back with it: Gemini's
    /// `{"google": {"thought_signature": …}}` (its OpenAI-compatible API refuses the next
    /// request of a tool loop without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_content: Option<Value>,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, as the model produced it.
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionSpec,
}

#[derive(Debug, Clone, Serialize)]
pub struct FunctionSpec {
    /// Built-in tools' names are literals; MCP tools' are made at run time.
    pub name: std::borrow::Cow<'static, str>,
    pub description: std::borrow::Cow<'static, str>,
    pub parameters: Value,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A tool result holding one small PNG (stored in a temp dir), for the bodies' tests.
#[cfg(test)]
pub(crate) fn tool_result_with_image(call_id: &str) -> ChatMessage {
    let dir = std::env::temp_dir().join(format!("corvid-provider-{}", uuid::Uuid::new_v4()));
    let image = crate::tools::image::keep(&dir, b"\x89PNG\r\n\x1a\nfake", "image/png").expect("stored");
    let mut m = ChatMessage::tool_result(call_id, "x.png is an image (image/png, 12 bytes).");
    m.images = vec![image];
    m
}
