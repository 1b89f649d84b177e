//! Anthropic Messages API with streaming (SSE): the request body (with the history turned
//! into alternating user/assistant content blocks) and the stream decoder. Sending, retries
//! and the stream itself are shared ([`super::request`]).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::truncate;
use super::stream::{Decode, Events};
use super::{ChatMessage, ChatParams, FinishReason, ModelEvent, ProviderError, Role};

/// The `anthropic-version` header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// The thought levels offered for models with extended thinking: (id, name, budget_tokens).
/// Anthropic's minimum budget is 1024; `max_tokens` is raised above the budget per request.
pub const THOUGHT_LEVELS: &[(&str, &str, u32)] =
    &[("off", "Off", 0), ("low", "Low", 2048), ("medium", "Medium", 8192), ("high", "High", 24576)];

/// The thinking budget of a thought level id (`None`: not a level).
pub fn thinking_budget(level: &str) -> Option<u32> {
    THOUGHT_LEVELS.iter().find(|(id, ..)| *id == level).map(|(.., budget)| *budget)
}

/// Whether `model` supports extended thinking. Anthropic has no capability endpoint, so this
/// goes by name: Claude 3.7 Sonnet, and every Sonnet/Opus/Haiku of generation 4 or later
/// (`claude-sonnet-4-…`, `claude-opus-4-1`, `claude-haiku-4-5`, a future `claude-sonnet-5`).
/// Older models (`claude-3-5-sonnet-…`, `claude-3-haiku-…`) reject the `thinking` field.
pub fn supports_thinking(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    if m.contains("claude-3-7") {
        return true;
    }
    ["claude-sonnet-", "claude-opus-", "claude-haiku-"].iter().any(|family| {
        m.find(family)
            .map(|i| &m[i + family.len()..])
            .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>())
            .and_then(|generation| generation.parse::<u32>().ok())
            .is_some_and(|generation| generation >= 4)
    })
}

/// The `POST {base}/messages` body.
pub(super) fn request_body(p: &ChatParams<'_>) -> Value {
    let system: Vec<&str> = p.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let thinking = p.thinking_budget > 0 && thinking_can_continue(p.messages);
    if p.thinking_budget > 0 && !thinking {
        tracing::debug!("thinking is off for this request: it continues a tool loop begun without thinking");
    }
    let mut body = json!({
        "model": p.model,
        // With thinking on, the budget is part of max_tokens and must stay below it.
        "max_tokens": if thinking { p.thinking_budget + p.max_output_tokens } else { p.max_output_tokens },
        "messages": messages(p.messages, thinking, p.images),
        "stream": true,
    });
    let obj = body.as_object_mut().expect("an object");
    let system = system.join("\n\n");
    if !system.trim().is_empty() {
        obj.insert("system".into(), Value::String(system));
    }
    if !p.tools.is_empty() {
        let tools: Vec<Value> = p
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.function.name,
                    "description": t.function.description,
                    "input_schema": t.function.parameters,
                })
            })
            .collect();
        obj.insert("tools".into(), Value::Array(tools));
    }
    if thinking {
        obj.insert("thinking".into(), json!({ "type": "enabled", "budget_tokens": p.thinking_budget }));
    }
    body
}

/// With thinking on, Anthropic requires the assistant message that a tool loop continues from
/// to start with its thinking block. When that message has none (the thought level was off
/// when it was produced, or it came from another provider), thinking stays off for the rest
/// of the loop instead of failing the request; the next prompt turns it on again.
fn thinking_can_continue(messages: &[ChatMessage]) -> bool {
    let last_user_text = messages.iter().rposition(|m| m.role == Role::User).unwrap_or(0);
    messages[last_user_text..]
        .iter()
        .filter(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .all(|m| !m.thinking.is_empty())
}

/// The history as Anthropic messages: roles alternate (tool results and the user's next text
/// share one user message), no empty text blocks, tool calls as `tool_use` blocks.
fn messages(history: &[ChatMessage], thinking: bool, images: bool) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in history {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => {
                let mut blocks: Vec<Value> = Vec::new();
                if images {
                    for img in &m.images {
                        if let Some(data) = img.base64() {
                            let source = json!({ "type": "base64", "media_type": img.mime_type, "data": data });
                            blocks.push(json!({ "type": "image", "source": source }));
                        }
                    }
                }
                blocks.extend(text_block(&m.content));
                ("user", blocks)
            }
            Role::Tool => {
                let mut block =
                    json!({ "type": "tool_result", "tool_use_id": m.tool_call_id.clone().unwrap_or_default() });
                if !m.content.is_empty() {
                    block["content"] = Value::String(m.content.clone());
                }
                ("user", vec![block])
            }
            Role::Assistant => {
                // Thinking blocks go back only on requests that think: they are signed for it.
                let mut blocks: Vec<Value> = if thinking { m.thinking.clone() } else { Vec::new() };
                blocks.extend(text_block(&m.content));
                for call in &m.tool_calls {
                    let input = serde_json::from_str::<Value>(&call.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks
                        .push(json!({ "type": "tool_use", "id": call.id, "name": call.function.name, "input": input }));
                }
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter().map(|(role, content)| json!({ "role": role, "content": content })).collect()
}

/// A text block, unless the text is blank (Anthropic rejects empty and whitespace-only ones).
fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({ "type": "text", "text": text }))
}

/// One streamed event; the payload's `type` mirrors the SSE `event:` name.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u32,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u32,
        delta: Value,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    /// Event types added later are skipped, as Anthropic's versioning policy asks.
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize, Default)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

/// Decodes a Messages stream. Thinking blocks are collected (text and signature) so they can
/// be sent back with the assistant message.
#[derive(Default)]
pub(super) struct Decoder {
    input_tokens: u64,
    /// Open thinking blocks by index.
    thinking: HashMap<u32, Value>,
}

impl Decode for Decoder {
    fn decode(&mut self, payload: &str, out: &mut Events) {
        let event: Event = match serde_json::from_str(payload.trim()) {
            Ok(e) => e,
            Err(_) => {
                out.fail(ProviderError::BadStream(truncate(payload.trim(), 200)));
                return;
            }
        };
        match event {
            Event::MessageStart { message } => {
                if let Some(u) = message.usage {
                    // Everything the request put in the context, cached or not.
                    self.input_tokens = u.input_tokens
                        + u.cache_creation_input_tokens.unwrap_or(0)
                        + u.cache_read_input_tokens.unwrap_or(0);
                }
            }
            Event::ContentBlockStart { index, content_block } => {
                let str_of = |k: &str| content_block.get(k).and_then(Value::as_str).map(str::to_string);
                match content_block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = str_of("text").filter(|t| !t.is_empty()) {
                            out.push(ModelEvent::Text(t));
                        }
                    }
                    Some("thinking") => {
                        let text = str_of("thinking").unwrap_or_default();
                        if !text.is_empty() {
                            out.push(ModelEvent::Reasoning(text.clone()));
                        }
                        let signature = str_of("signature").unwrap_or_default();
                        self.thinking
                            .insert(index, json!({ "type": "thinking", "thinking": text, "signature": signature }));
                    }
                    // Encrypted reasoning: nothing to show, but it must go back as it came.
                    Some("redacted_thinking") => {
                        self.thinking.insert(index, content_block.clone());
                    }
                    Some("tool_use") => out.push(ModelEvent::ToolCallDelta {
                        index,
                        id: str_of("id"),
                        name: str_of("name"),
                        arguments: String::new(),
                    }),
                    _ => {}
                }
            }
            Event::ContentBlockDelta { index, delta } => {
                let field = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let t = field("text");
                        if !t.is_empty() {
                            out.push(ModelEvent::Text(t));
                        }
                    }
                    Some("thinking_delta") => {
                        let t = field("thinking");
                        if let Some(Value::String(s)) =
                            self.thinking.get_mut(&index).and_then(|b| b.get_mut("thinking"))
                        {
                            s.push_str(&t);
                        }
                        if !t.is_empty() {
                            out.push(ModelEvent::Reasoning(t));
                        }
                    }
                    Some("signature_delta") => {
                        if let Some(Value::String(s)) =
                            self.thinking.get_mut(&index).and_then(|b| b.get_mut("signature"))
                        {
                            s.push_str(&field("signature"));
                        }
                    }
                    Some("input_json_delta") => out.push(ModelEvent::ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments: field("partial_json"),
                    }),
                    _ => {}
                }
            }
            Event::ContentBlockStop { index } => {
                if let Some(block) = self.thinking.remove(&index) {
                    out.push(ModelEvent::ReasoningBlock(block));
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(u) = usage {
                    out.push(ModelEvent::Usage { input_tokens: self.input_tokens, output_tokens: u.output_tokens });
                }
                if let Some(reason) = delta.stop_reason {
                    out.finished();
                    out.push(ModelEvent::Finish(FinishReason::parse(&reason)));
                }
            }
            Event::MessageStop => out.end(),
            Event::Ping | Event::Unknown => {}
            Event::Error { error } => {
                let message = error.get("message").and_then(Value::as_str).map(str::to_string);
                let message = match (error.get("type").and_then(Value::as_str), message) {
                    (Some(kind), Some(m)) => format!("{m} ({kind})"),
                    (_, Some(m)) => m,
                    (_, None) => error.to_string(),
                };
                out.fail(ProviderError::StreamError(truncate(&message, 300)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{FunctionCall, ToolCallRequest};

    fn call(id: &str, name: &str, args: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall { name: name.into(), arguments: args.into() },
        }
    }

    fn params<'a>(messages: &'a [ChatMessage], budget: u32) -> ChatParams<'a> {
        ChatParams {
            model: "claude-sonnet-4-5",
            messages,
            tools: &[],
            thinking_budget: budget,
            max_output_tokens: 8192,
            images: false,
        }
    }

    #[test]
    fn thinking_models_by_name() {
        for m in [
            "claude-3-7-sonnet-20250219",
            "claude-sonnet-4-20250514",
            "claude-opus-4-1",
            "claude-haiku-4-5",
            "claude-sonnet-5",
        ] {
            assert!(supports_thinking(m), "{m}");
        }
        for m in ["claude-3-5-sonnet-20241022", "claude-3-haiku-20240307", "claude-3-opus-latest", "gpt-4o"] {
            assert!(!supports_thinking(m), "{m}");
        }
    }

    #[test]
    fn history_alternates_roles_and_merges_tool_results() {
        let history = vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("read two files"),
            ChatMessage::assistant(
                "",
                vec![call("a", "read_file", r#"{"path":"x"}"#), call("b", "read_file", "not json")],
            ),
            ChatMessage::tool_result("a", "X"),
            ChatMessage::tool_result("b", ""),
            ChatMessage::user("and now?"),
            ChatMessage::assistant("  ", vec![]),
        ];
        let body = request_body(&params(&history, 0));
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["max_tokens"], 8192);
        assert!(body.get("thinking").is_none());
        assert_eq!(
            body["messages"],
            json!([
                { "role": "user", "content": [{ "type": "text", "text": "read two files" }] },
                { "role": "assistant", "content": [
                    { "type": "tool_use", "id": "a", "name": "read_file", "input": { "path": "x" } },
                    { "type": "tool_use", "id": "b", "name": "read_file", "input": {} },
                ]},
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "a", "content": "X" },
                    { "type": "tool_result", "tool_use_id": "b" },
                    { "type": "text", "text": "and now?" },
                ]},
            ])
        );
    }

    #[test]
    fn thinking_blocks_go_back_in_a_tool_loop() {
        let mut assistant = ChatMessage::assistant("let me look", vec![call("a", "read_file", "{}")]);
        let block = json!({ "type": "thinking", "thinking": "hmm", "signature": "sig" });
        assistant.thinking = vec![block.clone()];
        let history = vec![ChatMessage::user("go"), assistant, ChatMessage::tool_result("a", "ok")];
        let body = request_body(&params(&history, 2048));
        assert_eq!(body["thinking"], json!({ "type": "enabled", "budget_tokens": 2048 }));
        assert_eq!(body["max_tokens"], 2048 + 8192);
        assert_eq!(body["messages"][1]["content"][0], block);
        // A loop begun without thinking continues without it.
        let history = vec![
            ChatMessage::user("go"),
            ChatMessage::assistant("", vec![call("a", "read_file", "{}")]),
            ChatMessage::tool_result("a", "ok"),
        ];
        assert!(request_body(&params(&history, 2048)).get("thinking").is_none());
    }

    fn decode_all(payloads: &[Value]) -> (Vec<Result<ModelEvent, String>>, Events) {
        let mut d = Decoder::default();
        let mut events = Events::default();
        for p in payloads {
            d.decode(&p.to_string(), &mut events);
        }
        let out = events.drain().map(|r| r.map_err(|e| e.to_string())).collect();
        (out, events)
    }

    #[test]
    fn decodes_a_stream_with_thinking_text_and_a_tool_call() {
        let (events, _) = decode_all(&[
            json!({"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S1"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"ping"}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"tu1","name":"read_file","input":{}}}),
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}),
            json!({"type":"content_block_stop","index":2}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}),
            json!({"type":"message_stop"}),
        ]);
        let ok: Vec<ModelEvent> = events.into_iter().map(|e| e.expect("ok")).collect();
        assert_eq!(
            ok,
            vec![
                ModelEvent::Reasoning("hm".into()),
                ModelEvent::ReasoningBlock(json!({"type":"thinking","thinking":"hm","signature":"S1"})),
                ModelEvent::Text("Hi".into()),
                ModelEvent::ToolCallDelta {
                    index: 2,
                    id: Some("tu1".into()),
                    name: Some("read_file".into()),
                    arguments: String::new()
                },
                ModelEvent::ToolCallDelta { index: 2, id: None, name: None, arguments: "{\"pa".into() },
                ModelEvent::Usage { input_tokens: 15, output_tokens: 7 },
                ModelEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn stream_errors_carry_the_message() {
        let (events, _) =
            decode_all(&[json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})]);
        assert_eq!(
            events,
            vec![Err("model provider reported an error mid-stream: Overloaded (overloaded_error)".into())]
        );
        let (events, _) = decode_all(&[json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"}})]);
        assert_eq!(events, vec![Ok(ModelEvent::Finish(FinishReason::Length))]);
    }
}
