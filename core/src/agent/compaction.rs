//! Keeping a session's context inside the model's window: how large a request is, when to
//! compact, what stays verbatim, what the summary request holds, and the summary that takes
//! the older part's place. Pure: the turn runs the requests (`turn/compact.rs`).
//!
//! The policy (ARCHITECTURE.md, "What the model sees"): before every model request, a request
//! estimated above 85 % of the window minus room for the answer is compacted first; the most
//! recent messages (up to a quarter of the window, at most 20k tokens) are kept as they are,
//! cut only where a user message or an assistant message begins (an assistant's tool calls
//! stay with their results); everything before is summarized by the model, with the same
//! system prompt and tools as every other request (a stable prefix, and Anthropic refuses a
//! history of tool blocks without tools).

use crate::catalog::ModelInfo;
use crate::provider::{ChatMessage, Role, ToolSpec};

/// Compaction starts when a request would fill this share of the window, less the answer's room.
const TRIGGER: f64 = 0.85;
/// Tokens per byte assumed until a provider's usage says otherwise (code and JSON run at about
/// 3.5 bytes a token; erring high compacts a little early rather than failing).
pub const DEFAULT_TOKENS_PER_BYTE: f64 = 1.0 / 3.5;
/// Most tokens of recent messages kept verbatim.
const KEEP_MAX: u64 = 20_000;
/// Room kept for an answer, at most (the rest of a model's long output limit is not reserved).
const RESERVE_MAX: u64 = 16_000;
/// A tool result in the summarized part longer than this is cut for the summary request.
const SUMMARY_RESULT_BYTES: usize = 2048;
/// What a message costs beyond its text (role, ids, framing), in bytes.
const MESSAGE_OVERHEAD: usize = 24;
/// An image, in tokens (providers bill a screenshot at ~1–1.5k).
const IMAGE_TOKENS: u64 = 1500;

/// The instruction that asks for a summary.
pub const SUMMARY_PROMPT: &str = "Summarize the conversation so far: it is about to be replaced by your summary, to \
free the context window. Write the summary for yourself, so you can go on without the original: the user's goals \
and instructions (quote exact wording where it matters), decisions made and why, files read or changed and their \
current state, commands run and what they showed (errors verbatim where they matter), what is done, what remains, \
and the next step. Do not call tools; answer with the summary only, in plain text, as concisely as completeness allows.";

/// The model's window as compaction sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// The context window, in tokens.
    pub tokens: u64,
    /// Room left for the answer.
    pub reserve: u64,
    /// How many tokens a byte of the request makes.
    pub tokens_per_byte: f64,
}

impl Window {
    /// The window of `model`, or a smaller one the provider revealed (`learned`, from a
    /// context-length error), with `tokens_per_byte` as the provider's usage calibrated it.
    pub fn of(model: &ModelInfo, learned: Option<u64>, tokens_per_byte: f64) -> Self {
        let tokens = learned.map_or(model.context_window, |l| l.min(model.context_window)).max(1024);
        let reserve = u64::from(model.max_output_tokens).min(tokens / 4).min(RESERVE_MAX);
        Self { tokens, reserve, tokens_per_byte }
    }

    pub fn tokens_of(&self, bytes: usize) -> u64 {
        (bytes as f64 * self.tokens_per_byte).ceil() as u64
    }

    /// Requests estimated above this many tokens are compacted first.
    pub fn trigger(&self) -> u64 {
        ((self.tokens as f64 * TRIGGER) as u64).saturating_sub(self.reserve)
    }

    /// Most tokens of recent messages kept verbatim through a compaction.
    pub fn keep(&self) -> u64 {
        (self.tokens / 4).min(KEEP_MAX)
    }

    /// The longest answer to ask for when the request is `request_tokens` long: the model's
    /// own limit, within what the window leaves (Anthropic refuses `max_tokens` past it).
    pub fn answer_room(&self, model_limit: u32, request_tokens: u64) -> u32 {
        let left = self.tokens.saturating_sub(request_tokens).max(1024);
        u32::try_from(left).unwrap_or(u32::MAX).min(model_limit)
    }
}

/// A message's size in bytes, as the estimate counts it (images counted apart).
pub fn message_bytes(m: &ChatMessage) -> usize {
    let calls: usize =
        m.tool_calls.iter().map(|c| c.id.len() + c.function.name.len() + c.function.arguments.len()).sum();
    let thinking: usize = m.thinking.iter().map(|t| t.to_string().len()).sum();
    m.content.len() + calls + thinking + MESSAGE_OVERHEAD
}

/// The tool definitions' size in bytes (sent with every request).
pub fn specs_bytes(specs: &[ToolSpec]) -> usize {
    serde_json::to_string(specs).map_or(0, |s| s.len())
}

/// A request's size in bytes as the estimate counts them (images apart).
pub fn request_bytes(messages: &[ChatMessage], specs_bytes: usize) -> usize {
    messages.iter().map(message_bytes).sum::<usize>() + specs_bytes
}

/// A request's estimated size in tokens: its messages, their images, and the tools.
pub fn estimate(window: &Window, messages: &[ChatMessage], specs_bytes: usize) -> u64 {
    let bytes = request_bytes(messages, specs_bytes);
    let images: u64 = messages.iter().map(|m| m.images.len() as u64).sum();
    window.tokens_of(bytes) + images * IMAGE_TOKENS
}

/// A provider's reported input tokens for a request of `bytes` (as [`estimate`] counts
/// them): the ratio to use from now on, if the report is believable (servers that report a
/// fixed or zero count, as test servers do, are not).
pub fn calibrate(input_tokens: u64, bytes: usize) -> Option<f64> {
    if bytes < 4096 || input_tokens == 0 {
        return None;
    }
    let ratio = input_tokens as f64 / bytes as f64;
    (0.15..=0.6).contains(&ratio).then_some(ratio)
}

/// Where the history is cut: `history[..at]` is summarized, `history[at..]` kept verbatim.
/// The kept part is the longest tail within `keep` tokens that begins with a user or an
/// assistant message; `history.len()` when even the last such tail is too long (all of it is
/// summarized), never 0 (something is summarized).
pub fn split(history: &[ChatMessage], window: &Window, keep: u64) -> usize {
    let mut at = history.len();
    let mut bytes = 0usize;
    let mut images = 0u64;
    for i in (1..history.len()).rev() {
        bytes += message_bytes(&history[i]);
        images += history[i].images.len() as u64;
        if window.tokens_of(bytes) + images * IMAGE_TOKENS > keep {
            break;
        }
        if matches!(history[i].role, Role::User | Role::Assistant) {
            at = i;
        }
    }
    at
}

/// The summary request's messages: the system prompt, the part to summarize (long tool
/// results cut; the oldest messages left out when it would still not fit `budget` tokens),
/// and the instruction. It always starts with a user message (Anthropic requires one).
pub fn summary_request(system: ChatMessage, part: &[ChatMessage], window: &Window, budget: u64) -> Vec<ChatMessage> {
    let mut part: Vec<ChatMessage> = part.iter().map(shortened).collect();
    let mut dropped = 0usize;
    while part.len() > 1 && estimate(window, &part, 0) > budget {
        // Leave out the oldest message, and whatever answers it (tool results need their call).
        part.remove(0);
        dropped += 1;
        while part.first().is_some_and(|m| m.role == Role::Tool) {
            part.remove(0);
            dropped += 1;
        }
    }
    let mut messages = vec![system];
    if dropped > 0 || part.first().is_some_and(|m| m.role != Role::User) {
        let note = if dropped > 0 {
            format!("[{dropped} earlier messages of this conversation were left out here: they did not fit.]")
        } else {
            "[The conversation continues from earlier work.]".to_string()
        };
        messages.push(ChatMessage::user(note));
    }
    messages.extend(part);
    messages.push(ChatMessage::user(SUMMARY_PROMPT));
    messages
}

/// A message as the summary request carries it: a long tool result keeps its head and tail.
fn shortened(m: &ChatMessage) -> ChatMessage {
    let mut m = m.clone();
    if m.role == Role::Tool && m.content.len() > SUMMARY_RESULT_BYTES {
        m.content = crate::tools::cap::head_and_tail(&m.content, SUMMARY_RESULT_BYTES, None);
    }
    m
}

/// What takes the summarized part's place: one user message with the summary, and, with
/// `carry_request` (a turn still working on it), the user's latest request verbatim when it
/// was summarized too (the kept part holds no user message).
pub fn summary_message(
    summary: &str,
    summarized: &[ChatMessage],
    kept: &[ChatMessage],
    carry_request: bool,
) -> ChatMessage {
    let mut text = format!(
        "[This conversation was compacted to fit the model's context window. Summary of the earlier part:]\n\n{}",
        summary.trim()
    );
    let kept_has_user = !carry_request || kept.iter().any(|m| m.role == Role::User);
    if !kept_has_user && let Some(last) = summarized.iter().rev().find(|m| m.role == Role::User) {
        text.push_str("\n\n[The user's latest request, verbatim:]\n\n");
        text.push_str(&last.content);
    }
    let mut message = ChatMessage::user(text);
    if !kept_has_user {
        message.images =
            summarized.iter().rev().find(|m| m.role == Role::User).map(|m| m.images.clone()).unwrap_or_default();
    }
    message
}

/// A summary written without the model, when it could not write one (it answered with tool
/// calls only, or the summary request itself failed): the user's requests and the calls made.
pub fn basic_summary(part: &[ChatMessage], max_bytes: usize) -> String {
    let mut lines = Vec::new();
    for m in part {
        match m.role {
            Role::User => lines.push(format!("- The user said: {}", clip(&m.content, 600))),
            Role::Assistant => {
                if !m.content.trim().is_empty() {
                    lines.push(format!("- You said: {}", clip(&m.content, 300)));
                }
                for call in &m.tool_calls {
                    lines.push(format!("- You called {}({})", call.function.name, clip(&call.function.arguments, 200)));
                }
            }
            Role::Tool => lines.push(format!("  → {}", clip(&m.content, 160))),
            Role::System => {}
        }
    }
    let mut text = String::from("(No summary could be written; this is the record of the earlier part.)\n");
    // The latest lines matter most: keep the end when it is too long.
    let mut kept: Vec<&String> = Vec::new();
    let mut used = text.len();
    for line in lines.iter().rev() {
        if used + line.len() + 1 > max_bytes {
            break;
        }
        used += line.len() + 1;
        kept.push(line);
    }
    for line in kept.into_iter().rev() {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// `text` on one line, cut to about `max` bytes.
fn clip(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() <= max {
        return line;
    }
    let mut end = max;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

#[cfg(test)]
mod tests;
