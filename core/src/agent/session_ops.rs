//! Operations on a session as a whole, beside its turns: `session/fork`, `session/set_title`,
//! `session/archive` / `session/unarchive` and `session/status`. Each is persisted through the
//! outbox like every other write, so both store backends hold it.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use futures_util::FutureExt;
use serde_json::Value;

use super::new_session::{existing_roots, report_mcp_failures};
use super::outbox::{emit, record_message, send_unstored};
use super::params::parse;
use super::restore::Reopen;
use super::rewind;
use super::{Agent, AgentError, commands, requested_agent, to_value};
use crate::event::{Event, v1};
use crate::provider::ChatMessage;
use crate::rpc::RequestContext;
use crate::store::batch::{Fork, Record};
use crate::store::process;
use crate::store::time::now_rfc3339;

/// A fork's title: "Fork of …", or for a rewind the source's own with "(rewound)" once.
fn fork_title(source: Option<&str>, rewind: bool) -> String {
    let source = source.unwrap_or("an untitled session");
    if rewind { format!("{} (rewound)", source.trim_end_matches(" (rewound)")) } else { format!("Fork of {source}") }
}

/// Longest title `session/set_title` keeps, in characters (longer ones end in "…").
const TITLE_CHARS: usize = 200;

impl Agent {
    /// `session/fork`: a new session holding the source's history so far (its ledger, model
    /// context, settings and rules of the store), in the roots the request names, titled
    /// "Fork of …", and independent from then on. The source must be idle: a fork of a
    /// running turn would hold half of it.
    pub(super) async fn fork_session(
        self: Arc<Self>,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> Result<Value, AgentError> {
        const M: &str = "session/fork";
        let mut params = params;
        let requested = requested_agent(M, &mut params)?;
        let req: acp::ForkSessionRequest = parse(M, params)?;
        let rewind_to = super::rewind::requested(req.meta.as_ref())?;
        let from = req.session_id.0.to_string();
        let roots = existing_roots(M, &req.cwd, &req.additional_directories)?;
        let system_prompt = super::system_prompt::client_text(M, req.system_prompt.as_ref())?;
        self.check_session_limit(M, None)?;
        let store = self.store(M).await?;
        if self.sessions.get(&from).is_ok_and(|live| live.is_busy()) {
            return Err(AgentError::SessionBusy(from));
        }
        // What this connection queued for the source is part of what the fork copies.
        self.outbox.flush().await;
        let source = store.session(&from).await?.ok_or_else(|| AgentError::SessionNotFound(from.clone()))?;
        if let Some(parent) = store.parent_of(&from).await? {
            let why = format!("sessionId: {from} is a subagent of session {parent}; fork its parent instead");
            return Err(AgentError::invalid_params(M, why));
        }
        if let Some(running) = store.running_turns(&from).await?.into_iter().find(process::is_running) {
            return Err(AgentError::SessionBusyElsewhere { id: from, turn: running.turn, host: running.owner.host });
        }
        let rewind = match &rewind_to {
            Some((message_id, _)) => Some(rewind::before_message(&store, &from, message_id).await?),
            None => None,
        };
        let id = uuid::Uuid::new_v4().to_string();
        let title = fork_title(source.title.as_deref(), rewind.is_some());
        let dirs: Vec<String> = roots.additional().iter().map(|p| p.display().to_string()).collect();
        let fork = Fork {
            from,
            to: id.clone(),
            cwd: roots.cwd().display().to_string(),
            additional_directories: serde_json::to_string(&dirs).unwrap_or_else(|_| "[]".into()),
            title: title.clone(),
            at: now_rfc3339(),
            end: rewind.as_ref().map(|r| r.end),
        };
        self.outbox.push(Record::Fork(Box::new(fork))).await;
        self.outbox.flush().await;
        if store.session(&id).await?.is_none() {
            return Err(AgentError::internal(format!("{M}: the fork could not be stored (the log says why)")));
        }
        let request = Reopen { method: M, id: id.clone(), roots, requested, system_prompt };
        let (session, mut mcp) = self.reopen(&store, request, &req.mcp_servers).await?;
        if let Some(rewind) = rewind {
            let restore = rewind_to.is_some_and(|(_, restore)| restore);
            let rewound = self.rewound(&session, rewind.files, restore).await?;
            let corvid = mcp.entry("corvid").or_insert_with(|| serde_json::json!({}));
            if let Some(corvid) = corvid.as_object_mut() {
                corvid.insert("rewind".into(), rewound);
            }
        }
        self.sessions.insert(session.clone());
        tracing::info!(session_id = %id, source = %req.session_id, "session forked");
        // Once the client knows the fork: its title (stored, so a load of the fork replays
        // it after the copied history), today's slash commands (sent only, as after a load)
        // and any MCP failures.
        let (outbox, announced, notices) = (self.outbox.clone(), session.clone(), self.client_features().notices);
        ctx.after_response(
            async move {
                emit(&outbox, &announced, None, &Event::SessionInfo { title, updated_at: now_rfc3339() }, true).await;
                send_unstored(&outbox, &announced.id, &Event::Commands(commands::available())).await;
                report_mcp_failures(&outbox, &announced, notices).await;
                outbox.flush().await;
            }
            .boxed(),
        );
        to_value(
            &acp::ForkSessionResponse::new(id)
                .config_options(v1::config_options(&session.config_options()))
                .modes(session.mode_state())
                .meta(mcp),
        )
    }

    /// The files a rewind's fork sets back (restored here with `restore`) and the model's note
    /// about it, stored as the last message of the fork's context; the answer's
    /// `_meta.corvid.rewind`.
    async fn rewound(
        &self,
        session: &Arc<super::session::Session>,
        files: Vec<rewind::RewoundFile>,
        restore: bool,
    ) -> Result<Value, AgentError> {
        let restored = if restore {
            let jail = crate::tools::Jail::new(session.roots.clone(), self.config.forbidden_paths.clone());
            let listed = files.clone();
            let done = tokio::task::spawn_blocking(move || rewind::restore(&jail, &listed))
                .await
                .map_err(|e| AgentError::internal(format!("session/fork: restoring files: {e}")))?;
            Some(done)
        } else {
            None
        };
        let note = ChatMessage::user(rewind::note(&files, restored.as_ref()));
        record_message(&self.outbox, session, &note).await;
        session.state().history.push(note);
        self.outbox.flush().await;
        Ok(rewind::meta(&files, restored.as_ref()))
    }

    /// `session/set_title`: the user's name for the session. A session live on this connection
    /// also tells its client (`session_info_update`, stored); a stored one only changes its row.
    pub(super) async fn set_title(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "session/set_title";
        let req: acp::SetSessionTitleRequest = parse(M, params)?;
        let id = req.session_id.0.to_string();
        let trimmed = req.title.trim();
        if trimmed.is_empty() {
            return Err(AgentError::invalid_params(M, "title: must not be empty"));
        }
        let title = super::turn::clip_title(trimmed, TITLE_CHARS);
        let record = Record::Title { session_id: id.clone(), title: title.clone() };
        if let Ok(session) = self.sessions.get(&id) {
            session.state().title = Some(title.clone());
            self.outbox.push(record).await;
            let update = Event::SessionInfo { title: title.clone(), updated_at: now_rfc3339() };
            emit(&self.outbox, &session, None, &update, true).await;
        } else {
            let store = self.store(M).await?;
            store.session(&id).await?.ok_or_else(|| AgentError::SessionNotFound(id.clone()))?;
            self.outbox.push(record).await;
        }
        self.outbox.flush().await;
        to_value(&acp::SetSessionTitleResponse::new(title))
    }

    /// `session/archive` (`archive`) and `session/unarchive`: whether the session stays in the
    /// default `session/list`. Nothing else changes; a live session goes on.
    pub(super) async fn set_archived(
        self: Arc<Self>,
        method: &'static str,
        params: Option<Value>,
        archive: bool,
    ) -> Result<Value, AgentError> {
        let id = if archive {
            parse::<acp::ArchiveSessionRequest>(method, params)?.session_id
        } else {
            parse::<acp::UnarchiveSessionRequest>(method, params)?.session_id
        };
        let id = id.0.to_string();
        let store = self.store(method).await?;
        store.session(&id).await?.ok_or_else(|| AgentError::SessionNotFound(id.clone()))?;
        self.outbox.push(Record::Archived { session_id: id, at: archive.then(now_rfc3339) }).await;
        self.outbox.flush().await;
        if archive {
            to_value(&acp::ArchiveSessionResponse::new())
        } else {
            to_value(&acp::UnarchiveSessionResponse::new())
        }
    }

    /// `session/status`, without side effects: `open` when this connection holds the session
    /// (the only memory this process can speak for), `saved` when only the store has it.
    pub(super) async fn session_status(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "session/status";
        let req: acp::SessionStatusRequest = parse(M, params)?;
        let id = req.session_id.0.to_string();
        if self.sessions.get(&id).is_ok() {
            return to_value(&acp::SessionStatusResponse::new(acp::SessionStatus::Open));
        }
        let saved = match self.store.clone().await {
            Ok(store) => store.session(&id).await?.is_some(),
            Err(_) => false,
        };
        if saved {
            to_value(&acp::SessionStatusResponse::new(acp::SessionStatus::Saved))
        } else {
            Err(AgentError::SessionNotFound(id))
        }
    }
}
