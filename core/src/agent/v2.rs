//! ACP v2 (preview, SDK 2.4.0's `v2/schema.json`) on a connection whose `initialize` chose 2.
//!
//! The v2 methods are thin adapters over the v1 handlers where only names differ (session/new,
//! list, resume, close, delete, set_config_option, auth/login and auth/logout); their answers
//! are respelled here and their updates by `event::v2` (through the outbox). What is new in v2
//! is the prompt lifecycle, below: `session/prompt` is answered with the user message's
//! `messageId` as soon as the message is stored, the turn runs on, and its progress is the
//! `state_update`s `running`, `requires_action` (a permission question waits) and `idle` with
//! the stop reason.
//!
//! **A prompt sent while a turn runs is inserted, not refused.** It joins the running turn at
//! its next model request (the steering queue, `Turn::take_in_steering`), where it is stored and
//! echoed as `user_message` with its own `messageId`. A prompt that arrives after the turn's
//! last model request starts the next turn as soon as this one ends. `session/cancel` ends the
//! turn (`idle`, `cancelled`) and drops the prompts it had not taken in yet.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::methods::Method;
use super::outbox::send_live;
use super::params::parse;
use super::session::{Session, Stoppable};
use super::steering::Steer;
use super::turn::{Turn, UserPrompt};
use super::{Agent, AgentError, RequestContext, prompt};
use crate::event::v2::{self as wire, Live, TurnError, TurnState};
use crate::event::{Event, v1};
use crate::rpc::RpcError;

impl Agent {
    /// A request on a v2 connection.
    pub(super) fn request_v2(
        self: Arc<Self>,
        method: &str,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, AgentError>> {
        let not_served = || {
            let e = RpcError::MethodNotFound(format!("{method} (not an ACP v2 method this agent serves)"));
            futures_util::future::ready(Err(e.into())).boxed()
        };
        let Some(known) = Method::from_name(method, true) else {
            return not_served();
        };
        match known {
            Method::Initialize => self.initialize(params).boxed(),
            Method::SessionNew => self.new_session_v2(params, ctx).boxed(),
            Method::SessionPrompt => self.prompt_v2(params).boxed(),
            Method::SessionList => self.list_sessions(params).boxed(),
            Method::SessionResume => self.resume_v2(params).boxed(),
            Method::SessionClose => futures_util::future::ready(self.close_session(params)).boxed(),
            Method::SessionDelete => self.delete_session(params).boxed(),
            Method::SessionSetConfigOption => {
                self.set_config_option(params).map(|r| r.map(|v1| respell_options(&v1))).boxed()
            }
            Method::AuthLogin => {
                self.authenticate(params).map(|r| r.map_err(|e| renamed(e, "authenticate", "auth/login"))).boxed()
            }
            Method::AuthLogout => {
                self.logout(params).map(|r| r.map_err(|e| renamed(e, "logout", "auth/logout"))).boxed()
            }
            Method::ToolCallCancel => futures_util::future::ready(self.cancel_tool_call(params)).boxed(),
            Method::TerminalCancel => futures_util::future::ready(self.cancel_terminal(params)).boxed(),
            Method::SessionCancel => {
                futures_util::future::ready(Err(RpcError::NotARequest(method.to_string()).into())).boxed()
            }
            // v1's only (`from_name` does not find them on v2).
            Method::Authenticate
            | Method::Logout
            | Method::SessionLoad
            | Method::SessionStop
            | Method::SessionSetMode
            | Method::SessionFork
            | Method::SessionSetTitle
            | Method::SessionArchive
            | Method::SessionUnarchive
            | Method::SessionStatus
            | Method::PermissionsList
            | Method::PermissionsRevoke
            | Method::SessionSteering => not_served(),
        }
    }

    /// `tool_call/cancel`: stops one running tool call; the turn goes on (the model reads that
    /// the user stopped it, and the card ends `cancelled`). Answered once the stop is asked for.
    fn cancel_tool_call(&self, params: Option<Value>) -> Result<Value, AgentError> {
        let req: ToolCallCancelRequest = parse(Method::ToolCallCancel.name(), params)?;
        self.stop_running(Method::ToolCallCancel, &req.session_id, Stoppable::Call(req.tool_call_id))
    }

    /// `terminal/cancel`: kills the command of one agent-owned terminal. Answered once the
    /// kill is asked for; the terminal's `exitStatus` confirms it, and the tool call that ran
    /// the command reports it to the model (the turn goes on).
    fn cancel_terminal(&self, params: Option<Value>) -> Result<Value, AgentError> {
        let req: TerminalCancelRequest = parse(Method::TerminalCancel.name(), params)?;
        self.stop_running(Method::TerminalCancel, &req.session_id, Stoppable::Terminal(req.terminal_id))
    }

    /// Stops `what` in the session, or says (-32602) that nothing such runs there.
    fn stop_running(&self, method: Method, session_id: &str, what: Stoppable) -> Result<Value, AgentError> {
        let session = self.sessions.get(session_id)?;
        if session.stop(&what) {
            return Ok(json!({}));
        }
        let (field, id, kind, why) = match &what {
            Stoppable::Call(id) => ("toolCallId", id, "tool call", "unknown, already final, or not cancellable"),
            Stoppable::Terminal(id) => ("terminalId", id, "terminal", "unknown or already exited"),
        };
        Err(AgentError::invalid_params(
            method.name(),
            format!("{field}: `{id}` is not a running {kind} of session {session_id} ({why})"),
        ))
    }

    /// The v2 `initialize` answer (after the version was chosen).
    pub(super) fn initialize_response_v2(
        store_open: bool,
        auth_methods: &[acp::AuthMethod],
        meta: Map<String, Value>,
    ) -> Value {
        let mut session = json!({
            "prompt": { "image": {}, "embeddedContext": {} },
            "mcp": { "stdio": {}, "http": {} },
            "additionalDirectories": {},
        });
        if store_open && let Some(s) = session.as_object_mut() {
            s.insert("delete".into(), json!({}));
        }
        let auth_methods: Vec<Value> = auth_methods.iter().filter_map(auth_method).collect();
        json!({
            "protocolVersion": 2,
            "info": { "name": "corvid", "title": "Corvid", "version": env!("CARGO_PKG_VERSION") },
            "capabilities": { "session": session, "auth": {} },
            "authMethods": auth_methods,
            "_meta": meta,
        })
    }

    /// `session/new`: v1's, answered in v2's words (its config options and slash commands).
    async fn new_session_v2(self: Arc<Self>, params: Option<Value>, ctx: RequestContext) -> Result<Value, AgentError> {
        let v1 = self.new_session(Some(with_v1_lists(params)), ctx).await?;
        let mut answer = respell_options(&v1);
        if let Some(obj) = answer.as_object_mut() {
            obj.insert("sessionId".into(), v1.get("sessionId").cloned().unwrap_or(Value::Null));
            obj.insert("availableCommands".into(), Value::Array(available_commands()));
        }
        Ok(answer)
    }

    /// `session/resume`: v1's resume, replaying the stored stream (in v2's words) when the
    /// client asks for it with `replayFrom: {type: "start"}`.
    async fn resume_v2(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        let (params, replay) = resume_params(params)?;
        let session_id = params.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_string();
        let v1 = self.clone().restore("session/resume", Some(params), replay).await?;
        // The SDK's rule: every resume sends the session's current state after any replay and
        // before its answer. A resumed session has no turn running yet; the last one ended, and
        // its idle says how (as stored).
        let last = match self.store("session/resume").await {
            Ok(store) => store.last_turn_ending(&session_id).await.ok().flatten(),
            Err(_) => None,
        };
        let ended = Live::State(TurnState::Idle(idle_after(last.as_ref())));
        send_live(&self.outbox, &session_id, &ended).await;
        self.outbox.flush().await;
        let mut answer = respell_options(&v1);
        if let Some(obj) = answer.as_object_mut() {
            obj.insert("availableCommands".into(), Value::Array(available_commands()));
        }
        Ok(answer)
    }

    /// `session/prompt`, v2: answered with the message's id once it is stored (a running turn
    /// takes it in later; see the module comment).
    async fn prompt_v2(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        let mut params = params.unwrap_or(Value::Null);
        prompt::normalize(&mut params);
        let req: acp::PromptRequest = parse("session/prompt", Some(params))?;
        let session = self.prompt_session(&req.session_id.0)?;
        let mut prompt = self.user_prompt(&session, req.prompt).await?;
        let message_id = uuid::Uuid::new_v4().to_string();
        prompt.message_id = Some(message_id.clone());
        let answer = json!({ "messageId": message_id });
        match self.clone().start_or_insert(session, prompt).await? {
            Started::Turn(echoed) => {
                // The turn stores and echoes the message first; a turn that fails before that
                // still ends with `idle`, so the answer never waits on it.
                let _ = echoed.await;
            }
            Started::Inserted => {}
        }
        Ok(answer)
    }

    /// Runs `prompt` as a new turn when the session is idle, or queues it into the running one.
    /// Boxed: a prompt the turn missed comes back through here from a spawned task.
    fn start_or_insert(
        self: Arc<Self>,
        session: Arc<Session>,
        mut prompt: UserPrompt,
    ) -> BoxFuture<'static, Result<Started, AgentError>> {
        async move { loop {
            match session.begin_turn(CancellationToken::new()) {
                Ok(claim) => {
                    let (tx, echoed) = oneshot::channel();
                    prompt.echoed = Some(tx);
                    self.claim_in_store(&claim).await?;
                    let this = self.clone();
                    self.detached.spawn(async move { this.run_turn_v2(claim, prompt).await });
                    return Ok(Started::Turn(echoed));
                }
                Err(AgentError::SessionBusy(_)) => {
                    let (taken, was_taken) = oneshot::channel();
                    // Kept to start the next turn with, should this one end without it.
                    let spare = copy_of(&prompt);
                    match session.steer(Steer { prompt, taken }) {
                        Ok(cancel) => {
                            let (this, session) = (self.clone(), session.clone());
                            self.detached.spawn(async move {
                                if was_taken.await.is_err() && !cancel.is_cancelled() {
                                    // The turn ended after its last model request: the next
                                    // turn is this prompt's.
                                    if let Err(e) = this.start_or_insert(session.clone(), spare).await {
                                        tracing::warn!(session_id = %session.id, error = %e, "an inserted prompt could not start its turn");
                                    }
                                }
                            });
                            return Ok(Started::Inserted);
                        }
                        // The turn ended meanwhile: start one.
                        Err(back) => prompt = back.prompt,
                    }
                }
                Err(other) => return Err(other),
            }
        } }
        .boxed()
    }

    /// One v2 turn to its end, then `idle` with its stop reason (or its error).
    async fn run_turn_v2(self: Arc<Self>, claim: super::session::TurnClaim, prompt: UserPrompt) {
        let session_id = claim.session.id.clone();
        let end = Turn::new(claim, self.turn_context()).run(prompt).await;
        let state = match end {
            Ok(end) => Ok(end.stop),
            Err(e) => {
                let wire_error = e.to_wire();
                Err(TurnError { code: i64::from(wire_error.code), message: wire_error.message })
            }
        };
        send_live(&self.outbox, &session_id, &Live::State(TurnState::Idle(state))).await;
        self.outbox.flush().await;
    }
}

/// The `idle` a resumed session reports: how its last turn ended, as stored. A turn that a
/// crash or an exit stopped before it finished (`interrupted`) reads as cancelled; a failed one
/// as an error (its error object is not stored).
fn idle_after(last: Option<&crate::store::TurnEnding>) -> Result<crate::event::StopReason, TurnError> {
    use crate::event::StopReason;
    match last.map(|t| (t.status.as_str(), t.stop_reason.as_deref())) {
        Some(("finished", Some(reason))) => Ok(StopReason::from_stored(reason).unwrap_or(StopReason::EndTurn)),
        Some(("failed", _)) => Err(TurnError { code: -32603, message: "the session's last turn failed".into() }),
        Some(("interrupted", _)) => Ok(StopReason::Cancelled),
        _ => Ok(StopReason::EndTurn),
    }
}

/// A prompt's copy, without its echo signal.
fn copy_of(p: &UserPrompt) -> UserPrompt {
    UserPrompt {
        text: p.text.clone(),
        images: p.images.clone(),
        blocks: p.blocks.clone(),
        message_id: p.message_id.clone(),
        echoed: None,
    }
}

/// `tool_call/cancel`'s params.
#[derive(Debug, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCancelRequest {
    pub session_id: String,
    pub tool_call_id: String,
}

/// `terminal/cancel`'s params.
#[derive(Debug, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalCancelRequest {
    pub session_id: String,
    pub terminal_id: String,
}

/// How a v2 prompt was taken.
enum Started {
    /// A new turn; resolves once the message is stored and echoed.
    Turn(oneshot::Receiver<()>),
    /// Queued into the running turn.
    Inserted,
}

/// `session/resume`'s v2 params as v1's, and whether to replay (`replayFrom: {type: "start"}`).
pub(super) fn resume_params(params: Option<Value>) -> Result<(Value, bool), AgentError> {
    let mut params = with_v1_lists(params);
    let replay_from = params.as_object_mut().and_then(|p| p.remove("replayFrom")).filter(|v| !v.is_null());
    let replay = match replay_from.as_ref().map(|r| r.get("type").and_then(Value::as_str)) {
        None => false,
        Some(Some("start")) => true,
        Some(other) => {
            return Err(AgentError::invalid_params(
                "session/resume",
                format!("replayFrom: type {other:?} is not supported (only \"start\")"),
            ));
        }
    };
    Ok((params, replay))
}

/// A v2 `initialize`'s params before anything is set: `info` names the client.
pub(super) fn check_initialize(params: &Value) -> Result<(), AgentError> {
    if params.get("info").is_none_or(|i| !i.is_object()) {
        return Err(AgentError::invalid_params("initialize", "info: required (the client's name and version)"));
    }
    Ok(())
}

/// A v1 handler's params error under the v2 method's name (`auth/login` is v1's `authenticate`).
pub(super) fn renamed(e: AgentError, v1: &str, v2: &str) -> AgentError {
    match e {
        AgentError::Rpc(RpcError::InvalidParams(message)) => {
            match message.strip_prefix(v1).and_then(|m| m.strip_prefix(": ")) {
                Some(rest) => RpcError::InvalidParams(format!("{v2}: {rest}")).into(),
                None => RpcError::InvalidParams(message).into(),
            }
        }
        other => other,
    }
}

/// v2 params in v1's shape: the lists v1 requires filled in (`mcpServers` may be omitted or
/// null in v2), and stdio MCP servers without the `type: "stdio"` v2 requires and v1 lacks.
pub(super) fn with_v1_lists(params: Option<Value>) -> Value {
    let mut params = params.unwrap_or_else(|| json!({}));
    if let Some(obj) = params.as_object_mut() {
        for key in ["mcpServers", "additionalDirectories"] {
            if obj.get(key).is_none_or(Value::is_null) {
                obj.insert(key.into(), json!([]));
            }
        }
        if let Some(servers) = obj.get_mut("mcpServers").and_then(Value::as_array_mut) {
            for server in servers.iter_mut().filter_map(Value::as_object_mut) {
                if server.get("type").and_then(Value::as_str) == Some("stdio") {
                    server.remove("type");
                }
            }
        }
    }
    params
}

/// `{configOptions}` of a v1 answer in v2's spelling (`_meta` kept, the rest dropped: v2 has
/// no modes or model lists beside the options).
fn respell_options(v1: &Value) -> Value {
    let mut out = Map::new();
    if let Some(options) = v1.get("configOptions") {
        out.insert("configOptions".into(), Value::Array(wire::config_options(options)));
    }
    if let Some(meta) = v1.get("_meta").filter(|m| !m.is_null()) {
        out.insert("_meta".into(), meta.clone());
    }
    Value::Object(out)
}

/// Today's slash commands in v2's spelling.
fn available_commands() -> Vec<Value> {
    let update = v1::payload(&Event::Commands(super::commands::available()))
        .ok()
        .and_then(|p| serde_json::from_str::<Value>(&p.json).ok());
    update.and_then(|u| u.get("availableCommands").map(wire::commands)).unwrap_or_default()
}

/// A v1 auth method in v2's spelling (`type` and `methodId`).
fn auth_method(m: &acp::AuthMethod) -> Option<Value> {
    let v1 = serde_json::to_value(m).ok()?;
    let mut obj = v1.as_object()?.clone();
    let id = obj.remove("id")?;
    obj.insert("methodId".into(), id);
    obj.entry("type").or_insert_with(|| "agent".into());
    Some(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::StopReason;
    use crate::store::TurnEnding;

    #[test]
    fn a_resumed_session_is_idle_the_way_its_last_turn_ended() {
        let ended = |status: &str, reason: Option<&str>| {
            idle_after(Some(&TurnEnding { status: status.into(), stop_reason: reason.map(String::from) }))
        };
        assert_eq!(idle_after(None), Ok(StopReason::EndTurn), "no turn yet");
        assert_eq!(ended("finished", Some("cancelled")), Ok(StopReason::Cancelled));
        assert_eq!(ended("finished", Some("max_tokens")), Ok(StopReason::MaxTokens));
        assert_eq!(ended("finished", Some("end_turn")), Ok(StopReason::EndTurn));
        assert_eq!(ended("interrupted", None), Ok(StopReason::Cancelled));
        assert!(ended("failed", None).is_err());
    }
}
