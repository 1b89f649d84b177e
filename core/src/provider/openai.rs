//! OpenAI-compatible Chat Completions with streaming (SSE): the request body and the
//! stream decoder. Sending, retries and the stream itself are shared ([`super::request`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::truncate;
use super::stream::{Decode, Events};
use super::{ChatParams, FinishReason, ModelEvent, ProviderError, Role, TokenUsage, ToolCallRequest, ToolSpec};

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "<[ToolSpec]>::is_empty")]
    tools: &'a [ToolSpec],
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
}

/// A [`super::ChatMessage`] as Chat Completions takes it (without the Anthropic-only fields).
#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// A string, or text + image parts for a user message with images.
    content: Value,
    /// The assistant's reasoning, back to a server that wants it in a tool loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "<[ToolCallRequest]>::is_empty")]
    tool_calls: &'a [ToolCallRequest],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The `POST {base}/chat/completions` body. The thinking budget does not apply here.
/// `openai_own`: the server is OpenAI's, which caches by `prompt_cache_key` (the session) and
/// takes `reasoning_effort` (other servers may refuse fields they do not know).
pub(super) fn request_body(p: &ChatParams<'_>, openai_own: bool) -> Value {
    let mut messages: Vec<WireMessage> = Vec::with_capacity(p.messages.len());
    for (i, m) in p.messages.iter().enumerate() {
        messages.push(WireMessage {
            role: m.role.as_str(),
            content: content(m, p.images),
            reasoning_content: p.send_reasoning.then(|| reasoning_of(m)).flatten(),
            tool_calls: &m.tool_calls,
            tool_call_id: m.tool_call_id.as_deref(),
        });
        // A tool message takes only text, and the results of one answer's calls must follow it
        // unbroken: their images go after the last of them, as a user message that names them.
        let run_ends = p.messages.get(i + 1).is_none_or(|next| next.role != Role::Tool);
        if p.images && m.role == Role::Tool && run_ends {
            let first = p.messages[..i].iter().rposition(|m| m.role != Role::Tool).map_or(0, |at| at + 1);
            messages.extend(tool_images(&p.messages[first..=i]));
        }
    }
    if p.claude {
        mark_cache(&mut messages);
    }
    let body = ChatRequest {
        model: p.model,
        messages,
        tools: p.tools,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        prompt_cache_key: p.cache_key.filter(|_| openai_own),
        reasoning_effort: p.effort.filter(|_| openai_own),
    };
    serde_json::to_value(&body).unwrap_or(Value::Null)
}

/// Claude through Chat Completions (OpenRouter passes the marks on to Anthropic): the system
/// prompt and the newest two messages carry a cache mark, as on the Messages API. A mark sits
/// on a text part, so a marked message's text becomes one.
fn mark_cache(messages: &mut [WireMessage<'_>]) {
    let system = messages.iter().position(|m| m.role == "system");
    let newest = messages.len().saturating_sub(2);
    for (i, m) in messages.iter_mut().enumerate() {
        if Some(i) != system && i < newest {
            continue;
        }
        let mark = serde_json::json!({ "type": "ephemeral" });
        match &mut m.content {
            Value::String(text) if !text.is_empty() => {
                m.content = serde_json::json!([{ "type": "text", "text": text, "cache_control": mark }]);
            }
            Value::Array(parts) => {
                if let Some(last) = parts.last_mut() {
                    last["cache_control"] = mark;
                }
            }
            _ => {}
        }
    }
}

/// The `reasoning_content` blocks kept with an assistant message, as one text.
fn reasoning_of(m: &super::ChatMessage) -> Option<String> {
    let texts: Vec<&str> = m
        .thinking
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some(REASONING_CONTENT))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}

/// The type of the reasoning block this decoder keeps (see [`ModelEvent::ReasoningBlock`]).
const REASONING_CONTENT: &str = "reasoning_content";

/// The images of a run of tool results, as one user message that says which calls they came
/// from (none when they hold no image, or their files are gone).
fn tool_images<'a>(results: &[super::ChatMessage]) -> Option<WireMessage<'a>> {
    let mut ids = Vec::new();
    let mut parts = Vec::new();
    for m in results {
        let before = parts.len();
        parts.extend(m.data_urls().map(|url| serde_json::json!({ "type": "image_url", "image_url": { "url": url } })));
        if parts.len() > before {
            ids.push(format!("`{}`", m.tool_call_id.as_deref().unwrap_or_default()));
        }
    }
    if parts.is_empty() {
        return None;
    }
    let text = format!("[{TOOL_IMAGES} {} (its result is above); not sent by the user.]", ids.join(", "));
    parts.insert(0, serde_json::json!({ "type": "text", "text": text }));
    Some(WireMessage {
        role: "user",
        content: Value::Array(parts),
        reasoning_content: None,
        tool_calls: &[],
        tool_call_id: None,
    })
}

/// How the user message that carries tool results' images begins.
pub const TOOL_IMAGES: &str = "Images returned by tool call";

/// A message's content: plain text, or `[text, image_url…]` parts when images go along (a
/// user's; a tool result's go in a message of their own, [`tool_images`]).
fn content(m: &super::ChatMessage, images: bool) -> Value {
    if m.role == Role::Tool {
        return Value::String(m.tool_text(images).into_owned());
    }
    if !images || m.images.is_empty() {
        return Value::String(m.content.clone());
    }
    let mut parts = vec![serde_json::json!({ "type": "text", "text": m.content })];
    for img in &m.images {
        if let Some(data) = img.base64() {
            let url = format!("data:{};base64,{data}", img.mime_type);
            parts.push(serde_json::json!({ "type": "image_url", "image_url": { "url": url } }));
        }
    }
    Value::Array(parts)
}

/// Decodes `chat.completion.chunk` payloads. The reasoning text is also kept whole, to go
/// back with the message to servers that want it (`ChatParams::send_reasoning`).
#[derive(Default)]
pub(super) struct Decoder {
    reasoning: String,
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
    /// Gemini: `{"google": {"thought_signature": …}}`, needed back with the call.
    #[serde(default)]
    extra_content: Option<Value>,
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
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

/// OpenAI (and llama.cpp, vLLM): the part of `prompt_tokens` read from the prompt cache.
#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl Decode for Decoder {
    fn decode(&mut self, payload: &str, out: &mut Events) {
        let payload = payload.trim();
        if payload == "[DONE]" {
            out.end();
            return;
        }
        let chunk: Chunk = match serde_json::from_str(payload) {
            Ok(c) => c,
            Err(_) => {
                out.fail(ProviderError::BadStream(truncate(payload, 200)));
                return;
            }
        };
        if let Some(err) = chunk.error {
            let msg =
                err.get("message").and_then(|m| m.as_str()).map(str::to_string).unwrap_or_else(|| err.to_string());
            out.fail(ProviderError::StreamError(truncate(&msg, 300)));
            return;
        }
        for choice in chunk.choices {
            let delta = choice.delta.unwrap_or_default();
            if let Some(r) = delta.reasoning_content.or(delta.reasoning).filter(|s| !s.is_empty()) {
                self.reasoning.push_str(&r);
                out.push(ModelEvent::Reasoning(r));
            }
            if let Some(t) = delta.content.filter(|s| !s.is_empty()) {
                out.push(ModelEvent::Text(t));
            }
            for tc in delta.tool_calls.unwrap_or_default() {
                let (name, arguments) = match tc.function {
                    Some(f) => (f.name, f.arguments.unwrap_or_default()),
                    None => (None, String::new()),
                };
                out.push(ModelEvent::ToolCallDelta { index: tc.index, id: tc.id, name, arguments });
                if let Some(extra) = tc.extra_content {
                    out.push(ModelEvent::ToolCallExtra { index: tc.index, extra });
                }
            }
            if let Some(reason) = choice.finish_reason {
                if !self.reasoning.is_empty() {
                    let text = std::mem::take(&mut self.reasoning);
                    out.push(ModelEvent::ReasoningBlock(
                        serde_json::json!({ "type": REASONING_CONTENT, "text": text }),
                    ));
                }
                out.finished();
                out.push(ModelEvent::Finish(FinishReason::parse(&reason)));
            }
        }
        if let Some(u) = chunk.usage {
            out.push(ModelEvent::Usage(TokenUsage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
                cache_read_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
                cache_write_tokens: 0,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ChatMessage;

    fn params<'a>(messages: &'a [ChatMessage], claude: bool) -> ChatParams<'a> {
        ChatParams {
            model: "m",
            messages,
            tools: &[],
            thinking_budget: 0,
            max_output_tokens: 1,
            images: false,
            cache_key: Some("sess-1"),
            claude,
            send_reasoning: false,
            effort: Some("high"),
            responses_only: false,
        }
    }

    #[test]
    fn cache_key_and_effort_go_to_openai_s_own_api_only() {
        let history = [ChatMessage::user("hi")];
        let own = request_body(&params(&history, false), true);
        assert_eq!(
            (own["prompt_cache_key"].as_str(), own["reasoning_effort"].as_str()),
            (Some("sess-1"), Some("high"))
        );
        let other = request_body(&params(&history, false), false);
        assert!(other.get("prompt_cache_key").is_none() && other.get("reasoning_effort").is_none(), "{other}");
    }

    #[test]
    fn claude_through_chat_completions_gets_cache_marks_on_the_system_prompt_and_the_newest_two() {
        let history = [
            ChatMessage::system("sys"),
            ChatMessage::user("one"),
            ChatMessage::assistant("two", vec![]),
            ChatMessage::user("three"),
        ];
        let body = request_body(&params(&history, true), false);
        let marked: Vec<bool> = body["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| {
                m["content"].as_array().is_some_and(|parts| parts.iter().any(|p| p.get("cache_control").is_some()))
            })
            .collect();
        assert_eq!(marked, [true, false, true, true]);
        assert_eq!(body["messages"][3]["content"][0]["text"], "three");
        let plain = request_body(&params(&history, false), false);
        assert_eq!(plain["messages"][0]["content"], "sys", "other models keep plain strings");
    }

    #[test]
    fn tool_images_follow_the_run_of_results_as_a_user_message() {
        let call = |id: &str| crate::provider::ToolCallRequest {
            id: id.into(),
            kind: "function".into(),
            function: crate::provider::FunctionCall { name: "read_file".into(), arguments: "{}".into() },
            extra_content: None,
        };
        let history = [
            ChatMessage::user("look"),
            ChatMessage::assistant("", vec![call("a"), call("b")]),
            crate::provider::tool_result_with_image("a"),
            ChatMessage::tool_result("b", "text"),
        ];
        let seeing = ChatParams { images: true, ..params(&history, false) };
        let body = request_body(&seeing, false);
        let messages = body["messages"].as_array().expect("messages");
        let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"], "the results stay together");
        assert!(messages[2]["content"].is_string(), "a tool message holds text only");
        let parts = messages[4]["content"].as_array().expect("parts");
        assert!(parts[0]["text"].as_str().is_some_and(|t| t.contains(TOOL_IMAGES) && t.contains("`a`")), "{parts:?}");
        assert!(parts[1]["image_url"]["url"].as_str().is_some_and(|u| u.starts_with("data:image/png;base64,")));

        let blind = request_body(&params(&history, false), false);
        let messages = blind["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 4, "no image message for a model that takes none");
        let text = messages[2]["content"].as_str().expect("text");
        assert!(text.ends_with(crate::provider::IMAGES_NOT_SHOWN), "{text}");
    }
}
