//! The Messages request body: the history turned into alternating user/assistant content
//! blocks, with thinking blocks sent back where the request thinks.

use serde_json::{Value, json};

use crate::provider::{ChatMessage, ChatParams, Role};

/// Tokens left for the answer, at least, when thinking shares `max_tokens` with it.
const MIN_ANSWER: u32 = 4096;

/// The `POST {base}/messages` body.
pub(in crate::provider) fn request_body(p: &ChatParams<'_>) -> Value {
    let system: Vec<&str> = p.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let thinking = p.thinking_budget > 0 && thinking_can_continue(p.messages);
    if p.thinking_budget > 0 && !thinking {
        tracing::debug!("thinking is off for this request: it continues a tool loop begun without thinking");
    }
    let mut body = json!({
        "model": p.model,
        // With thinking on, the budget is part of max_tokens and must stay below it: a limit
        // with room for the budget and an answer stays (it is the model's own, from the
        // catalog), a smaller one gets the budget on top.
        "max_tokens": match thinking {
            true if p.max_output_tokens > p.thinking_budget + MIN_ANSWER => p.max_output_tokens,
            true => p.thinking_budget + p.max_output_tokens,
            false => p.max_output_tokens,
        },
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
        assert_eq!(body["max_tokens"], 8192, "a limit with room for the budget and an answer stays");
        assert_eq!(
            request_body(&params(&history, 24576))["max_tokens"],
            24576 + 8192,
            "a smaller one gets the budget on top"
        );
        assert_eq!(body["messages"][1]["content"][0], block);
        // A loop begun without thinking continues without it.
        let history = vec![
            ChatMessage::user("go"),
            ChatMessage::assistant("", vec![call("a", "read_file", "{}")]),
            ChatMessage::tool_result("a", "ok"),
        ];
        assert!(request_body(&params(&history, 2048)).get("thinking").is_none());
    }
}
