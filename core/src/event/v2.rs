//! Session updates as the ACP v2 preview (SDK 2.4.0's `v2/schema.json`) spells them.
//!
//! Sessions are stored as the v1 payloads v1 clients were sent (`event::v1`); a v2 connection
//! gets every stored payload converted here, live and on replay alike, so what a v2 client sees
//! live is what a later resume replays (ARCHITECTURE.md, "One store for both versions"). What
//! v2 has and v1 lacks (the prompt lifecycle's `state_update` and the `user_message` echo) is a
//! [`Live`] signal: sent to v2 clients only, never stored.
//!
//! Updates v2 has no word for are dropped: `current_mode_update` (v2 has no modes; the mode is
//! a config option there), and the crate-only subagent and session-message updates, which SDK
//! 2.4.0's v2 schema does not define (docs/acp-v2-crate-vs-schema.md).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{StopReason, Terminal};

/// The plan id of a v1 whole-plan update (v2 plans always carry one; Corvid has one plan).
pub const PLAN_ID: &str = "plan";

/// What v2 clients are told about a turn that v1 has no update for.
#[derive(Debug, Clone)]
pub enum Live {
    /// The user's message, echoed with the `messageId` its `session/prompt` was answered with.
    UserMessage {
        message_id: String,
        blocks: Vec<agent_client_protocol_schema::v1::ContentBlock>,
    },
    State(TurnState),
}

/// The session's turn state (`state_update`).
#[derive(Debug, Clone, PartialEq)]
pub enum TurnState {
    Running,
    /// A permission question or a form blocks the turn.
    RequiresAction,
    /// The turn ended: why, or the error that ended it.
    Idle(Result<StopReason, TurnError>),
}

/// The JSON-RPC error object of a failed turn (`stopReason: "error"`).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnError {
    pub code: i64,
    pub message: String,
}

/// The `update` of a live signal.
pub fn live(signal: &Live) -> Value {
    match signal {
        Live::UserMessage { message_id, blocks } => {
            json!({ "sessionUpdate": "user_message", "messageId": message_id, "content": blocks })
        }
        Live::State(TurnState::Running) => json!({ "sessionUpdate": "state_update", "state": "running" }),
        Live::State(TurnState::RequiresAction) => {
            json!({ "sessionUpdate": "state_update", "state": "requires_action" })
        }
        Live::State(TurnState::Idle(Ok(stop))) => {
            json!({ "sessionUpdate": "state_update", "state": "idle", "stopReason": stop.as_str() })
        }
        Live::State(TurnState::Idle(Err(e))) => json!({
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": { "code": e.code, "message": e.message },
        }),
    }
}

/// The v2 update(s) of one stored v1 payload: none when v2 has no word for it.
pub fn convert(v1: &Value) -> Option<Value> {
    let obj = v1.as_object()?;
    let kind = obj.get("sessionUpdate")?.as_str()?;
    match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            // v2 requires the message id (Corvid always sets it).
            obj.get("messageId")?;
            Some(v1.clone())
        }
        "tool_call" | "tool_call_update" => Some(tool_call(obj)),
        "plan" => Some(plan(PLAN_ID, obj.get("entries"))),
        "plan_update" => Some(plan(obj.get("planId")?.as_str()?, obj.get("entries"))),
        "usage_update" | "session_info_update" | "compaction_summary_chunk" => Some(v1.clone()),
        // Stored in v2's words already (v1 has none for agent-owned terminals).
        "terminal_update" | "terminal_output_chunk" => Some(v1.clone()),
        "notice" => {
            let mut out = obj.clone();
            out.entry("severity").or_insert_with(|| "warning".into());
            Some(Value::Object(out))
        }
        "compaction_update" => {
            let mut out = obj.clone();
            // SDK 2.4.0 requires a status where the crate may omit it.
            if out.get("status").is_none_or(Value::is_null) {
                out.insert("status".into(), "in_progress".into());
            }
            Some(Value::Object(out))
        }
        "config_option_update" => {
            let options = obj.get("configOptions").map(config_options).unwrap_or_default();
            Some(json!({ "sessionUpdate": "config_option_update", "configOptions": options }))
        }
        "available_commands_update" => {
            let commands = obj.get("availableCommands").map(commands).unwrap_or_default();
            Some(json!({ "sessionUpdate": "available_commands_update", "availableCommands": commands }))
        }
        _ => None,
    }
}

/// How every stored agent-terminal payload starts ([`terminal_payload`] puts the kind first),
/// so a v1 rendering skips them without parsing.
pub const TERMINAL_PAYLOAD_START: &str = r#"{"sessionUpdate":"terminal_"#;

/// An agent-owned terminal's update as v2 spells it, serialized with `sessionUpdate` first.
pub fn terminal_payload(t: &Terminal) -> String {
    use base64::Engine;
    let b64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    let (kind, body) = match t {
        Terminal::Started { id, command, cwd } => (
            "terminal_update",
            json!({ "terminalId": id, "command": command, "cwd": cwd, "capabilities": { "cancel": {} } }),
        ),
        Terminal::Output { id, data } => ("terminal_output_chunk", json!({ "terminalId": id, "data": b64(data) })),
        Terminal::Replaced { id, data } => {
            ("terminal_update", json!({ "terminalId": id, "output": { "data": b64(data) } }))
        }
        // A command that ended can no longer be cancelled.
        Terminal::Exited { id, exit_code, signal } => (
            "terminal_update",
            json!({
                "terminalId": id,
                "exitStatus": { "exitCode": exit_code, "signal": signal },
                "capabilities": null,
            }),
        ),
    };
    let body = body.to_string();
    // `body` is a non-empty object: splice the kind in front of its first key.
    format!(r#"{{"sessionUpdate":"{kind}",{}"#, &body[1..])
}

/// A v1 `tool_call` or `tool_call_update` as the v2 upsert `tool_call_update`.
fn tool_call(obj: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert("sessionUpdate".into(), "tool_call_update".into());
    for key in ["toolCallId", "name", "title", "kind", "status", "locations", "rawInput", "rawOutput", "_meta"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    // Running calls can be stopped alone (`tool_call/cancel`); a final one no longer can. A call
    // the user stopped is stored as v1's `failed` with `rawOutput.stopped`: v2 says `cancelled`.
    match obj.get("status").and_then(Value::as_str) {
        Some("in_progress") => {
            out.insert("capabilities".into(), json!({ "cancel": {} }));
        }
        Some("completed" | "failed") => {
            out.insert("capabilities".into(), Value::Null);
            if obj.get("rawOutput").and_then(|r| r.get("stopped")) == Some(&Value::Bool(true)) {
                out.insert("status".into(), "cancelled".into());
            }
        }
        _ => {}
    }
    if let Some(content) = obj.get("content") {
        let converted = match content.as_array() {
            Some(items) => Value::Array(items.iter().filter_map(tool_content).collect()),
            None => Value::Null,
        };
        out.insert("content".into(), converted);
    }
    Value::Object(out)
}

/// One item of a tool call's content: text and blocks as they are, a whole-file diff as a v2
/// diff (the change and its `git_patch`), a terminal by its id; a session reference is dropped.
fn tool_content(item: &Value) -> Option<Value> {
    match item.get("type")?.as_str()? {
        "content" | "terminal" => Some(item.clone()),
        "diff" => {
            let path = item.get("path")?.as_str()?;
            let old = item.get("oldText").and_then(Value::as_str);
            let new = item.get("newText").and_then(Value::as_str).unwrap_or_default();
            let operation = if old.is_some() { "modify" } else { "add" };
            let mut diff = json!({
                "type": "diff",
                "changes": [{ "operation": operation, "path": path, "fileType": "text" }],
                "patch": { "format": "git_patch", "text": git_patch(path, old, new) },
            });
            // Corvid's hunk numbers (a permission question's diff): the patch's own hunks.
            if let (Some(meta), Some(obj)) = (item.get("_meta"), diff.as_object_mut()) {
                obj.insert("_meta".into(), meta.clone());
            }
            Some(diff)
        }
        _ => None,
    }
}

/// A `diff --git` section for one file, with absolute paths and no `a/` `b/` prefixes (the
/// `git_patch` format's rule).
pub fn git_patch(path: &str, old: Option<&str>, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old.unwrap_or_default(), new);
    let mut text = format!("diff --git {path} {path}\n");
    let from = if old.is_some() {
        path.to_string()
    } else {
        text.push_str("new file mode 100644\n");
        "/dev/null".to_string()
    };
    text.push_str(&format!("--- {from}\n+++ {path}\n"));
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        text.push_str(&hunk.to_string());
    }
    text
}

fn plan(plan_id: &str, entries: Option<&Value>) -> Value {
    let entries = entries.cloned().filter(Value::is_array).unwrap_or_else(|| json!([]));
    json!({ "sessionUpdate": "plan_update", "plan": { "type": "items", "planId": plan_id, "entries": entries } })
}

/// v1 config options (`id`) as v2's (`configId`).
pub fn config_options(v1: &Value) -> Vec<Value> {
    let Some(options) = v1.as_array() else { return Vec::new() };
    options
        .iter()
        .filter_map(|o| {
            let mut o = o.as_object()?.clone();
            let id = o.remove("id")?;
            o.insert("configId".into(), id);
            Some(Value::Object(o))
        })
        .collect()
}

/// v1 slash commands as v2's (`type: "command"`, the input hint as a `text` input).
pub fn commands(v1: &Value) -> Vec<Value> {
    let Some(commands) = v1.as_array() else { return Vec::new() };
    commands
        .iter()
        .filter_map(|c| {
            let mut c = c.as_object()?.clone();
            c.insert("type".into(), "command".into());
            if let Some(input) = c.get_mut("input")
                && let Some(hint) = input.get("hint").cloned()
            {
                *input = json!({ "type": "text", "hint": hint });
            }
            Some(Value::Object(c))
        })
        .collect()
}

/// A v2 `session/request_permission` about `call` (the v1 spelling of the call as it would
/// run): the call's title as the question's, the call as its subject.
pub fn permission_request(
    session_id: &str,
    call: &agent_client_protocol_schema::v1::ToolCallUpdate,
    options: &[agent_client_protocol_schema::v1::PermissionOption],
) -> Value {
    let mut v1 = serde_json::to_value(call).unwrap_or_else(|_| json!({}));
    if let Some(obj) = v1.as_object_mut() {
        obj.insert("sessionUpdate".into(), "tool_call_update".into());
    }
    let mut tool_call = v1.as_object().map(tool_call).unwrap_or_else(|| json!({}));
    if let Some(obj) = tool_call.as_object_mut() {
        obj.remove("sessionUpdate");
    }
    let title = tool_call.get("title").and_then(Value::as_str).unwrap_or("Allow this tool call?").to_string();
    json!({
        "sessionId": session_id,
        "title": title,
        "subject": { "type": "tool_call", "toolCall": tool_call },
        "options": options,
    })
}

/// A session's stored stream converted for a v2 replay. Messages go out whole, as the v2 message
/// RFD recommends for replay: the blocks of one user message (stored as v1 `user_message_chunk`s)
/// become the one `user_message` v2 clients were sent live, and the chunks an agent reply streamed
/// in (stored as v1 `agent_message_chunk`s, often hundreds) become one `agent_message` with the
/// whole content, adjacent text joined into one block; a thought's chunks (`agent_thought_chunk`)
/// likewise become one `agent_thought`. A reply's chunks that come back after something else
/// interrupted them (not something Corvid's turns do) are sent as chunks: v2 appends those to
/// the message, where a second whole message would replace its content.
#[derive(Default)]
pub struct Replay {
    user: Option<(String, Vec<Value>)>,
    /// The agent message or thought being gathered: the v2 update it becomes, its id, its blocks.
    agent: Option<(&'static str, String, Vec<Value>)>,
    /// The agent messages and thoughts already sent whole (by update kind and id).
    sent: HashSet<(&'static str, String)>,
}

/// The whole v2 update an agent's stored chunk kind is gathered into.
fn whole_kind(chunk: &str) -> Option<&'static str> {
    match chunk {
        "agent_message_chunk" => Some("agent_message"),
        "agent_thought_chunk" => Some("agent_thought"),
        _ => None,
    }
}

impl Replay {
    /// The v2 updates that `v1` completes (a message waits for its last block).
    pub fn push(&mut self, v1: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        let kind = v1.get("sessionUpdate").and_then(Value::as_str);
        let id = v1.get("messageId").and_then(Value::as_str);
        match (kind, id, v1.get("content")) {
            (Some("user_message_chunk"), Some(id), Some(content)) => {
                match &mut self.user {
                    Some((open, blocks)) if open == id => blocks.push(content.clone()),
                    _ => {
                        out.extend(self.finish());
                        self.user = Some((id.to_string(), vec![content.clone()]));
                    }
                }
                return out;
            }
            (Some(chunk), Some(id), Some(content)) => {
                if let Some(whole) = whole_kind(chunk)
                    && !self.sent.contains(&(whole, id.to_string()))
                {
                    match &mut self.agent {
                        Some((kind, open, blocks)) if *kind == whole && open == id => join_block(blocks, content),
                        _ => {
                            out.extend(self.finish());
                            self.agent = Some((whole, id.to_string(), vec![content.clone()]));
                        }
                    }
                    return out;
                }
            }
            _ => {}
        }
        out.extend(self.finish());
        out.extend(convert(v1));
        out
    }

    /// The message still open (at the end of the stream, or before anything else): at most one
    /// is, since opening one finishes the other.
    pub fn finish(&mut self) -> Option<Value> {
        if let Some((id, blocks)) = self.user.take() {
            return Some(json!({ "sessionUpdate": "user_message", "messageId": id, "content": blocks }));
        }
        let (kind, id, blocks) = self.agent.take()?;
        let whole = json!({ "sessionUpdate": kind, "messageId": id, "content": blocks });
        self.sent.insert((kind, id));
        Some(whole)
    }
}

/// Appends a streamed block to a message's content: text right after text (neither annotated)
/// joins it, so a reply streamed in many pieces is one text block again.
fn join_block(blocks: &mut Vec<Value>, content: &Value) {
    let plain_text = |b: &Value| {
        b.as_object().is_some_and(|o| {
            o.get("type").and_then(Value::as_str) == Some("text")
                && o.get("text").is_some_and(Value::is_string)
                && o.keys().all(|k| k == "type" || k == "text")
        })
    };
    if plain_text(content)
        && let Some(last) = blocks.last_mut()
        && plain_text(last)
        && let (Some(Value::String(joined)), Some(more)) =
            (last.get_mut("text"), content.get("text").and_then(Value::as_str))
    {
        joined.push_str(more);
        return;
    }
    blocks.push(content.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_diff_is_an_add_with_a_git_patch_from_dev_null() {
        let v1 = json!({
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "Write a.txt",
            "kind": "edit",
            "status": "pending",
            "content": [{ "type": "diff", "path": "/w/a.txt", "oldText": null, "newText": "one\ntwo\n" }],
        });
        let v2 = convert(&v1).expect("converted");
        assert_eq!(v2["sessionUpdate"], "tool_call_update");
        assert_eq!(v2["title"], "Write a.txt");
        let diff = &v2["content"][0];
        assert_eq!(diff["changes"][0], json!({ "operation": "add", "path": "/w/a.txt", "fileType": "text" }));
        assert_eq!(
            diff["patch"]["text"],
            "diff --git /w/a.txt /w/a.txt\nnew file mode 100644\n--- /dev/null\n+++ /w/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
    }

    #[test]
    fn a_running_call_can_be_stopped_and_a_stopped_one_says_cancelled() {
        let running =
            convert(&json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "in_progress" }));
        assert_eq!(running.expect("running")["capabilities"], json!({ "cancel": {} }));
        let stopped = convert(&json!({
            "sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "failed",
            "rawOutput": { "error": "Stopped", "stopped": true },
        }))
        .expect("stopped");
        assert_eq!(stopped["status"], "cancelled");
        assert_eq!(stopped["capabilities"], Value::Null);
        let failed = convert(&json!({ "sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "failed" }));
        assert_eq!(failed.expect("failed")["status"], "failed");
    }

    #[test]
    fn agent_terminal_updates_are_stored_in_v2_words_and_pass_the_converter_unchanged() {
        let id = format!("{}t1-1", super::super::AGENT_TERMINAL_PREFIX);
        let started = terminal_payload(&Terminal::Started {
            id: id.clone(),
            command: "make".into(),
            cwd: std::path::PathBuf::from("/w"),
        });
        let output = terminal_payload(&Terminal::Output { id: id.clone(), data: b"ok\n".to_vec() });
        let exited =
            terminal_payload(&Terminal::Exited { id: id.clone(), exit_code: None, signal: Some("SIGKILL".into()) });
        for payload in [&started, &output, &exited] {
            assert!(payload.starts_with(TERMINAL_PAYLOAD_START), "{payload}");
            let value: Value = serde_json::from_str(payload).expect("valid JSON");
            assert_eq!(convert(&value).as_ref(), Some(&value), "stored as v2 sends it");
        }
        let started: Value = serde_json::from_str(&started).expect("json");
        assert_eq!(
            started,
            json!({ "sessionUpdate": "terminal_update", "terminalId": id, "command": "make", "cwd": "/w", "capabilities": { "cancel": {} } })
        );
        let output: Value = serde_json::from_str(&output).expect("json");
        assert_eq!(output["data"], "b2sK");
        let exited: Value = serde_json::from_str(&exited).expect("json");
        assert_eq!(exited["exitStatus"], json!({ "exitCode": null, "signal": "SIGKILL" }));
        assert_eq!(exited["capabilities"], Value::Null);
    }

    #[test]
    fn v1_frames_leave_out_agent_terminals_and_show_their_kept_output() {
        use super::super::v1::for_v1;
        let id = format!("{}t1-1", super::super::AGENT_TERMINAL_PREFIX);
        let chunk = terminal_payload(&Terminal::Output { id: id.clone(), data: b"x".to_vec() });
        assert_eq!(for_v1(&chunk), None, "v1 has no agent-owned terminals");
        let running = json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1-1",
            "content": [{ "type": "terminal", "terminalId": id }] })
        .to_string();
        let running: Value = serde_json::from_str(&for_v1(&running).expect("sent")).expect("json");
        assert_eq!(running.get("content"), None, "nothing to show yet: the card's content is left as it was");
        let done = json!({ "sessionUpdate": "tool_call_update", "toolCallId": "t1-1", "status": "completed",
            "content": [{ "type": "terminal", "terminalId": id }], "rawOutput": { "output": "hello\n" } })
        .to_string();
        let done: Value = serde_json::from_str(&for_v1(&done).expect("sent")).expect("json");
        assert_eq!(done["content"], json!([{ "type": "content", "content": { "type": "text", "text": "hello\n" } }]));
        // A client's own terminal, and everything else, is sent byte for byte.
        let client = r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1-2","content":[{"type":"terminal","terminalId":"term-1"}]}"#;
        assert!(matches!(for_v1(client), Some(std::borrow::Cow::Borrowed(p)) if p == client));
        let text = r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"corvid-terminal-t1-1"}}"#;
        assert_eq!(for_v1(text).as_deref(), Some(text));
    }

    #[test]
    fn a_modified_file_has_a_hunk_with_context() {
        let patch = git_patch("/w/b.txt", Some("a\nb\nc\n"), "a\nB\nc\n");
        assert_eq!(
            patch,
            "diff --git /w/b.txt /w/b.txt\n--- /w/b.txt\n+++ /w/b.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }

    #[test]
    fn plans_options_and_commands_take_v2_names() {
        let plan = convert(&json!({ "sessionUpdate": "plan", "entries": [] })).expect("plan");
        assert_eq!(plan["plan"], json!({ "type": "items", "planId": PLAN_ID, "entries": [] }));
        let options = convert(
            &json!({ "sessionUpdate": "config_option_update", "configOptions": [{ "id": "mode", "name": "Mode" }] }),
        )
        .expect("options");
        assert_eq!(options["configOptions"][0], json!({ "configId": "mode", "name": "Mode" }));
        let commands = convert(&json!({
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{ "name": "compact", "description": "d", "input": { "hint": "h" } }],
        }))
        .expect("commands");
        assert_eq!(commands["availableCommands"][0]["type"], "command");
        assert_eq!(commands["availableCommands"][0]["input"], json!({ "type": "text", "hint": "h" }));
        assert!(convert(&json!({ "sessionUpdate": "current_mode_update", "currentModeId": "x" })).is_none());
    }

    #[test]
    fn a_replay_merges_one_message_blocks_into_one_user_message() {
        let chunk = |id: &str, text: &str| json!({ "sessionUpdate": "user_message_chunk", "messageId": id, "content": { "type": "text", "text": text } });
        let answer = json!({ "sessionUpdate": "agent_message_chunk", "messageId": "a", "content": { "type": "text", "text": "hi" } });
        let mut replay = Replay::default();
        assert!(replay.push(&chunk("u1", "one")).is_empty());
        assert!(replay.push(&chunk("u1", "two")).is_empty());
        let out = replay.push(&answer);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["sessionUpdate"], "user_message");
        assert_eq!(out[0]["content"].as_array().map(Vec::len), Some(2));
        let out = replay.push(&chunk("u2", "three"));
        assert_eq!(
            out,
            vec![json!({ "sessionUpdate": "agent_message", "messageId": "a", "content": [answer["content"]] })]
        );
        assert!(replay.push(&chunk("u3", "four")).len() == 1, "a new message closes the last one");
        assert_eq!(replay.finish().expect("open message")["messageId"], "u3");
    }

    #[test]
    fn a_replay_sends_each_agent_reply_whole_with_its_text_joined() {
        let piece = |id: &str, text: &str| json!({ "sessionUpdate": "agent_message_chunk", "messageId": id, "content": { "type": "text", "text": text } });
        let image = json!({ "type": "image", "data": "AA==", "mimeType": "image/png" });
        let mut replay = Replay::default();
        assert!(replay.push(&piece("a", "Hel")).is_empty());
        assert!(replay.push(&piece("a", "lo, ")).is_empty());
        assert!(
            replay
                .push(&json!({ "sessionUpdate": "agent_message_chunk", "messageId": "a", "content": image }))
                .is_empty()
        );
        assert!(replay.push(&piece("a", "world")).is_empty());
        let out = replay.push(&piece("b", "next"));
        assert_eq!(
            out,
            vec![json!({ "sessionUpdate": "agent_message", "messageId": "a", "content": [
                { "type": "text", "text": "Hello, " }, image, { "type": "text", "text": "world" },
            ] })]
        );
        // Something else closes the reply; a late chunk of a reply already sent whole appends.
        let plan = json!({ "sessionUpdate": "plan", "entries": [] });
        let out = replay.push(&plan);
        assert_eq!(out[0]["sessionUpdate"], "agent_message");
        assert_eq!(out[0]["content"], json!([{ "type": "text", "text": "next" }]));
        assert_eq!(out[1]["sessionUpdate"], "plan_update");
        assert_eq!(replay.push(&piece("a", "!")), vec![piece("a", "!")]);
        assert!(replay.finish().is_none());
    }

    #[test]
    fn a_replay_sends_each_thought_whole_and_apart_from_the_reply() {
        let think = |text: &str| json!({ "sessionUpdate": "agent_thought_chunk", "messageId": "t", "content": { "type": "text", "text": text } });
        let say = |text: &str| json!({ "sessionUpdate": "agent_message_chunk", "messageId": "t", "content": { "type": "text", "text": text } });
        let mut replay = Replay::default();
        assert!(replay.push(&think("Let me ")).is_empty());
        assert!(replay.push(&think("look.")).is_empty());
        // The reply opens (even under the same id): the thought goes out whole, as a thought.
        let out = replay.push(&say("Done"));
        assert_eq!(
            out,
            vec![
                json!({ "sessionUpdate": "agent_thought", "messageId": "t", "content": [{ "type": "text", "text": "Let me look." }] })
            ]
        );
        assert_eq!(
            replay.finish(),
            Some(
                json!({ "sessionUpdate": "agent_message", "messageId": "t", "content": [{ "type": "text", "text": "Done" }] })
            )
        );
        // A late thought chunk after its thought went out whole appends, as a chunk.
        let late = replay.push(&think("!"));
        assert_eq!(late.len(), 1);
        assert_eq!(late[0]["sessionUpdate"], "agent_thought_chunk");
    }
}
