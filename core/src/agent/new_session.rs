//! `session/new`: a session's roots, agent alias, model source and MCP servers, stored before
//! the client learns its id.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use futures_util::FutureExt;
use serde_json::Value;

use super::modes::Mode;
use super::outbox::{self, Outbox};
use super::params::parse;
use super::session::Session;
use super::{Agent, AgentError, commands, requested_agent, to_value};
use crate::event::{Event, v1};
use crate::roots::Roots;
use crate::rpc::RequestContext;
use crate::sandbox::Confinement;
use crate::store::batch::Record;
use crate::store::time::now_rfc3339;

/// Tells the user which MCP servers failed and why: a `notice` when the client shows them,
/// otherwise an agent message.
pub(super) async fn report_mcp_failures(outbox: &Outbox, session: &Session, notices: bool) {
    let Some(mcp) = session.mcp.get() else { return };
    for status in &mcp.statuses {
        let Some(error) = &status.error else { continue };
        let title = format!("MCP server `{}` is not available", status.name);
        let update = if notices {
            Event::Notice { title, description: error.clone() }
        } else {
            outbox::agent_note(format!("{title}: {error}. Its tools are not offered in this session.\n\n"))
        };
        outbox::emit(outbox, session, None, &update, true).await;
    }
}

impl Agent {
    /// Connects the session's MCP servers and returns the `_meta` that reports them.
    pub(super) async fn attach_mcp(
        &self,
        session: &Session,
        servers: &[acp::McpServer],
    ) -> serde_json::Map<String, Value> {
        // The servers outlive mode changes, so they get the workspace policy, not read-only.
        let confinement = Confinement::for_session(&self.config, &session.roots, &session.id, false);
        let sandbox = (&confinement, self.config.sandbox.mcp_servers.as_slice());
        let servers =
            crate::mcp::McpServers::connect(servers, self.http(), self.config.mcp_call_timeout, sandbox).await;
        let mut meta = serde_json::Map::new();
        meta.insert("corvid".into(), serde_json::json!({ "mcpServers": servers.meta() }));
        let _ = session.mcp.set(Arc::new(servers));
        meta
    }

    pub(super) async fn new_session(
        self: Arc<Self>,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> Result<Value, AgentError> {
        const M: &str = "session/new";
        let mut params = params;
        let requested = requested_agent(M, &mut params)?;
        let req: acp::NewSessionRequest = parse(M, params)?;
        self.check_session_limit(M, None)?;
        let roots = existing_roots(M, &req.cwd, &req.additional_directories)?;
        let client_prompt = super::system_prompt::client_text(M, req.system_prompt.as_ref())?;
        let agent = self.choose_agent(M, requested, None)?;
        let source = self.model_source(agent.as_ref()).await?;
        let session = Arc::new(Session::new(
            uuid::Uuid::new_v4().to_string(),
            roots,
            source,
            agent,
            crate::sandbox::Status::of(&self.config),
        ));
        let mcp = self.attach_mcp(&session, &req.mcp_servers).await;
        let dirs: Vec<String> = session.roots.additional().iter().map(|p| p.display().to_string()).collect();
        let model = session.state().model.clone();
        self.outbox
            .push(Record::NewSession {
                id: session.id.clone(),
                cwd: session.roots.cwd().display().to_string(),
                additional_directories: serde_json::to_string(&dirs).unwrap_or_else(|_| "[]".into()),
                model,
                agent: session.agent.as_ref().map(|(alias, _)| alias.clone()),
                at: now_rfc3339(),
            })
            .await;
        if let Some(text) = client_prompt {
            session.state().client_prompt = Some(text.clone());
            self.outbox.push(Record::SystemPrompt { session_id: session.id.clone(), text }).await;
        }
        let mode = session.state().mode;
        if mode != Mode::default() {
            // The alias's default_mode, stored like a mode change.
            self.outbox.push(Record::Mode { session_id: session.id.clone(), mode: mode.id().to_string() }).await;
        }
        // The session is durable before the client learns its id.
        self.outbox.flush().await;
        self.sessions.insert(session.clone());
        tracing::info!(session_id = %session.id, cwd = %session.roots.cwd().display(), "session created");
        // The slash commands and any MCP failures, once the client knows the session.
        let (outbox, announced, notices) = (self.outbox.clone(), session.clone(), self.client_features().notices);
        ctx.after_response(
            async move {
                let update = Event::Commands(commands::available());
                outbox::emit(&outbox, &announced, None, &update, true).await;
                report_mcp_failures(&outbox, &announced, notices).await;
                outbox.flush().await;
            }
            .boxed(),
        );
        to_value(
            &acp::NewSessionResponse::new(session.id.clone())
                .config_options(v1::config_options(&session.config_options()))
                .modes(session.mode_state())
                .meta(mcp),
        )
    }
}

/// A session's roots from a request's `cwd` and `additionalDirectories`, each checked with
/// [`existing_dir`] (errors name the field: `additionalDirectories[1]`).
pub(super) fn existing_roots(method: &str, cwd: &Path, additional: &[PathBuf]) -> Result<Roots, AgentError> {
    let cwd = existing_dir(method, "cwd", cwd)?;
    let additional = additional
        .iter()
        .enumerate()
        .map(|(i, dir)| existing_dir(method, &format!("additionalDirectories[{i}]"), dir))
        .collect::<Result<_, _>>()?;
    Ok(Roots::new(cwd, additional))
}

/// Checks that `path` is absolute and an existing directory; returns it canonicalized.
fn existing_dir(method: &str, field: &str, path: &Path) -> Result<PathBuf, AgentError> {
    // No path can contain NUL; say so instead of "does not exist (nul byte found ...)".
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(AgentError::invalid_params(method, format!("{field} contains a NUL byte")));
    }
    if !path.is_absolute() {
        return Err(AgentError::invalid_params(
            method,
            format!("{field} must be an absolute path, got `{}`", path.display()),
        ));
    }
    match dunce::canonicalize(path) {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(_) => Err(AgentError::invalid_params(method, format!("{field} is not a directory: {}", path.display()))),
        Err(e) => Err(AgentError::invalid_params(method, format!("{field} does not exist: {} ({e})", path.display()))),
    }
}
