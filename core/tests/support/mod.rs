//! The engine under test, driven in-process: `corvid_core::serve` over the memory transport,
//! a scripted model on loopback HTTP, and a fake editor. No environment variable, config
//! file or home directory of the user is read.

#![allow(dead_code)]

pub mod editor;
pub mod model;
pub mod tree;

use std::path::{Path, PathBuf};
use std::time::Duration;

use corvid_core::Config;
use corvid_core::config::ProviderConfig;
use corvid_core::provider::ProviderKind;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use editor::{Answer, Editor, Frame};
pub use model::{FakeModel, Reply, Script};

/// Bound of every wait that is expected to succeed quickly.
pub const WAIT: Duration = Duration::from_secs(10);

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let path = std::env::temp_dir().join(format!("corvid-engine-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path).expect("create a temp dir");
        TempDir(std::fs::canonicalize(&path).expect("canonical temp dir"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How the client and the agent are set up for one test.
pub struct Setup {
    /// `clientCapabilities` sent in `initialize`.
    pub caps: Value,
    /// The session's permission mode (set through `session/set_config_option` unless `ask`).
    pub mode: &'static str,
    /// `mcpServers` of `session/new`.
    pub mcp_servers: Value,
    pub configure: Box<dyn FnOnce(&mut Config)>,
    /// Speak ACP v2 (`[acp] protocol_v2` on, `initialize` asks for 2; `caps` are v2's).
    pub v2: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup { caps: json!({}), mode: "ask", mcp_servers: json!([]), configure: Box::new(|_| {}), v2: false }
    }
}

/// A running engine with one session.
pub struct Engine {
    pub editor: Editor,
    pub model: FakeModel,
    /// The session's cwd (and data dir under `.data`, which is not in the session's way).
    pub dir: TempDir,
    pub session: String,
    shutdown: CancellationToken,
    served: tokio::task::JoinHandle<()>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.served.abort();
    }
}

/// A configuration for the fake model, built from `Config::default()` (which reads no
/// environment): no store, no retries, timeouts long enough never to decide a test.
pub fn test_config(base_url: &str, data_dir: &Path) -> Config {
    Config {
        provider: Some(ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url: base_url.to_string(),
            api_key: Some("test-key".into()),
            model: Some("fake-model".into()),
            models: vec!["fake-model".into()],
        }),
        // Nothing listens on port 9: no local Ollama is ever found by accident.
        ollama_url: "http://127.0.0.1:9".into(),
        data_dir: data_dir.to_path_buf(),
        store: Some("none".into()),
        max_retries: 0,
        client_request_timeout: Duration::from_secs(20),
        permission_timeout: Duration::from_secs(20),
        stall_timeout: Duration::from_secs(20),
        mcp_call_timeout: Duration::from_secs(20),
        ..Config::default()
    }
}

impl Engine {
    /// Starts the model and the agent, initializes, and opens a session in a fresh temp dir.
    pub async fn start(script: Script, setup: Setup) -> Engine {
        Self::start_in(TempDir::new(), script, setup).await
    }

    pub async fn start_in(dir: TempDir, script: Script, setup: Setup) -> Engine {
        let model = FakeModel::start(script).await;
        let mut config = test_config(&model.base_url, &dir.path().join(".data"));
        (setup.configure)(&mut config);
        config.protocol_v2 |= setup.v2;
        let (transport, peer) = corvid_core::transport::memory::memory(None);
        let shutdown = CancellationToken::new();
        let served = tokio::spawn(corvid_core::serve(transport, config, shutdown.clone()));
        let editor = Editor::start(peer);
        let init = if setup.v2 {
            json!({ "protocolVersion": 2, "info": { "name": "engine-tests", "version": "1" }, "capabilities": setup.caps })
        } else {
            json!({ "protocolVersion": 1, "clientCapabilities": setup.caps })
        };
        editor.call("initialize", init, WAIT).await.expect("initialize");
        let new = json!({ "cwd": dir.path(), "mcpServers": setup.mcp_servers });
        let created = editor.call("session/new", new, WAIT).await.expect("session/new");
        let session = created["sessionId"].as_str().expect("a session id").to_string();
        // Sent right after the session/new response; waited for so that no test mistakes it
        // for an update of its turn.
        editor
            .wait_for(WAIT, |f| {
                f.update_for(&session).is_some_and(|u| u["sessionUpdate"] == "available_commands_update")
            })
            .await
            .expect("the session's available commands");
        let engine = Engine { editor, model, dir, session, shutdown, served };
        if setup.mode != "ask" {
            engine.set_mode(setup.mode).await;
        }
        engine
    }

    pub async fn set_mode(&self, mode: &str) {
        let params = json!({ "sessionId": self.session, "configId": "mode", "value": mode });
        self.editor.call("session/set_config_option", params, WAIT).await.expect("set the mode");
    }

    /// Sends `session/prompt`; returns its request id.
    pub async fn prompt(&self, text: &str) -> Value {
        let params = json!({ "sessionId": self.session, "prompt": [{ "type": "text", "text": text }] });
        self.editor.request("session/prompt", params).await
    }

    /// A v2 `session/prompt`: its answer (`{messageId}`), which comes before the turn ends.
    pub async fn prompt_v2(&self, text: &str) -> Value {
        let params = json!({ "sessionId": self.session, "prompt": [{ "type": "text", "text": text }] });
        self.editor.call("session/prompt", params, WAIT).await.expect("the v2 prompt's answer")
    }

    /// Waits for the v2 `state_update` `idle` of this session's turn: its stop reason.
    pub async fn idle_v2(&self, within: Duration) -> Result<(usize, String), String> {
        let (index, frame) = self
            .editor
            .wait_for(within, |f| {
                f.update_for(&self.session)
                    .is_some_and(|u| u["sessionUpdate"] == "state_update" && u["state"] == "idle")
            })
            .await?;
        let stop = frame.update_for(&self.session).and_then(|u| u["stopReason"].as_str()).unwrap_or_default();
        Ok((index, stop.to_string()))
    }

    /// The `state_update` states of this session, in order.
    pub fn states_v2(&self) -> Vec<String> {
        self.updates()
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "state_update")
            .filter_map(|u| u["state"].as_str().map(str::to_string))
            .collect()
    }

    /// A whole turn: its stop reason.
    pub async fn turn(&self, text: &str) -> String {
        let id = self.prompt(text).await;
        let (_, frame) = self.editor.response(&id, WAIT).await.expect("the prompt's response");
        stop_reason(&frame).unwrap_or_else(|| panic!("session/prompt failed: {}", frame.value))
    }

    pub async fn cancel(&self) {
        self.editor.notify("session/cancel", json!({ "sessionId": self.session })).await;
    }

    pub fn updates(&self) -> Vec<Value> {
        self.editor.updates(&self.session)
    }

    /// The statuses tool call `id` went through (`tool_call` then each `tool_call_update`
    /// that sets one), in order.
    pub fn tool_statuses(&self, id: &str) -> Vec<String> {
        self.updates()
            .iter()
            .filter(|u| u["toolCallId"] == id)
            .filter_map(|u| u["status"].as_str().map(str::to_string))
            .collect()
    }

    /// The ids of the tool calls announced in this session, in order.
    pub fn tool_calls(&self) -> Vec<String> {
        self.updates()
            .iter()
            .filter(|u| u["sessionUpdate"] == "tool_call")
            .filter_map(|u| u["toolCallId"].as_str().map(str::to_string))
            .collect()
    }

    /// Everything the agent said (`agent_message_chunk` texts), joined.
    pub fn agent_text(&self) -> String {
        self.updates()
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u.pointer("/content/text").and_then(Value::as_str))
            .collect()
    }

    /// Waits until tool call `id`'s status has been `status`.
    pub async fn wait_status(&self, id: &str, status: &str, within: Duration) -> Result<(), String> {
        let session = self.session.clone();
        self.editor
            .wait_for(within, |f| {
                f.update_for(&session).is_some_and(|u| u["toolCallId"] == id && u["status"] == status)
            })
            .await
            .map(|_| ())
            .map_err(|_| format!("tool call {id} was not {status} within {within:?}: {:?}", self.tool_statuses(id)))
    }

    /// Sends `session/cancel` for the turn answering `prompt` and checks what the protocol
    /// promises: the prompt answers `cancelled` within 1 s, no `session/update` of the session
    /// follows the response, and (if `pending` names the agent's open request to the editor)
    /// that request is withdrawn with `$/cancel_request`. Waits at most 3 s for the response,
    /// so a turn that does not race its cancellation fails fast, saying so.
    pub async fn cancel_and_check(&self, prompt: &Value, pending: Option<(&str, &Value)>, waiting_on: &str) {
        const PROMISED: Duration = Duration::from_secs(1);
        const PATIENCE: Duration = Duration::from_secs(3);
        let sent = tokio::time::Instant::now();
        self.cancel().await;
        let mut problems = Vec::new();
        let mut answered_at = None;
        match self.editor.response(prompt, PATIENCE).await {
            Err(_) => problems.push(format!(
                "no session/prompt response within {PATIENCE:?} of session/cancel (promised within {PROMISED:?}): \
                 the turn's wait on {waiting_on} does not race its cancellation"
            )),
            Ok((index, frame)) => {
                let took = frame.at.duration_since(sent);
                if took > PROMISED {
                    problems.push(format!(
                        "session/prompt answered {took:?} after session/cancel (promised within {PROMISED:?}) while \
                         waiting on {waiting_on}"
                    ));
                }
                match stop_reason(&frame) {
                    Some(r) if r == "cancelled" => {}
                    Some(r) => problems.push(format!("stop reason `{r}`, not `cancelled`")),
                    None => problems.push(format!("session/prompt failed: {}", frame.value)),
                }
                answered_at = Some(index);
            }
        }
        // Late updates would show up shortly after the response.
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some(index) = answered_at {
            let late: Vec<Value> =
                self.editor.frames()[index + 1..].iter().filter_map(|f| f.update_for(&self.session).cloned()).collect();
            if !late.is_empty() {
                problems.push(format!("{} session/update(s) after the prompt's response: {late:?}", late.len()));
            }
        }
        if let Some((method, id)) = pending {
            let withdrawn =
                self.editor.frames().iter().any(|f| {
                    f.method() == Some("$/cancel_request") && f.value.pointer("/params/requestId") == Some(id)
                });
            if !withdrawn {
                problems.push(format!("no $/cancel_request for the pending {method} request (id {id})"));
            }
        }
        assert!(problems.is_empty(), "cancel while waiting on {waiting_on}:\n  - {}", problems.join("\n  - "));
    }
}

/// `stopReason` of a `session/prompt` response (`None` for an error response).
pub fn stop_reason(frame: &Frame) -> Option<String> {
    frame.value.pointer("/result/stopReason").and_then(Value::as_str).map(str::to_string)
}

/// The tool results (role `tool`) in one model request, by the model's tool call id.
pub fn tool_results(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A stdio MCP server in POSIX sh: one tool, `slow`, whose calls are never answered.
/// Returns the script's path.
pub fn write_hanging_mcp_server(dir: &Path) -> PathBuf {
    let script = r#"#!/bin/sh
# A minimal MCP server (newline-delimited JSON-RPC on stdio) whose only tool never answers.
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      version=$(printf '%s' "$line" | sed -n 's/.*"protocolVersion":"\([^"]*\)".*/\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"hang","version":"1.0.0"}}}\n' "$id" "$version" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"slow","description":"Never answers","inputSchema":{"type":"object","properties":{}}}]}}\n' "$id" ;;
    *'"method":"ping"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *) : ;;
  esac
done
"#;
    let path = dir.join("hanging-mcp.sh");
    std::fs::write(&path, script).expect("write the MCP server script");
    path
}
