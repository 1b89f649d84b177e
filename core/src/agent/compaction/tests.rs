use super::*;
use crate::catalog::{ModelInfo, Overrides};
use crate::provider::{FunctionCall, ProviderKind, ToolCallRequest};

fn window(tokens: u64) -> Window {
    Window { tokens, reserve: tokens / 8, tokens_per_byte: 0.25 }
}

fn call(id: &str) -> ChatMessage {
    let call = ToolCallRequest {
        id: id.into(),
        kind: "function".into(),
        function: FunctionCall { name: "read_file".into(), arguments: "{\"path\":\"a\"}".into() },
        extra_content: None,
    };
    ChatMessage::assistant("", vec![call])
}

/// A session: a prompt, then (call, 4 KB result) pairs, then an answer; repeated.
fn history(turns: usize, calls: usize) -> Vec<ChatMessage> {
    let mut h = Vec::new();
    for t in 0..turns {
        h.push(ChatMessage::user(format!("request {t}")));
        for c in 0..calls {
            let id = format!("c{t}-{c}");
            h.push(call(&id));
            h.push(ChatMessage::tool_result(id, "x".repeat(4000)));
        }
        h.push(ChatMessage::assistant(format!("answer {t}"), Vec::new()));
    }
    h
}

#[test]
fn the_window_leaves_room_for_the_answer_and_keeps_a_quarter() {
    let claude = ModelInfo::resolve("claude-sonnet-4-5", ProviderKind::Anthropic, &Overrides::default(), None);
    let w = Window::of(&claude, None, DEFAULT_TOKENS_PER_BYTE);
    assert_eq!((w.tokens, w.reserve), (200_000, 16_000));
    assert_eq!(w.trigger(), 170_000 - 16_000);
    assert_eq!(w.keep(), 20_000);
    let learned = Window::of(&claude, Some(50_000), DEFAULT_TOKENS_PER_BYTE);
    assert_eq!((learned.tokens, learned.keep()), (50_000, 12_500));
    // max_tokens never asks for more than the window leaves, nor more than the model gives.
    assert_eq!(w.answer_room(64_000, 190_000), 10_000);
    assert_eq!(w.answer_room(64_000, 10_000), 64_000);
    assert_eq!(w.answer_room(64_000, 250_000), 1024);
}

#[test]
fn splits_keep_recent_messages_whole_and_never_part_a_call_from_its_result() {
    let h = history(4, 3);
    let w = window(16_000);
    let at = split(&h, &w, w.keep());
    assert!(at > 0 && at < h.len());
    assert!(matches!(h[at].role, Role::User | Role::Assistant), "{:?}", h[at].role);
    let kept: usize = h[at..].iter().map(message_bytes).sum();
    assert!(w.tokens_of(kept) <= w.keep());
    // Every kept result's call is kept too.
    for (i, m) in h.iter().enumerate().skip(at) {
        if let Some(id) = &m.tool_call_id {
            assert!(h[at..i].iter().any(|a| a.tool_calls.iter().any(|c| &c.id == id)), "result {id} without its call");
        }
    }
    // A last message longer than what is kept: everything is summarized.
    let mut long = history(1, 1);
    long.push(ChatMessage::user("y".repeat(100_000)));
    assert_eq!(split(&long, &w, w.keep()), long.len());
}

#[test]
fn the_summary_request_fits_its_budget_and_starts_with_the_user() {
    let h = history(6, 4);
    let w = window(16_000);
    let system = ChatMessage::system("SYSTEM");
    let all = summary_request(system.clone(), &h, &w, 1_000_000);
    assert_eq!(all.len(), h.len() + 2, "all of it, with the instruction");
    assert!(all.iter().filter(|m| m.role == Role::Tool).all(|m| m.content.len() < 2600), "results shortened");
    let tight = summary_request(system, &h, &w, 3000);
    assert!(estimate(&w, &tight[1..tight.len() - 1], 0) <= 3000);
    assert_eq!(tight[0].role, Role::System);
    assert_eq!(tight[1].role, Role::User);
    assert!(tight[1].content.contains("earlier messages of this conversation were left out"), "{}", tight[1].content);
    assert!(tight.last().is_some_and(|m| m.content.starts_with("Summarize the conversation so far")));
    assert!(tight[2..].first().is_some_and(|m| m.role != Role::Tool), "no result without its call");
}

#[test]
fn the_summary_message_carries_the_current_request_when_it_was_summarized() {
    let h = history(2, 1);
    let with = summary_message("S", &h, &[], true);
    assert!(with.content.contains("S") && with.content.ends_with("request 1"), "{}", with.content);
    let without = summary_message("S", &h, &h[3..], true);
    assert!(!without.content.contains("verbatim"), "the kept part has the request");
    assert!(!summary_message("S", &h, &[], false).content.contains("verbatim"), "/compact carries none");
}

#[test]
fn a_basic_summary_keeps_the_latest_lines_within_its_size() {
    let h = history(30, 2);
    let text = basic_summary(&h, 2000);
    assert!(text.len() <= 2000, "{}", text.len());
    assert!(text.contains("request 29") && !text.contains("request 0\n"), "{text}");
    assert!(text.contains("You called read_file"));
}

#[test]
fn only_believable_usage_calibrates() {
    assert_eq!(calibrate(10, 50_000), None, "a fixed count from a test server");
    assert_eq!(calibrate(12_500, 50_000), Some(0.25));
    assert_eq!(calibrate(100, 1000), None, "too small to tell");
}
