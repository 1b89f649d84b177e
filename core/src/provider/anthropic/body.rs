//! The Messages request body: the history turned into alternating user/assistant content
//! blocks, with thinking blocks sent back where the request thinks.

use serde_json::{Value, json};

use crate::provider::{ChatMessage, ChatParams, Role};

/// Tokens left for the answer, at least, when thinking shares `max_tokens` with it.
const MIN_ANSWER: u32 = 4096;

/// Prompt-cache marks on the newest messages: with the one on the prefix, three of the four
/// a request may carry.
const MARKED_MESSAGES: usize = 2;

/// The `POST {base}/messages` body, with prompt-cache marks (see [`mark_cache`]).
pub(in crate::provider) fn request_body(p: &ChatParams<'_>) -> Value {
    let system: Vec<&str> = p.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let thinking = p.thinking_budget > 0 && thinking_can_continue(p.messages);
    if p.thinking_budget > 0 && !thinking {
        tracing::debug!("thinking is off for this request: it continues a tool loop begun without thinking");
    }
    let mut messages = messages(p.messages, thinking, p.images);
    mark_cache(&mut messages);
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
        "messages": messages,
        "stream": true,
    });
    let obj = body.as_object_mut().expect("an object");
    let system = system.join("\n\n");
    let has_system = !system.trim().is_empty();
    if has_system {
        // As a block, to carry the prefix's cache mark (it covers the tools before it).
        obj.insert("system".into(), json!([{ "type": "text", "text": system, "cache_control": ephemeral() }]));
    }
    if !p.tools.is_empty() {
        let mut tools: Vec<Value> = p
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
        if !has_system && let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        obj.insert("tools".into(), Value::Array(tools));
    }
    if thinking {
        obj.insert("thinking".into(), json!({ "type": "enabled", "budget_tokens": p.thinking_budget }));
    }
    body
}

/// Anthropic's cache mark: the prefix up to and including the marked block is cached (five
/// minutes, renewed by each hit).
fn ephemeral() -> Value {
    json!({ "type": "ephemeral" })
}

/// Marks the last block of the newest [`MARKED_MESSAGES`] messages, so every request of a
/// tool loop reads the previous request's prefix from the cache and writes its own: the
/// prefix's mark (system, or the last tool) is set by the caller. Thinking blocks cannot
/// carry a mark; the block before them does.
fn mark_cache(messages: &mut [Value]) {
    for message in messages.iter_mut().rev().take(MARKED_MESSAGES) {
        let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) else { continue };
        let markable = blocks.iter_mut().rev().find(|b| !is_thinking_block(b));
        if let Some(block) = markable {
            block["cache_control"] = ephemeral();
        }
    }
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
        .all(|m| m.thinking.iter().any(is_thinking_block))
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
                    blocks.extend(m.images.iter().filter_map(image_block));
                }
                blocks.extend(text_block(&m.content));
                ("user", blocks)
            }
            Role::Tool => {
                let mut block =
                    json!({ "type": "tool_result", "tool_use_id": m.tool_call_id.clone().unwrap_or_default() });
                let text = m.tool_text(images);
                // A result's images go inside it, after its text (a tool_result's content may
                // be blocks).
                let pictures: Vec<Value> = match images {
                    true => m.images.iter().filter_map(image_block).collect(),
                    false => Vec::new(),
                };
                if !pictures.is_empty() {
                    block["content"] = Value::Array(text_block(&text).into_iter().chain(pictures).collect());
                } else if !text.is_empty() {
                    block["content"] = Value::String(text.into_owned());
                }
                ("user", vec![block])
            }
            Role::Assistant => {
                // Thinking blocks go back only on requests that think: they are signed for it.
                // (Only Anthropic's own: another API's reasoning items mean nothing here.)
                let mut blocks: Vec<Value> = match thinking {
                    true => m.thinking.iter().filter(|b| is_thinking_block(b)).cloned().collect(),
                    false => Vec::new(),
                };
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

/// An image as a base64 `image` block, or `None` if its file is gone.
fn image_block(img: &crate::provider::ImageRef) -> Option<Value> {
    let data = img.base64()?;
    Some(json!({ "type": "image", "source": { "type": "base64", "media_type": img.mime_type, "data": data } }))
}

fn is_thinking_block(block: &Value) -> bool {
    matches!(block.get("type").and_then(Value::as_str), Some("thinking" | "redacted_thinking"))
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
            extra_content: None,
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
            cache_key: None,
            claude: true,
            send_reasoning: false,
            effort: None,
            responses_only: false,
        }
    }

    #[test]
    fn a_tool_result_s_images_go_inside_it() {
        let history = vec![
            ChatMessage::user("look"),
            ChatMessage::assistant("", vec![call("a", "read_file", "{}")]),
            crate::provider::tool_result_with_image("a"),
        ];
        let seeing = messages(&history, false, true);
        let content = seeing[2]["content"][0]["content"].as_array().expect("blocks");
        assert_eq!(content[0]["type"], "text");
        assert_eq!(content[1]["type"], "image");
        assert_eq!(content[1]["source"]["media_type"], "image/png");
        let blind = messages(&history, false, false);
        let text = blind[2]["content"][0]["content"].as_str().expect("text only");
        assert!(text.ends_with(crate::provider::IMAGES_NOT_SHOWN), "{text}");
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
        assert_eq!(
            body["system"],
            json!([{ "type": "text", "text": "be brief", "cache_control": { "type": "ephemeral" } }])
        );
        assert_eq!(body["max_tokens"], 8192);
        assert!(body.get("thinking").is_none());
        assert_eq!(
            body["messages"],
            json!([
                { "role": "user", "content": [{ "type": "text", "text": "read two files" }] },
                { "role": "assistant", "content": [
                    { "type": "tool_use", "id": "a", "name": "read_file", "input": { "path": "x" } },
                    { "type": "tool_use", "id": "b", "name": "read_file", "input": {}, "cache_control": { "type": "ephemeral" } },
                ]},
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "a", "content": "X" },
                    { "type": "tool_result", "tool_use_id": "b" },
                    { "type": "text", "text": "and now?", "cache_control": { "type": "ephemeral" } },
                ]},
            ])
        );
    }

    #[test]
    fn without_a_system_prompt_the_last_tool_carries_the_prefix_mark() {
        let tools = vec![crate::tools::spec("a", "A", json!({})), crate::tools::spec("b", "B", json!({}))];
        let history = vec![ChatMessage::user("hi")];
        let body = request_body(&ChatParams { tools: &tools, ..params(&history, 0) });
        assert!(body.get("system").is_none());
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        let marks = body.to_string().matches("cache_control").count();
        assert_eq!(marks, 2, "the last tool and the one message");
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
        assert_eq!(body["messages"][1]["content"][0], block, "a thinking block goes back as it came, unmarked");
        assert_eq!(body["messages"][1]["content"][2]["cache_control"]["type"], "ephemeral");
        // A loop begun without thinking continues without it.
        let history = vec![
            ChatMessage::user("go"),
            ChatMessage::assistant("", vec![call("a", "read_file", "{}")]),
            ChatMessage::tool_result("a", "ok"),
        ];
        assert!(request_body(&params(&history, 2048)).get("thinking").is_none());
    }
}
