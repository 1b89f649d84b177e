//! The OpenAI Responses API (`POST {base}/responses`), streamed: what OpenAI's codex models
//! speak (they refuse Chat Completions), and what carries a reasoning model's thinking from one
//! request of a tool loop to the next.
//!
//! Nothing is stored at OpenAI (`store: false`): every request sends the whole conversation as
//! input items, the reasoning items of earlier answers included, encrypted
//! (`include: ["reasoning.encrypted_content"]`). Those items arrive as
//! [`ModelEvent::ReasoningBlock`]s, are kept with the assistant message (`ChatMessage::thinking`,
//! persisted with the session) and go back in order, without their ids (an id names a stored
//! item, and none is stored).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::error::truncate;
use super::stream::{Decode, Events};
use super::{ChatMessage, ChatParams, FinishReason, ModelEvent, ProviderError, Role, TokenUsage};

/// The `POST {base}/responses` body. The leading system messages are the `instructions`;
/// a later one (a note the turn adds) stays in place as a developer message.
pub(super) fn request_body(p: &ChatParams<'_>) -> Value {
    let leading = p.messages.iter().take_while(|m| m.role == Role::System).count();
    let instructions: Vec<&str> = p.messages[..leading].iter().map(|m| m.content.as_str()).collect();
    let input: Vec<Value> = p.messages[leading..].iter().flat_map(|m| items(m, p.images)).collect();
    let tools: Vec<Value> = p
        .tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "name": t.function.name,
                "description": t.function.description,
                "parameters": t.function.parameters,
            })
        })
        .collect();
    let mut body = json!({
        "model": p.model,
        "input": input,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    let obj = body.as_object_mut().expect("an object");
    if !instructions.is_empty() {
        obj.insert("instructions".into(), Value::String(instructions.join("\n\n")));
    }
    if !tools.is_empty() {
        obj.insert("tools".into(), Value::Array(tools));
    }
    if let Some(key) = p.cache_key {
        obj.insert("prompt_cache_key".into(), Value::String(key.to_string()));
    }
    if let Some(effort) = p.effort {
        obj.insert("reasoning".into(), json!({ "effort": effort, "summary": "auto" }));
    }
    body
}

/// One message as input items.
fn items(m: &ChatMessage, images: bool) -> Vec<Value> {
    match m.role {
        Role::System => vec![json!({ "type": "message", "role": "developer", "content": [input_text(&m.content)] })],
        Role::User => {
            let mut content = vec![input_text(&m.content)];
            if images {
                content.extend(m.data_urls().map(|url| json!({ "type": "input_image", "image_url": url })));
            }
            vec![json!({ "type": "message", "role": "user", "content": content })]
        }
        Role::Tool => {
            // The output may be a list of input items: the text, then the result's images.
            let text = m.tool_text(images);
            let pictures: Vec<Value> = match images {
                true => m.data_urls().map(|url| json!({ "type": "input_image", "image_url": url })).collect(),
                false => Vec::new(),
            };
            let output = match pictures.is_empty() {
                true => Value::String(text.into_owned()),
                false => Value::Array(std::iter::once(input_text(&text)).chain(pictures).collect()),
            };
            vec![json!({
                "type": "function_call_output",
                "call_id": m.tool_call_id.clone().unwrap_or_default(),
                "output": output,
            })]
        }
        Role::Assistant => {
            // Only this API's reasoning items (another provider's thinking blocks mean
            // nothing here).
            let mut out: Vec<Value> = m
                .thinking
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("reasoning"))
                .cloned()
                .collect();
            if !m.content.trim().is_empty() {
                out.push(json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{ "type": "output_text", "text": m.content }],
                }));
            }
            for call in &m.tool_calls {
                out.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.function.name,
                    "arguments": call.function.arguments,
                }));
            }
            out
        }
    }
}

fn input_text(text: &str) -> Value {
    json!({ "type": "input_text", "text": text })
}

/// Decodes the Responses event stream.
#[derive(Default)]
pub(super) struct Decoder {
    /// Function calls by output index: whether their arguments came as deltas (some servers
    /// send them only whole, with the finished item).
    calls: HashMap<u32, bool>,
}

impl Decode for Decoder {
    fn decode(&mut self, payload: &str, out: &mut Events) {
        let event: Value = match serde_json::from_str(payload.trim()) {
            Ok(v) => v,
            Err(_) => {
                out.fail(ProviderError::BadStream(truncate(payload.trim(), 200)));
                return;
            }
        };
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let index = event.get("output_index").and_then(Value::as_u64).unwrap_or(0) as u32;
        match event.get("type").and_then(Value::as_str).unwrap_or_default() {
            "response.output_text.delta" => {
                if let Some(t) = str_of(&event, "delta").filter(|t| !t.is_empty()) {
                    out.push(ModelEvent::Text(t));
                }
            }
            // Summaries (OpenAI's models) and raw reasoning (open models behind this API).
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(t) = str_of(&event, "delta").filter(|t| !t.is_empty()) {
                    out.push(ModelEvent::Reasoning(t));
                }
            }
            "response.reasoning_summary_part.done" => out.push(ModelEvent::Reasoning("\n\n".into())),
            "response.output_item.added" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    self.calls.insert(index, false);
                    out.push(ModelEvent::ToolCallDelta {
                        index,
                        id: str_of(item, "call_id"),
                        name: str_of(item, "name"),
                        arguments: String::new(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = str_of(&event, "delta") {
                    self.calls.insert(index, true);
                    out.push(ModelEvent::ToolCallDelta { index, id: None, name: None, arguments: delta });
                }
            }
            "response.output_item.done" => {
                let item = event.get("item").unwrap_or(&Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("reasoning") => out.push(ModelEvent::ReasoningBlock(without_id(item))),
                    Some("function_call") => {
                        let streamed = self.calls.insert(index, true).unwrap_or(false);
                        if !streamed {
                            // Announced without arguments, or never announced: all of it now.
                            out.push(ModelEvent::ToolCallDelta {
                                index,
                                id: str_of(item, "call_id"),
                                name: None,
                                arguments: str_of(item, "arguments").unwrap_or_default(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.get("response").unwrap_or(&Value::Null);
                if let Some(usage) = response.get("usage") {
                    out.push(ModelEvent::Usage(usage_of(usage)));
                }
                let reason = response.pointer("/incomplete_details/reason").and_then(Value::as_str);
                let finish = match reason {
                    Some("max_output_tokens") => FinishReason::Length,
                    Some("content_filter") => FinishReason::ContentFilter,
                    Some(other) => FinishReason::Other(other.to_string()),
                    None if !self.calls.is_empty() => FinishReason::ToolCalls,
                    None => FinishReason::Stop,
                };
                out.push(ModelEvent::Finish(finish));
                out.end();
            }
            "response.failed" | "error" => {
                let error = event.pointer("/response/error").or_else(|| event.get("error")).unwrap_or(&event);
                let message = str_of(error, "message").unwrap_or_else(|| error.to_string());
                let code = str_of(error, "code").unwrap_or_default();
                let e = match code.as_str() {
                    "context_length_exceeded" => {
                        ProviderError::ContextTooLong { detail: truncate(&message, 300), limit: None }
                    }
                    _ => ProviderError::StreamError(truncate(&message, 300)),
                };
                out.fail(e);
            }
            // Created, in progress, content parts, text done: nothing new to say.
            _ => {}
        }
    }
}

/// A reasoning item as it goes back: everything but the id of an item nobody stored.
fn without_id(item: &Value) -> Value {
    let mut map: Map<String, Value> = item.as_object().cloned().unwrap_or_default();
    map.remove("id");
    map.remove("status");
    Value::Object(map)
}

/// `input_tokens` counts the cached part too (`input_tokens_details.cached_tokens`).
fn usage_of(usage: &Value) -> TokenUsage {
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    TokenUsage {
        input_tokens: n("/input_tokens"),
        output_tokens: n("/output_tokens"),
        cache_read_tokens: n("/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{FunctionCall, ToolCallRequest};

    #[test]
    fn a_tool_result_s_images_go_in_its_output_list() {
        let result = crate::provider::tool_result_with_image("call_1");
        let items = items(&result, true);
        let output = items[0]["output"].as_array().expect("a list");
        assert_eq!(output[0], json!({ "type": "input_text", "text": result.content }));
        assert_eq!(output[1]["type"], "input_image");
        assert!(output[1]["image_url"].as_str().is_some_and(|u| u.starts_with("data:image/png;base64,")));
        let blind = super::items(&result, false);
        let text = blind[0]["output"].as_str().expect("text only");
        assert!(text.ends_with(crate::provider::IMAGES_NOT_SHOWN), "{text}");
    }

    #[test]
    fn the_history_becomes_input_items_with_reasoning_sent_back_in_order() {
        let mut assistant = ChatMessage::assistant(
            "Looking.",
            vec![ToolCallRequest {
                id: "call_1".into(),
                kind: "function".into(),
                function: FunctionCall { name: "read_file".into(), arguments: r#"{"path":"a"}"#.into() },
                extra_content: None,
            }],
        );
        let reasoning = json!({ "type": "reasoning", "summary": [], "encrypted_content": "ENC" });
        assistant.thinking = vec![reasoning.clone(), json!({ "type": "thinking", "thinking": "x", "signature": "s" })];
        let history = vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("read a"),
            assistant,
            ChatMessage::tool_result("call_1", "A"),
            ChatMessage::system("a note"),
        ];
        let tools = vec![crate::tools::spec("read_file", "Read", json!({"type":"object"}))];
        let body = request_body(&ChatParams {
            model: "gpt-5-codex",
            messages: &history,
            tools: &tools,
            thinking_budget: 0,
            max_output_tokens: 1000,
            images: false,
            cache_key: Some("sess-1"),
            claude: false,
            send_reasoning: false,
            effort: Some("low"),
            responses_only: true,
        });
        assert_eq!(body["instructions"], "be brief");
        assert_eq!((body["store"].clone(), body["prompt_cache_key"].clone()), (json!(false), json!("sess-1")));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["reasoning"], json!({ "effort": "low", "summary": "auto" }));
        assert_eq!(
            body["tools"][0],
            json!({ "type": "function", "name": "read_file", "description": "Read", "parameters": {"type":"object"} })
        );
        let types: Vec<&str> =
            body["input"].as_array().expect("items").iter().map(|i| i["type"].as_str().unwrap_or("")).collect();
        assert_eq!(types, ["message", "reasoning", "message", "function_call", "function_call_output", "message"]);
        assert_eq!(body["input"][1], reasoning, "the reasoning item comes back as it came, Anthropic's block does not");
        assert_eq!(
            body["input"][3],
            json!({ "type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a\"}" })
        );
        assert_eq!(body["input"][4], json!({ "type": "function_call_output", "call_id": "call_1", "output": "A" }));
        assert_eq!(body["input"][5]["role"], "developer");
    }

    fn decode_all(events: &[Value]) -> Vec<Result<ModelEvent, String>> {
        let mut d = Decoder::default();
        let mut out = Events::default();
        for e in events {
            d.decode(&e.to_string(), &mut out);
        }
        out.drain().map(|r| r.map_err(|e| e.to_string())).collect()
    }

    #[test]
    fn decodes_summaries_text_a_tool_call_reasoning_items_and_cached_usage() {
        let events = decode_all(&[
            json!({"type":"response.created","response":{}}),
            json!({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1"}}),
            json!({"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"Plan"}),
            json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Plan"}],"encrypted_content":"ENC","status":"completed"}}),
            json!({"type":"response.output_text.delta","output_index":1,"delta":"Hi"}),
            json!({"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","call_id":"call_9","name":"read_file","arguments":""}}),
            json!({"type":"response.function_call_arguments.delta","output_index":2,"delta":"{\"path\""}),
            json!({"type":"response.function_call_arguments.delta","output_index":2,"delta":":\"a\"}"}),
            json!({"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","call_id":"call_9","name":"read_file","arguments":"{\"path\":\"a\"}"}}),
            json!({"type":"response.completed","response":{"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":80},"output_tokens":7}}}),
        ]);
        let ok: Vec<ModelEvent> = events.into_iter().map(|e| e.expect("ok")).collect();
        assert_eq!(
            ok,
            vec![
                ModelEvent::Reasoning("Plan".into()),
                ModelEvent::ReasoningBlock(
                    json!({"type":"reasoning","summary":[{"type":"summary_text","text":"Plan"}],"encrypted_content":"ENC"})
                ),
                ModelEvent::Text("Hi".into()),
                ModelEvent::ToolCallDelta {
                    index: 2,
                    id: Some("call_9".into()),
                    name: Some("read_file".into()),
                    arguments: String::new()
                },
                ModelEvent::ToolCallDelta { index: 2, id: None, name: None, arguments: "{\"path\"".into() },
                ModelEvent::ToolCallDelta { index: 2, id: None, name: None, arguments: ":\"a\"}".into() },
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 100,
                    output_tokens: 7,
                    cache_read_tokens: 80,
                    cache_write_tokens: 0
                }),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn arguments_sent_only_whole_and_failures() {
        let events = decode_all(&[
            json!({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"glob"}}),
            json!({"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"glob","arguments":"{}"}}),
            json!({"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}}),
        ]);
        assert_eq!(
            events[1],
            Ok(ModelEvent::ToolCallDelta { index: 0, id: Some("c".into()), name: None, arguments: "{}".into() })
        );
        assert_eq!(events[2], Ok(ModelEvent::Finish(FinishReason::Length)));
        let failed = decode_all(&[
            json!({"type":"response.failed","response":{"error":{"code":"context_length_exceeded","message":"too long"}}}),
        ]);
        assert!(matches!(&failed[0], Err(m) if m.contains("does not fit")), "{failed:?}");
        let failed = decode_all(&[json!({"type":"error","code":"server_error","message":"boom"})]);
        assert!(matches!(&failed[0], Err(m) if m.contains("boom")), "{failed:?}");
    }
}
