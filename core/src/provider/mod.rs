//! Model providers. One today: OpenAI-compatible Chat Completions with streaming, which
//! covers OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server and LM Studio.

pub mod discovery;
pub mod openai;
pub mod sse;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
    Usage {
        input_tokens: u64,
        output_tokens: u64,
    },
    Finish(FinishReason),
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
    fn parse(s: &str) -> Self {
        match s {
            "stop" | "end_turn" | "eos" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" | "refusal" => FinishReason::ContentFilter,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
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
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCallRequest>) -> Self {
        Self { role: Role::Assistant, content: content.into(), tool_calls, tool_call_id: None }
    }
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { role: Role::Tool, content: content.into(), tool_calls: Vec::new(), tool_call_id: Some(call_id.into()) }
    }
}

/// A complete tool call requested by the model (Chat Completions `tool_calls[]` shape).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolCallRequest {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
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
    pub name: &'static str,
    pub description: &'static str,
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

/// Why a model request failed. Messages are written for the person reading them in the editor.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("model provider returned {status}{}: {hint}", detail_suffix(.detail))]
    Status { status: String, code: u16, detail: Option<String>, hint: String },
    #[error(
        "could not connect to the model provider at {url}: {reason}: check CORVID_BASE_URL and that the server is running"
    )]
    Connect { url: String, reason: String },
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
