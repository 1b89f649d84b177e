//! The agent engine, driven in-process: `corvid_core::serve` over the memory transport, a
//! scripted model on loopback HTTP (`support::model`), and a fake editor (`support::editor`).
//!
//! Covered: the tool loop, every permission outcome, `max_turn_requests`, and a cancel at
//! every kind of wait a turn can be in (the model stream, a permission question, each editor
//! request, a long walk, an MCP call, a running command). Each cancel test checks the
//! protocol's promise: `session/prompt` answers `cancelled` within 1 s of `session/cancel`,
//! no `session/update` follows that answer, and a pending request to the editor is withdrawn
//! with `$/cancel_request`. Bounded waits throughout: a turn that ignores its cancellation
//! fails its test in about 3 s, never hangs the suite.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Answer, Engine, Reply, Script, Setup, TempDir, WAIT, tool_results};

/// Answers `session/request_permission` with `answer`, everything else as the default editor.
fn permission(answer: Answer) -> impl Fn(&str, &Value) -> Answer + Send + Sync + 'static {
    let default = support::editor::default_responder();
    move |method, params| if method == "session/request_permission" { answer.clone() } else { default(method, params) }
}

/// Never answers `never`; everything else as the default editor.
fn never_answer(never: &'static str) -> impl Fn(&str, &Value) -> Answer + Send + Sync + 'static {
    let default = support::editor::default_responder();
    move |method, params| if method == never { Answer::Never } else { default(method, params) }
}

fn selected(option: &str) -> Answer {
    Answer::Result(json!({ "outcome": { "outcome": "selected", "optionId": option } }))
}

/// A workspace with `notes.txt`.
fn workspace() -> TempDir {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").expect("write notes.txt");
    dir
}

fn run_command(id: &str, command: &str) -> Reply {
    Reply::tool(id, "run_command", json!({ "command": command }))
}

// ---------------------------------------------------------------------------------------
// The tool loop
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_loop_reads_a_file_from_disk_and_sends_it_back_to_the_model() {
    let script = Script::new([
        Reply::tool("call_1", "read_file", json!({ "path": "notes.txt" })),
        Reply::text("The file says alpha."),
    ]);
    // No fs capability: the file is read from disk.
    let engine = Engine::start_in(workspace(), script, Setup::default()).await;
    assert_eq!(engine.turn("What is in notes.txt?").await, "end_turn");

    let calls = engine.tool_calls();
    assert_eq!(calls.len(), 1, "one tool call: {calls:?}");
    assert_eq!(engine.tool_statuses(&calls[0]), ["pending", "in_progress", "completed"]);
    let announced = engine.updates().into_iter().find(|u| u["sessionUpdate"] == "tool_call").expect("tool_call");
    assert_eq!(announced["kind"], "read");
    assert_eq!(announced["rawInput"], json!({ "path": "notes.txt" }));
    assert!(engine.editor.requests("fs/read_text_file").is_empty(), "the client has no fs capability");

    let requests = engine.model.requests();
    assert_eq!(requests.len(), 2);
    assert!(tool_results(&requests[0]).is_empty());
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].0, "call_1", "the result answers the model's own call id");
    assert!(results[0].1.contains("1\talpha") && results[0].1.contains("2\tbeta"), "tool result: {}", results[0].1);
    // The assistant's tool call precedes its result in the second request.
    let assistant = requests[1]["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "assistant"))
        .expect("the assistant message");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(engine.agent_text(), "The file says alpha.");
}

// ---------------------------------------------------------------------------------------
// Permission outcomes (run_command in the default `ask` mode, run on this machine)
// ---------------------------------------------------------------------------------------

const TOUCH: &str = "touch ran.txt && echo ran-$((6*7))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_allow_once_runs_the_command() {
    let script = Script::new([run_command("call_1", TOUCH), Reply::text("done")]);
    let engine = Engine::start(script, Setup::default()).await;
    engine.editor.set_responder(permission(selected("allow_once")));
    assert_eq!(engine.turn("run it").await, "end_turn");

    let asked = engine.editor.requests("session/request_permission");
    assert_eq!(asked.len(), 1);
    let options: Vec<&str> =
        asked[0]["params"]["options"].as_array().into_iter().flatten().filter_map(|o| o["optionId"].as_str()).collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    let call = &engine.tool_calls()[0];
    assert_eq!(asked[0]["params"]["toolCall"]["toolCallId"], call.as_str());
    assert_eq!(engine.tool_statuses(call), ["pending", "in_progress", "completed"]);
    assert!(engine.dir.path().join("ran.txt").exists(), "the command ran");
    let results = tool_results(&engine.model.requests()[1]);
    assert!(results[0].1.contains("ran-42") && results[0].1.contains("exit code 0"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_reject_once_declines_and_the_turn_goes_on() {
    let script = Script::new([run_command("call_1", TOUCH), Reply::text("ok, I will not")]);
    let engine = Engine::start(script, Setup::default()).await;
    engine.editor.set_responder(permission(selected("reject_once")));
    assert_eq!(engine.turn("run it").await, "end_turn");

    assert!(!engine.dir.path().join("ran.txt").exists(), "a rejected command must not run");
    assert_eq!(engine.tool_statuses(&engine.tool_calls()[0]), ["pending", "failed"]);
    let requests = engine.model.requests();
    assert_eq!(requests.len(), 2, "the model is told and answers");
    let results = tool_results(&requests[1]);
    assert!(results[0].1.contains("declined"), "the model reads that the user declined: {results:?}");
    assert_eq!(engine.agent_text(), "ok, I will not");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_cancelled_outcome_ends_the_turn() {
    let script = Script::new([run_command("call_1", TOUCH), Reply::text("never asked for")]);
    let engine = Engine::start(script, Setup::default()).await;
    engine.editor.set_responder(permission(Answer::Result(json!({ "outcome": { "outcome": "cancelled" } }))));
    assert_eq!(engine.turn("run it").await, "cancelled");

    assert!(!engine.dir.path().join("ran.txt").exists());
    assert_eq!(engine.model.requests().len(), 1, "a cancelled turn does not go back to the model");
    assert!(!engine.tool_statuses(&engine.tool_calls()[0]).iter().any(|s| s == "in_progress" || s == "completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_method_not_found_counts_as_reject() {
    let script = Script::new([run_command("call_1", TOUCH), Reply::text("fine")]);
    let engine = Engine::start(script, Setup::default()).await;
    engine.editor.set_responder(permission(Answer::Error(-32601, "Method not found".into())));
    assert_eq!(engine.turn("run it").await, "end_turn");

    assert!(!engine.dir.path().join("ran.txt").exists());
    assert_eq!(engine.tool_statuses(&engine.tool_calls()[0]), ["pending", "failed"]);
    let results = tool_results(&engine.model.requests()[1]);
    assert!(results[0].1.contains("declined"), "{results:?}");
    assert!(
        engine.agent_text().contains("does not support permission requests"),
        "the user is told why: {}",
        engine.agent_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_allow_always_is_not_asked_again() {
    let script = Script::new([
        run_command("call_1", "echo same"),
        run_command("call_2", "echo same"),
        run_command("call_3", "echo other"),
        Reply::text("done"),
    ]);
    let engine = Engine::start(script, Setup::default()).await;
    engine.editor.set_responder(permission(selected("allow_always")));
    assert_eq!(engine.turn("run it twice").await, "end_turn");

    let asked = engine.editor.requests("session/request_permission");
    let commands: Vec<&Value> = asked.iter().map(|r| &r["params"]["toolCall"]["rawInput"]["command"]).collect();
    assert_eq!(commands, [&json!("echo same"), &json!("echo other")], "the identical second call is not asked");
    let calls = engine.tool_calls();
    assert_eq!(calls.len(), 3);
    for call in &calls {
        assert_eq!(engine.tool_statuses(call), ["pending", "in_progress", "completed"], "{call}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_reject_always_is_not_asked_again() {
    let script = Script::new([run_command("call_1", TOUCH), run_command("call_2", TOUCH), Reply::text("giving up")]);
    let engine = Engine::start(script, Setup::default()).await;
    engine.editor.set_responder(permission(selected("reject_always")));
    assert_eq!(engine.turn("run it twice").await, "end_turn");

    assert_eq!(engine.editor.requests("session/request_permission").len(), 1);
    assert!(!engine.dir.path().join("ran.txt").exists());
    for call in engine.tool_calls() {
        assert_eq!(engine.tool_statuses(&call), ["pending", "failed"], "{call}");
    }
    let results = tool_results(&engine.model.requests()[2]);
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|(_, text)| text.contains("declined")), "{results:?}");
}

// ---------------------------------------------------------------------------------------
// max_turn_requests
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_turn_requests_ends_a_model_that_always_calls_a_tool() {
    let script = Script::forever(Reply::tool("call_1", "read_file", json!({ "path": "notes.txt" })));
    let setup = Setup { configure: Box::new(|c| c.max_turn_requests = 3), ..Setup::default() };
    let engine = Engine::start_in(workspace(), script, setup).await;
    assert_eq!(engine.turn("loop forever").await, "max_turn_requests");

    assert_eq!(engine.model.requests().len(), 3, "exactly max_turn_requests model requests");
    let calls = engine.tool_calls();
    assert_eq!(calls.len(), 3, "every request's tool call ran: {calls:?}");
    assert!(calls.iter().all(|c| engine.tool_statuses(c).last().map(String::as_str) == Some("completed")));
}

// ---------------------------------------------------------------------------------------
// Cancel at every kind of wait
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_the_model_streams() {
    let script = Script::new([Reply::hang_after("Let me think"), Reply::text("Back again.")]);
    let engine = Engine::start(script, Setup::default()).await;
    let prompt = engine.prompt("think hard").await;
    let session = engine.session.clone();
    engine
        .editor
        .wait_for(WAIT, |f| f.update_for(&session).is_some_and(|u| u["sessionUpdate"] == "agent_message_chunk"))
        .await
        .expect("the first chunk of the answer");
    engine.cancel_and_check(&prompt, None, "the model stream").await;
    assert_eq!(engine.agent_text(), "Let me think");
    assert_eq!(engine.model.dropped(), 1, "the model request is abandoned, not left streaming");

    // The session takes the next prompt, and the model sees what the user saw of the first answer.
    assert_eq!(engine.turn("are you there?").await, "end_turn");
    let second = &engine.model.requests()[1];
    let assistant: Vec<&Value> =
        second["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "assistant").collect();
    assert_eq!(assistant.len(), 1, "{second}");
    assert_eq!(assistant[0]["content"], "Let me think");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_permission_question_is_open() {
    let engine = Engine::start(Script::new([run_command("call_1", TOUCH)]), Setup::default()).await;
    engine.editor.set_responder(never_answer("session/request_permission"));
    let prompt = engine.prompt("run it").await;
    let asked = engine.editor.wait_request("session/request_permission", WAIT).await.expect("the question");
    engine.cancel_and_check(&prompt, Some(("session/request_permission", &asked)), "a permission question").await;
    assert!(!engine.dir.path().join("ran.txt").exists());
}

// ACP v2: the same waits, seen through the v2 prompt lifecycle (the prompt is answered with its
// `messageId` at once; the turn's end is its `idle` state).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_reject_is_not_cancel_requires_action_then_running_then_idle_end_turn() {
    let script = Script::new([run_command("call_1", TOUCH), Reply::text("ok, I will not")]);
    let engine = Engine::start(script, Setup { v2: true, ..Setup::default() }).await;
    engine.editor.set_responder(permission(selected("reject_once")));
    let answer = engine.prompt_v2("run it").await;
    assert!(answer["messageId"].is_string(), "{answer}");
    assert_eq!(engine.idle_v2(WAIT).await.expect("idle").1, "end_turn");
    assert_eq!(engine.states_v2(), ["running", "requires_action", "running", "idle"]);
    let asked = engine.editor.requests("session/request_permission");
    assert_eq!(asked[0]["params"]["subject"]["type"], "tool_call");
    assert!(asked[0]["params"]["title"].as_str().is_some_and(|t| t.contains("touch ran.txt")), "{}", asked[0]);
    assert!(!engine.dir.path().join("ran.txt").exists(), "a rejected command must not run");
    assert_eq!(engine.model.requests().len(), 2, "the model is told and answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_cancel_while_a_permission_question_is_open_ends_idle_cancelled_and_withdraws_it() {
    let engine =
        Engine::start(Script::new([run_command("call_1", TOUCH)]), Setup { v2: true, ..Setup::default() }).await;
    engine.editor.set_responder(never_answer("session/request_permission"));
    engine.prompt_v2("run it").await;
    let asked = engine.editor.wait_request("session/request_permission", WAIT).await.expect("the question");
    let sent = tokio::time::Instant::now();
    engine.cancel().await;
    let (index, stop) = engine.idle_v2(Duration::from_secs(3)).await.expect("idle after the cancel");
    assert_eq!(stop, "cancelled");
    assert!(sent.elapsed() < Duration::from_secs(1), "idle {:?} after session/cancel", sent.elapsed());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let late: Vec<Value> =
        engine.editor.frames()[index + 1..].iter().filter_map(|f| f.update_for(&engine.session).cloned()).collect();
    assert!(late.is_empty(), "updates after idle: {late:?}");
    let withdrawn = engine
        .editor
        .frames()
        .iter()
        .any(|f| f.method() == Some("$/cancel_request") && f.value.pointer("/params/requestId") == Some(&asked));
    assert!(withdrawn, "the question is withdrawn with $/cancel_request");
    assert_eq!(engine.states_v2(), ["running", "requires_action", "idle"], "no `running` after a cancelled question");
    assert!(!engine.dir.path().join("ran.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_tool_call_cancel_stops_a_running_command_and_the_turn_goes_on() {
    let script = Script::new([run_command("call_1", "sleep 30"), Reply::text("stopped, moving on")]);
    let engine = Engine::start(script, Setup { v2: true, mode: "full", ..Setup::default() }).await;
    engine.prompt_v2("run it").await;
    let (_, running) = engine
        .editor
        .wait_for(WAIT, |f| {
            f.update_for(&engine.session)
                .is_some_and(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "in_progress")
        })
        .await
        .expect("the command runs");
    let update = running.update_for(&engine.session).expect("an update").clone();
    assert_eq!(update["capabilities"], json!({ "cancel": {} }));
    let params = json!({ "sessionId": engine.session, "toolCallId": update["toolCallId"] });
    let sent = tokio::time::Instant::now();
    assert_eq!(engine.editor.call("tool_call/cancel", params.clone(), WAIT).await.expect("accepted"), json!({}));
    assert_eq!(engine.idle_v2(Duration::from_secs(5)).await.expect("idle").1, "end_turn", "the turn goes on");
    assert!(sent.elapsed() < Duration::from_secs(5), "the command was stopped, not waited for");
    let statuses: Vec<Value> = engine
        .updates()
        .into_iter()
        .filter(|u| u["toolCallId"] == update["toolCallId"])
        .filter_map(|u| u.get("status").cloned())
        .collect();
    assert_eq!(statuses.last(), Some(&json!("cancelled")), "{statuses:?}");
    let results = tool_results(&engine.model.requests()[1]);
    assert!(results[0].1.contains("stopped this tool call"), "{results:?}");
    let again = engine.editor.call("tool_call/cancel", params, WAIT).await;
    assert!(again.is_err_and(|e| e.contains("-32602")), "a final call cannot be cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_the_editor_reads_a_file() {
    let script = Script::new([Reply::tool("call_1", "read_file", json!({ "path": "notes.txt" }))]);
    let setup = Setup { caps: json!({ "fs": { "readTextFile": true } }), ..Setup::default() };
    let engine = Engine::start_in(workspace(), script, setup).await;
    engine.editor.set_responder(never_answer("fs/read_text_file"));
    let prompt = engine.prompt("read notes.txt").await;
    let read = engine.editor.wait_request("fs/read_text_file", WAIT).await.expect("the read");
    engine.cancel_and_check(&prompt, Some(("fs/read_text_file", &read)), "fs/read_text_file").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_the_editor_writes_a_file() {
    let script = Script::new([Reply::tool("call_1", "write_file", json!({ "path": "out.txt", "content": "hello" }))]);
    let setup = Setup { caps: json!({ "fs": { "writeTextFile": true } }), mode: "full", ..Setup::default() };
    let engine = Engine::start(script, setup).await;
    engine.editor.set_responder(never_answer("fs/write_text_file"));
    let prompt = engine.prompt("write out.txt").await;
    let write = engine.editor.wait_request("fs/write_text_file", WAIT).await.expect("the write");
    engine.cancel_and_check(&prompt, Some(("fs/write_text_file", &write)), "fs/write_text_file").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_the_edit_preview_reads_the_file() {
    let args = json!({ "path": "notes.txt", "old_text": "alpha", "new_text": "gamma" });
    let script = Script::new([Reply::tool("call_1", "edit_file", args)]);
    let setup = Setup { caps: json!({ "fs": { "readTextFile": true } }), ..Setup::default() };
    let engine = Engine::start_in(workspace(), script, setup).await;
    engine.editor.set_responder(never_answer("fs/read_text_file"));
    let prompt = engine.prompt("edit notes.txt").await;
    let read = engine.editor.wait_request("fs/read_text_file", WAIT).await.expect("the preview's read");
    assert!(engine.editor.requests("session/request_permission").is_empty(), "the diff is worked out before asking");
    engine.cancel_and_check(&prompt, Some(("fs/read_text_file", &read)), "the edit preview's fs/read_text_file").await;
    let text = std::fs::read_to_string(engine.dir.path().join("notes.txt")).expect("notes.txt");
    assert_eq!(text, "alpha\nbeta\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_the_editor_creates_a_terminal() {
    let script = Script::new([run_command("call_1", "echo hi")]);
    let setup = Setup { caps: json!({ "terminal": true }), mode: "full", ..Setup::default() };
    let engine = Engine::start(script, setup).await;
    engine.editor.set_responder(never_answer("terminal/create"));
    let prompt = engine.prompt("run it in a terminal").await;
    let create = engine.editor.wait_request("terminal/create", WAIT).await.expect("terminal/create");
    engine.cancel_and_check(&prompt, Some(("terminal/create", &create)), "terminal/create").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_question_to_the_user_is_open() {
    let script = Script::new([Reply::tool("call_1", "ask_user", json!({ "question": "Which colour?" }))]);
    let setup = Setup { caps: json!({ "elicitation": { "form": {} } }), ..Setup::default() };
    let engine = Engine::start(script, setup).await;
    engine.editor.set_responder(never_answer("elicitation/create"));
    let prompt = engine.prompt("ask me").await;
    let asked = engine.editor.wait_request("elicitation/create", WAIT).await.expect("elicitation/create");
    engine.cancel_and_check(&prompt, Some(("elicitation/create", &asked)), "elicitation/create").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_long_search_walk() {
    let tree = support::tree::long_search_tree(Duration::from_secs_f64(3.5)).await;
    assert!(
        tree.estimate >= Duration::from_secs(2),
        "the generated tree is walked in {:?} on this machine: too fast to test a cancel during the walk",
        tree.estimate
    );
    let script = Script::new([Reply::tool("call_1", "search", json!({ "pattern": tree.pattern }))]);
    let engine = Engine::start_in(tree.dir, script, Setup::default()).await;
    let prompt = engine.prompt("search everything").await;
    engine.wait_status("t1-1", "in_progress", WAIT).await.expect("the search starts");
    tokio::time::sleep(Duration::from_millis(100)).await;
    engine.cancel_and_check(&prompt, None, "a long search walk").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_local_command_runs() {
    let script = Script::new([run_command("call_1", "echo $$ > pid.txt; exec sleep 30")]);
    let engine = Engine::start(script, Setup { mode: "full", ..Setup::default() }).await;
    let prompt = engine.prompt("sleep").await;
    let pid_file = engine.dir.path().join("pid.txt");
    let started = tokio::time::Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse::<u32>().ok()) {
            break pid;
        }
        assert!(started.elapsed() < WAIT, "the command did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    engine.cancel_and_check(&prompt, None, "a running command").await;
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "the command (pid {pid}) was not killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_an_mcp_tool_call_hangs() {
    let dir = TempDir::new();
    let server = support::write_hanging_mcp_server(dir.path());
    let setup = Setup {
        mode: "full",
        mcp_servers: json!([{ "name": "hang", "command": "/bin/sh", "args": [server], "env": [] }]),
        ..Setup::default()
    };
    let script = Script::new([Reply::tool("call_1", "mcp__hang__slow", json!({}))]);
    let engine = Engine::start_in(dir, script, setup).await;
    let prompt = engine.prompt("call the slow tool").await;
    engine.wait_status("t1-1", "in_progress", WAIT).await.expect("the MCP call starts");
    let offered: Vec<Value> = engine.model.requests()[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].clone())
        .collect();
    assert!(offered.contains(&json!("mcp__hang__slow")), "the MCP server's tool is offered: {offered:?}");
    engine.cancel_and_check(&prompt, None, "an MCP tool call").await;
}
