//! Sessions that outlive the process: load (with exact replay), resume, list, delete, stop,
//! and closing turns that a crash left running.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::Agent;
use super::error::AgentError;
use super::new_session::{existing_roots, report_mcp_failures};
use super::outbox::{agent_note, emit, record_message};
use super::session::{Restored, Session, TurnClaim};
use crate::event::{Event, Terminal, ToolPatch, ToolStatus, v1};
use crate::provider::ChatMessage;
use crate::rpc::RpcError;
use crate::store::batch::Record;
use crate::store::time::now_rfc3339;
use crate::store::{ArchiveFilter, Claim, SessionRecord, Store, process};

/// Sessions per `session/list` page.
const PAGE: i64 = 50;

/// What an interrupted turn says on replay.
pub const INTERRUPTED_NOTE: &str =
    "\n\n⚠️ This turn was interrupted: Corvid stopped before it finished. Unfinished tool calls were marked failed.";

impl Agent {
    /// The store, or -32601 naming why there is none (these methods are not advertised then).
    pub(super) async fn store(&self, method: &str) -> Result<Store, AgentError> {
        self.store.clone().await.map_err(|reason| {
            RpcError::MethodNotFound(format!("{method} (the session store is unavailable: {reason})")).into()
        })
    }

    /// `session/load` (`replay = true`) and `session/resume` (`replay = false`; a v2 resume
    /// asked to replay from the start has `replay = true`).
    pub(super) async fn restore(
        self: Arc<Self>,
        method: &'static str,
        params: Option<Value>,
        replay: bool,
    ) -> Result<Value, AgentError> {
        let mut params = params;
        let requested = super::requested_agent(method, &mut params)?;
        let (session_id, cwd, dirs, mcp_servers, system_prompt) = if method == "session/load" {
            let r: acp::LoadSessionRequest = super::params::parse(method, params)?;
            (r.session_id, r.cwd, r.additional_directories, r.mcp_servers, r.system_prompt)
        } else {
            let r: acp::ResumeSessionRequest = super::params::parse(method, params)?;
            (r.session_id, r.cwd, r.additional_directories, r.mcp_servers, r.system_prompt)
        };
        let request = Reopen {
            method,
            id: session_id.0.to_string(),
            roots: existing_roots(method, &cwd, &dirs)?,
            requested,
            system_prompt: super::system_prompt::client_text(method, system_prompt.as_ref())?,
        };
        let id = request.id.clone();
        self.check_session_limit(method, Some(&id))?;
        let store = self.store(method).await?;
        let (session, mcp) = self.reopen(&store, request, &mcp_servers).await?;
        // Today's slash commands: the client needs them afresh on every load and resume. Sent
        // once and not stored, in the replay where the session's first list stood, else before
        // the response: the replay and all it brings end with the response (issue 44).
        let commands = v1::payload(&Event::Commands(super::commands::available()))
            .map_err(|e| AgentError::internal(format!("{method}: the slash commands: {e}")))?
            .json;
        let commands_sent = replay && self.replay(&store, &id, &commands).await?;
        self.sessions.insert(session.clone());
        if !commands_sent {
            super::outbox::send_unstored(&self.outbox, &id, &Event::Commands(super::commands::available())).await;
        }
        report_mcp_failures(&self.outbox, &session, self.client_features().notices).await;
        self.outbox.flush().await;
        tracing::info!(session_id = %id, replay, "session restored");
        let options = v1::config_options(&session.config_options());
        if method == "session/load" {
            super::to_value(
                &acp::LoadSessionResponse::new().config_options(options).modes(session.mode_state()).meta(mcp),
            )
        } else {
            super::to_value(
                &acp::ResumeSessionResponse::new().config_options(options).modes(session.mode_state()).meta(mcp),
            )
        }
    }

    /// A stored session made live again (not yet in `sessions`): its settings, model context
    /// and rules, turns a crash left open closed, and its MCP servers connected. A session
    /// this connection already holds is taken over (its turn ends first). Returns the session
    /// and the `_meta` that reports its MCP servers.
    pub(super) async fn reopen(
        &self,
        store: &Store,
        request: Reopen,
        mcp_servers: &[acp::McpServer],
    ) -> Result<(Arc<Session>, serde_json::Map<String, Value>), AgentError> {
        let Reopen { method, id, roots, requested, system_prompt } = request;
        let record = store.session(&id).await?.ok_or_else(|| AgentError::SessionNotFound(id.clone()))?;
        if let Some(parent) = store.parent_of(&id).await? {
            let why = format!("sessionId: {id} is a subagent of session {parent}; load or resume its parent instead");
            return Err(AgentError::invalid_params(method, why));
        }
        let agent = self.choose_agent(method, requested, record.agent_alias.as_deref())?;
        let source = self.model_source(agent.as_ref()).await?;
        if let Some(live) = self.sessions.remove(&id) {
            live.cancel_turn();
        }
        let mut state = restored_state(store, &record).await?;
        if !source.models.contains(&state.model) {
            tracing::info!(session_id = %id, model = %state.model, "stored model is not offered now; using the default");
            state.model = source.default_model.clone();
        }
        if let Some(text) = system_prompt {
            // The client's instructions of this load replace those saved with the session.
            self.outbox.push(Record::SystemPrompt { session_id: id.clone(), text: text.clone() }).await;
            state.client_prompt = Some(text);
        }
        let session = Arc::new(Session::restore(
            id.clone(),
            roots,
            (source, agent),
            crate::sandbox::Status::of(&self.config),
            state,
        ));
        session.state().rules = store
            .rules(&id)
            .await?
            .into_iter()
            .map(|r| super::modes::Rule { tool: r.tool, scope: r.scope, allow: r.allow })
            .collect();
        self.close_interrupted_children(store, &session).await?;
        self.close_interrupted_turns(store, &session).await?;
        self.close_orphaned_terminals(store, &session).await?;
        let mcp = self.attach_mcp(&session, mcp_servers).await;
        Ok((session, mcp))
    }

    /// Stores the turn as running, if no other process (or connection) runs one in the
    /// session and nothing was stored in it since this connection loaded it: the check that
    /// lets several processes share one store without forking a session's ledger.
    pub(super) async fn claim_in_store(&self, claim: &TurnClaim) -> Result<(), AgentError> {
        let Ok(store) = self.store.clone().await else { return Ok(()) };
        // What this connection queued (the previous turn's end above all) is stored first.
        self.outbox.flush().await;
        let session = &claim.session;
        let counters = || (session.peek_seq(), session.state().next_message_seq);
        let claimed = store.claim_turn(&session.id, claim.number as i64, &now_rfc3339(), counters).await?;
        match claimed {
            Claim::Claimed => Ok(()),
            Claim::Busy { turn, host } => Err(AgentError::SessionBusyElsewhere { id: session.id.clone(), turn, host }),
            Claim::Stale => Err(AgentError::SessionStale(session.id.clone())),
        }
    }

    /// Terminals that never reported an exit (background commands', after the turns a crash
    /// left open were closed) are closed, stored as ended, so no replay shows a command
    /// running that nothing can stop. Whatever held the
    /// session before (a process that crashed, or this connection, whose session object is
    /// replaced here) no longer runs them for this session: its jobs end with it.
    async fn close_orphaned_terminals(&self, store: &Store, session: &Session) -> Result<(), AgentError> {
        let mut open = BTreeSet::new();
        for payload in store.terminal_events(&session.id).await? {
            if let Ok(update) = serde_json::from_str::<Value>(&payload) {
                track_terminal(&update, &mut open);
            }
        }
        if open.is_empty() {
            return Ok(());
        }
        for id in open {
            let exited = Event::Terminal(Terminal::Exited { id, exit_code: None, signal: None });
            emit(&self.outbox, session, None, &exited, false).await;
        }
        // In the store before a replay reads it.
        self.outbox.flush().await;
        Ok(())
    }

    /// Turns left `running` by a process that no longer exists are closed: open tool calls
    /// are marked failed and a note is added, all stored in the ledger (so every later load
    /// replays the same thing), and the partial answer joins the model's context.
    /// Returns how many it closed.
    pub(super) async fn close_interrupted_turns(&self, store: &Store, session: &Session) -> Result<usize, AgentError> {
        let mut closed = 0;
        for running in store.running_turns(&session.id).await? {
            if process::is_running(&running) {
                continue;
            }
            let mut open_tools: BTreeMap<String, ()> = BTreeMap::new();
            // Agent-owned terminals (v2) whose command never reported its exit.
            let mut open_terminals = BTreeSet::new();
            let mut partial = String::new();
            for payload in store.turn_events(&session.id, running.turn).await? {
                let Ok(update) = serde_json::from_str::<Value>(&payload) else { continue };
                let id = update.get("toolCallId").and_then(Value::as_str).map(str::to_string);
                let done = matches!(update.get("status").and_then(Value::as_str), Some("completed" | "failed"));
                match update.get("sessionUpdate").and_then(Value::as_str) {
                    Some("tool_call" | "tool_call_update") => {
                        if let Some(id) = id {
                            if done {
                                open_tools.remove(&id);
                            } else {
                                open_tools.insert(id, ());
                            }
                        }
                    }
                    Some("agent_message_chunk") => {
                        if let Some(t) = update.pointer("/content/text").and_then(Value::as_str) {
                            partial.push_str(t);
                        }
                    }
                    Some("terminal_update") => track_terminal(&update, &mut open_terminals),
                    _ => {}
                }
            }
            let turn = Some(running.turn);
            // Its process is gone with Corvid's: the terminal ends, and can no longer be cancelled.
            for id in open_terminals {
                let exited = Event::Terminal(Terminal::Exited { id, exit_code: None, signal: None });
                emit(&self.outbox, session, turn, &exited, false).await;
            }
            for id in open_tools.into_keys() {
                let update = Event::ToolChanged(ToolPatch::new(id).status(ToolStatus::Failed));
                emit(&self.outbox, session, turn, &update, false).await;
            }
            let note = agent_note(INTERRUPTED_NOTE.trim_start().to_string());
            emit(&self.outbox, session, turn, &note, false).await;
            let content = format!("{partial}{INTERRUPTED_NOTE}");
            let message = ChatMessage::assistant(content, Vec::new());
            record_message(&self.outbox, session, &message).await;
            session.state().history.push(message);
            self.outbox
                .push(Record::TurnEnd {
                    session_id: session.id.clone(),
                    turn: running.turn,
                    status: "interrupted",
                    stop_reason: None,
                    at: now_rfc3339(),
                })
                .await;
            tracing::warn!(session_id = %session.id, turn = running.turn, "closed a turn interrupted by a crash");
            closed += 1;
        }
        self.outbox.flush().await;
        Ok(closed)
    }

    pub(super) async fn list_sessions(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "session/list";
        let req: acp::ListSessionsRequest = super::params::parse(M, params)?;
        let store = self.store(M).await?;
        let after = req.cursor.as_deref().map(decode_cursor).transpose()?;
        let cwd = req.cwd.as_ref().map(|c| c.display().to_string());
        let archived = match &req.archived {
            None | Some(acp::SessionArchiveFilter::Exclude) => ArchiveFilter::Exclude,
            Some(acp::SessionArchiveFilter::Include) => ArchiveFilter::Include,
            Some(acp::SessionArchiveFilter::Only) => ArchiveFilter::Only,
            Some(other) => {
                let shown = serde_json::to_string(other).unwrap_or_default();
                return Err(AgentError::invalid_params(
                    M,
                    format!("archived: {shown} is not a filter (exclude, include, only)"),
                ));
            }
        };
        let mut rows = store.list(cwd.as_deref(), archived, after, PAGE + 1).await?;
        let next = if rows.len() as i64 > PAGE {
            rows.truncate(PAGE as usize);
            rows.last().map(encode_cursor)
        } else {
            None
        };
        let sessions = rows
            .into_iter()
            .map(|r| {
                acp::SessionInfo::new(r.id, PathBuf::from(r.cwd))
                    .additional_directories(r.additional_directories.into_iter().map(PathBuf::from).collect())
                    .title(r.title)
                    .updated_at(r.updated_at)
                    // Said either way when the listing may hold both kinds.
                    .archived((archived != ArchiveFilter::Exclude).then_some(r.archived))
            })
            .collect();
        super::to_value(&acp::ListSessionsResponse::new(sessions).next_cursor(next))
    }

    pub(super) async fn delete_session(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "session/delete";
        let req: acp::DeleteSessionRequest = super::params::parse(M, params)?;
        let id = req.session_id.0.to_string();
        if let Some(live) = self.sessions.remove(&id) {
            live.cancel_turn();
        }
        // Unknown ids succeed silently, as the spec asks.
        self.outbox.push(Record::Delete { session_id: id, at: now_rfc3339() }).await;
        self.outbox.flush().await;
        super::to_value(&acp::DeleteSessionResponse::new())
    }

    /// `_corvid/permissions/list`: the session's durable "always" answers.
    pub(super) async fn list_rules(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "_corvid/permissions/list";
        let req: RuleListRequest = super::params::parse(M, params)?;
        let store = self.store(M).await?;
        let rules: Vec<Value> = store
            .rules(&req.session_id)
            .await?
            .into_iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "tool": r.tool, "scope": r.scope,
                    "decision": if r.allow { "allow" } else { "reject" }, "createdAt": r.created_at,
                })
            })
            .collect();
        Ok(serde_json::json!({ "rules": rules }))
    }

    /// `_corvid/permissions/revoke`: forgets one "always" answer, in the store and the live session.
    pub(super) async fn revoke_rule(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "_corvid/permissions/revoke";
        let req: RuleRevokeRequest = super::params::parse(M, params)?;
        let store = self.store(M).await?;
        let Some(rule) = store.revoke_rule(&req.session_id, req.id).await? else {
            return Err(AgentError::invalid_params(M, format!("id: no rule {} in force for this session", req.id)));
        };
        if let Ok(session) = self.sessions.get(&req.session_id) {
            let revoked = super::modes::Rule { tool: rule.tool, scope: rule.scope, allow: rule.allow };
            session.state().rules.retain(|r| *r != revoked);
        }
        Ok(serde_json::json!({}))
    }

    /// ZeroClaw's `session/stop`: the running turn finishes, then the session is closed.
    pub(super) async fn stop_session(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        let req: acp::CloseSessionRequest = super::params::parse("session/stop", params)?;
        let session = self.sessions.get(&req.session_id.0)?;
        loop {
            let idle = session.idle.notified();
            if !session.is_busy() {
                break;
            }
            idle.await;
        }
        self.sessions.close(&session.id);
        Ok(serde_json::json!({}))
    }
}

/// Which stored session to make live, where, and with what the request adds.
pub(super) struct Reopen {
    pub method: &'static str,
    pub id: String,
    pub roots: crate::roots::Roots,
    /// The agent alias the request names, if any.
    pub requested: Option<(&'static str, String)>,
    /// The request's `systemPrompt` text, replacing the stored one.
    pub system_prompt: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RuleListRequest {
    session_id: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RuleRevokeRequest {
    session_id: String,
    id: i64,
}

pub(super) async fn restored_state(store: &Store, record: &SessionRecord) -> Result<Restored, AgentError> {
    let (next_seq, next_message_seq, next_turn) = store.counters(&record.id).await?;
    let spent = store.last_usage(&record.id).await?.map(|p| super::accounting::spent_from(&p)).unwrap_or_default();
    let mut history = Vec::new();
    for json in store.messages(&record.id).await? {
        match serde_json::from_str::<ChatMessage>(&json) {
            Ok(m) => history.push(m),
            Err(e) => tracing::warn!(error = %e, "skipping a damaged stored message"),
        }
    }
    Ok(Restored {
        model: record.model.clone().unwrap_or_default(),
        history,
        title: record.title.clone(),
        client_prompt: record.system_prompt.clone(),
        next_seq,
        next_message_seq,
        next_turn: next_turn as u64,
        mode: record.mode.as_deref().and_then(super::modes::Mode::from_id).unwrap_or_default(),
        spent,
        thought_level: record
            .thought_level
            .clone()
            .filter(|l| crate::provider::anthropic::thinking_budget(l).is_some())
            .unwrap_or_else(|| super::session::DEFAULT_THOUGHT_LEVEL.to_string()),
    })
}

fn encode_cursor(r: &SessionRecord) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::json!([r.updated_at, r.id]).to_string())
}

pub(super) fn decode_cursor(cursor: &str) -> Result<(String, String), AgentError> {
    let invalid = || AgentError::invalid_params("session/list", "cursor: not a cursor this agent issued");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let (at, id): (String, String) = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    Ok((at, id))
}

/// Follows one stored `terminal_update`: a terminal is open from its `command` (the start)
/// until its `exitStatus`.
fn track_terminal(update: &Value, open: &mut BTreeSet<String>) {
    let Some(id) = update.get("terminalId").and_then(Value::as_str) else { return };
    if update.get("exitStatus").is_some_and(|e| !e.is_null()) {
        open.remove(id);
    } else if update.get("command").is_some() {
        open.insert(id.to_string());
    }
}
