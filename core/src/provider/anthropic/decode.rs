//! The Messages stream decoder: SSE events to [`ModelEvent`]s, with thinking blocks collected
//! (text and signature) so they can be sent back with the assistant message.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::error::truncate;
use crate::provider::stream::{Decode, Events};
use crate::provider::{FinishReason, ModelEvent, ProviderError, TokenUsage};

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

impl Usage {
    /// The input side: `input_tokens` counts only what was neither read from nor written to
    /// the cache, so the context holds all three.
    fn input(&self) -> TokenUsage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        TokenUsage {
            input_tokens: self.input_tokens + read + write,
            output_tokens: 0,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }
}

/// Decodes a Messages stream. Thinking blocks are collected (text and signature) so they can
/// be sent back with the assistant message.
#[derive(Default)]
pub(in crate::provider) struct Decoder {
    /// The request's input as `message_start` counted it (cache reads and writes included).
    usage: TokenUsage,
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
                    self.usage = u.input();
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
                    // Newer servers repeat the input counts here (the final ones); older ones
                    // and llama.cpp give only the output.
                    let input = u.input();
                    let usage = if input.input_tokens > 0 { input } else { self.usage };
                    out.push(ModelEvent::Usage(TokenUsage { output_tokens: u.output_tokens, ..usage }));
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
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 15,
                    output_tokens: 7,
                    cache_read_tokens: 5,
                    cache_write_tokens: 0
                }),
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
