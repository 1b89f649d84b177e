//! The ACP agent: method handlers on top of the RPC layer.

mod accounting;
mod commands;
mod compaction;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod handshake;
mod instructions;
mod methods;
mod model_source;
mod modes;
mod new_session;
mod outbox;
mod params;
mod permission;
pub(crate) mod prompt;
mod restore;
mod rewind;
mod session;
mod session_ops;
mod settings;
mod steering;
mod subagent;
mod system_prompt;
mod turn;
mod v2;
mod version;

use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1 as acp;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::config::{Config, ConnectionOptions};
use crate::editor::ClientFeatures;
use crate::rpc::{Handler, Peer, RequestContext, RpcError};
use crate::store::PendingStore;
pub use error::AgentError;
use methods::Method;
use model_source::ModelSourceResolver;
use outbox::Outbox;
use params::parse;
use session::Sessions;
use turn::{Turn, TurnContext, UserPrompt};

/// The id of the auth method that explains how to configure a model provider.
pub const SETUP_AUTH_METHOD: &str = "corvid-setup";
/// The id of the terminal auth method: the client reruns Corvid with `--login`.
pub const LOGIN_AUTH_METHOD: &str = "corvid-login";
const SIGNED_OUT: &str = "Signed out of the model provider. Sign in again (`corvid login` in a terminal, or \
your editor's sign-in for Corvid), then restart the agent.";
/// What the client appends to Corvid's command line to run the interactive sign-in.
pub const LOGIN_ARG: &str = "--login";

pub struct Agent {
    peer: Peer,
    config: Arc<Config>,
    /// This connection's session cap and default agent alias.
    connection: ConnectionOptions,
    /// The session store, or why there is none.
    store: PendingStore,
    outbox: Outbox,
    /// Built on first use: loading the platform's trust store costs milliseconds that
    /// `initialize` should not pay.
    http: std::sync::OnceLock<reqwest::Client>,
    sources: ModelSourceResolver,
    sessions: Sessions,
    client: Mutex<ClientFeatures>,
    /// Set by `logout`: sessions need a new sign-in (the key is gone from the config file).
    signed_out: std::sync::atomic::AtomicBool,
    /// The subagents that may run at once on this connection.
    subagent_slots: subagent::Slots,
    /// The protocol version this connection's `initialize` chose (shared with the outbox).
    wire: crate::event::Wire,
    /// Whether a request other than `initialize` came (a v2 repeat must come before any).
    saw_other_request: std::sync::atomic::AtomicBool,
    /// Work that outlives the request that started it (a v2 turn runs on after its prompt's
    /// `{messageId}` answer): shutdown waits for it, so a turn's final `idle` is written before
    /// the connection closes.
    detached: tokio_util::task::TaskTracker,
}

/// An agent alias and its profile.
pub(crate) type AgentChoice = (String, crate::config::AgentProfile);

/// The agent alias a request names: `agentAlias`, `agent_alias` or `agent`, in the params or
/// in their `_meta` (extension fields; removed before the params are parsed).
fn requested_agent(method: &str, params: &mut Option<Value>) -> Result<Option<(&'static str, String)>, AgentError> {
    const FIELDS: [&str; 3] = ["agentAlias", "agent_alias", "agent"];
    let Some(Value::Object(map)) = params else { return Ok(None) };
    let mut found = None;
    for field in FIELDS {
        if let Some(v) = map.remove(field) {
            found = found.or(Some((field, v)));
        }
    }
    if found.is_none()
        && let Some(Value::Object(meta)) = map.get("_meta")
    {
        found = FIELDS.into_iter().find_map(|f| meta.get(f).map(|v| (f, v.clone())));
    }
    match found {
        None => Ok(None),
        Some((field, Value::String(alias))) => Ok(Some((field, alias))),
        Some((field, _)) => {
            Err(AgentError::invalid_params(method, format!("{field}: must be a string (an agent alias)")))
        }
    }
}

pub(super) fn to_value<T: Serialize>(v: &T) -> Result<Value, AgentError> {
    serde_json::to_value(v).map_err(|e| AgentError::internal(format!("serializing a response: {e}")))
}

impl Agent {
    pub fn new(peer: Peer, config: Arc<Config>, store: PendingStore, connection: ConnectionOptions) -> Arc<Self> {
        let wire = crate::event::Wire::default();
        let outbox = Outbox::spawn(store.clone(), peer.clone(), wire.clone());
        let subagent_slots = subagent::Slots::new(config.max_subagents);
        // The sandbox report's loopback question costs a launch: asked now, not in `initialize`.
        crate::sandbox::prewarm(&config);
        Arc::new(Self {
            peer,
            config,
            connection,
            store,
            outbox,
            http: std::sync::OnceLock::new(),
            sources: ModelSourceResolver::new(),
            sessions: Sessions::default(),
            client: Mutex::new(ClientFeatures::default()),
            signed_out: std::sync::atomic::AtomicBool::new(false),
            subagent_slots,
            wire,
            saw_other_request: std::sync::atomic::AtomicBool::new(false),
            detached: tokio_util::task::TaskTracker::new(),
        })
    }

    fn client_features(&self) -> ClientFeatures {
        self.client.lock().map(|f| *f).unwrap_or_default()
    }

    fn http(&self) -> &reqwest::Client {
        self.http.get_or_init(crate::http_client)
    }

    /// The session's endpoint and models (for its agent alias), unless the user signed out.
    async fn model_source(&self, agent: Option<&AgentChoice>) -> Result<Arc<model_source::ModelSource>, AgentError> {
        if let Some(config) = self.signed_in_since() {
            return self.sources.resolve(&config, self.http(), agent).await;
        }
        if let Some(problem) = &self.config.problem {
            return Err(AgentError::AuthRequired(problem.clone()));
        }
        if self.is_signed_out() {
            return Err(AgentError::AuthRequired(SIGNED_OUT.to_string()));
        }
        self.sources.resolve(&self.config, self.http(), agent).await
    }

    /// The config file as it is now, when this connection started without a usable provider
    /// (none, a broken file, or signed out) and a sign-in since (a terminal `corvid acp
    /// --login`, or the file edited) gave it one: the sessions use its provider. Only where
    /// the connection may read the file again ([`ConnectionOptions::reread_config`]).
    fn signed_in_since(&self) -> Option<Arc<Config>> {
        let unusable = self.config.problem.is_some() || self.config.provider.is_none() || self.is_signed_out();
        if !self.connection.reread_config || !unusable {
            return None;
        }
        let config = Config::load_from(&crate::config::ProcessEnv).ok()?;
        let provider = config.provider.as_ref()?;
        // After `logout`, only a new key counts as signing in again.
        if self.is_signed_out() && provider.api_key.is_none() {
            return None;
        }
        Some(Arc::new(config))
    }

    /// Which agent alias a session runs as. In order: `stored` (load/resume) while it is still
    /// configured and enabled; the alias the request names (an unknown or disabled one is an
    /// error naming the field); the connection's default (`corvid serve ...?agent=`);
    /// `[acp] default_agent`; the sole configured agent. `None`: the plain configuration.
    fn choose_agent(
        &self,
        method: &str,
        requested: Option<(&'static str, String)>,
        stored: Option<&str>,
    ) -> Result<Option<AgentChoice>, AgentError> {
        let agents = &self.config.agents;
        let usable = |alias: &str| agents.get(alias).filter(|p| p.enabled).map(|p| (alias.to_string(), p.clone()));
        if let Some(choice) = stored.and_then(usable) {
            return Ok(Some(choice));
        }
        if let Some(stored) = stored {
            tracing::info!(alias = stored, "the session's agent alias is gone or disabled; choosing another");
        }
        let explain = |field: &str, alias: &str| {
            let enabled: Vec<&str> = agents.iter().filter(|(_, p)| p.enabled).map(|(a, _)| a.as_str()).collect();
            let why = if agents.contains_key(alias) { "is disabled" } else { "is not a configured agent" };
            let offered = if enabled.is_empty() { "none".to_string() } else { enabled.join(", ") };
            AgentError::invalid_params(method, format!("{field}: agent alias `{alias}` {why} (enabled: {offered})"))
        };
        if let Some((field, alias)) = requested {
            return usable(&alias).map(Some).ok_or_else(|| explain(field, &alias));
        }
        if let Some(alias) = &self.connection.agent {
            return usable(alias).map(Some).ok_or_else(|| explain("agent (the connection's ?agent=)", alias));
        }
        if let Some(alias) = &self.config.default_agent {
            return usable(alias).map(Some).ok_or_else(|| explain("[acp] default_agent", alias));
        }
        let mut enabled = agents.iter().filter(|(_, p)| p.enabled);
        match (enabled.next(), enabled.next()) {
            (Some((alias, profile)), None) => Ok(Some((alias.clone(), profile.clone()))),
            _ => Ok(None),
        }
    }

    /// Hook for `corvid serve`: a remote connection may hold only so many sessions, however it
    /// came to hold them (`session/new`, `session/load`, `session/resume`). Restoring a session
    /// the connection already holds (`replacing`) replaces it and adds none.
    pub(super) fn check_session_limit(&self, method: &str, replacing: Option<&str>) -> Result<(), AgentError> {
        let Some(limit) = self.connection.max_sessions else { return Ok(()) };
        if replacing.is_some_and(|id| self.sessions.get(id).is_ok()) || self.sessions.count() < limit {
            return Ok(());
        }
        Err(AgentError::LimitReached(format!(
            "{method}: this connection already has {limit} sessions, the server's limit (close one with session/close)"
        )))
    }

    /// Synchronous part of `session/prompt`: validate and claim the session before returning,
    /// so a `session/cancel` sent right behind the prompt always finds the turn.
    fn prompt(
        self: &Arc<Self>,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, AgentError>> {
        let started = (|| -> Result<_, AgentError> {
            let mut params = params.unwrap_or(Value::Null);
            prompt::normalize(&mut params);
            let req: acp::PromptRequest = parse("session/prompt", Some(params))?;
            let session = self.prompt_session(&req.session_id.0)?;
            let message_id = prompt::client_message_id(req.meta.as_ref())?;
            let claim = session.begin_turn(ctx.cancel.child_token())?;
            Ok((claim, req.prompt, message_id))
        })();
        let this = self.clone();
        async move {
            let (claim, blocks, message_id) = started?;
            let mut prompt = this.user_prompt(&claim.session, blocks).await?;
            prompt.message_id = message_id;
            this.claim_in_store(&claim).await?;
            let end = Turn::new(claim, this.turn_context()).run(prompt).await?;
            crate::event::v1::prompt_response(&end, this.client_features().prompt_usage)
                .map_err(|e| AgentError::internal(format!("session/prompt: the response: {e}")))
        }
        .boxed()
    }

    /// The live session a prompt is for; a subagent takes work only from its parent.
    fn prompt_session(&self, id: &str) -> Result<Arc<session::Session>, AgentError> {
        let session = self.sessions.get(id)?;
        if let Some(parent) = &session.parent {
            return Err(AgentError::invalid_params(
                "session/prompt",
                format!(
                    "sessionId: {} is a subagent of session {parent}; it takes work only from its parent",
                    session.id
                ),
            ));
        }
        Ok(session)
    }

    /// A prompt's blocks as the turn takes them. Decoding and storing uploads is blocking work:
    /// off the async threads. An invalid block fails the request here, before a turn starts.
    async fn user_prompt(
        &self,
        session: &session::Session,
        blocks: Vec<acp::ContentBlock>,
    ) -> Result<UserPrompt, AgentError> {
        let uploads = self.config.data_dir.join("uploads");
        let jail = crate::tools::Jail::new(session.roots.clone(), self.config.forbidden_paths.clone());
        let (content, blocks) = tokio::task::spawn_blocking(move || {
            let content = prompt::convert(&blocks, &uploads, &jail);
            (content, blocks)
        })
        .await
        .map_err(|e| AgentError::internal(format!("converting the prompt: {e}")))?;
        let content = content?;
        Ok(UserPrompt { text: content.text, images: content.images, blocks, message_id: None, echoed: None })
    }

    /// What a top-level turn of this connection runs with.
    fn turn_context(self: &Arc<Self>) -> TurnContext {
        TurnContext {
            outbox: self.outbox.clone(),
            peer: self.peer.clone(),
            http: self.http().clone(),
            config: self.config.clone(),
            client: self.client_features(),
            host: Some(subagent::Host::new(self.clone())),
            delegation: None,
        }
    }

    fn close_session(&self, params: Option<Value>) -> Result<Value, AgentError> {
        let req: acp::CloseSessionRequest = parse("session/close", params)?;
        let session = self
            .sessions
            .close(&req.session_id.0)
            .ok_or_else(|| AgentError::SessionNotFound(req.session_id.to_string()))?;
        session.cancel_turn();
        to_value(&acp::CloseSessionResponse::new())
    }

    fn cancel(&self, params: Option<Value>) {
        match parse::<acp::CancelNotification>("session/cancel", params) {
            Ok(n) => match self.sessions.get(&n.session_id.0) {
                Ok(session) => {
                    if !session.cancel_turn() {
                        tracing::debug!(session_id = %n.session_id, "session/cancel with no turn running");
                    }
                }
                Err(_) => tracing::warn!(session_id = %n.session_id, "session/cancel for an unknown session"),
            },
            Err(e) => tracing::warn!(error = %e, "malformed session/cancel"),
        }
    }
}

/// A handler's answer as the RPC layer takes it: the agent's errors become their wire objects.
fn answer(
    work: impl std::future::Future<Output = Result<Value, AgentError>> + Send + 'static,
) -> BoxFuture<'static, Result<Value, RpcError>> {
    work.map(|result| result.map_err(RpcError::from)).boxed()
}

impl Handler for Agent {
    fn request(
        self: Arc<Self>,
        method: &str,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let this = self;
        let params = params::normalize(params);
        if method != Method::Initialize.name() {
            this.saw_other_request.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if this.wire.is_v2() {
            return answer(this.request_v2(method, params, ctx));
        }
        let not_served = || futures_util::future::ready(Err(RpcError::MethodNotFound(method.to_string()))).boxed();
        let Some(known) = Method::from_name(method, false) else {
            return not_served();
        };
        match known {
            Method::Initialize => answer(this.initialize(params)),
            Method::Authenticate => answer(this.authenticate(params)),
            Method::Logout => answer(this.logout(params)),
            Method::SessionNew => answer(this.new_session(params, ctx)),
            Method::SessionPrompt => answer(this.prompt(params, ctx)),
            Method::SessionSetConfigOption => answer(this.set_config_option(params)),
            Method::SessionSetMode => answer(this.set_mode(params)),
            Method::SessionClose => answer(futures_util::future::ready(this.close_session(params))),
            Method::SessionLoad | Method::SessionResume => {
                // Marked before the next frame is read, so a prompt sent right behind the
                // load is told to wait rather than "session not found".
                let loading = this.sessions.begin_loading(params.as_ref());
                let load = known == Method::SessionLoad;
                answer(this.restore(known.name(), params, load).map(move |result| {
                    drop(loading);
                    result
                }))
            }
            Method::SessionList => answer(this.list_sessions(params)),
            Method::SessionDelete => answer(this.delete_session(params)),
            Method::PermissionsList => answer(this.list_rules(params)),
            Method::PermissionsRevoke => answer(this.revoke_rule(params)),
            Method::SessionStop => answer(this.stop_session(params)),
            Method::SessionSteering => answer(this.steer(params)),
            Method::SessionFork => answer(this.fork_session(params, ctx)),
            Method::SessionSetTitle => answer(this.set_title(params)),
            Method::SessionArchive => answer(this.set_archived(known.name(), params, true)),
            Method::SessionUnarchive => answer(this.set_archived(known.name(), params, false)),
            Method::SessionStatus => answer(this.session_status(params)),
            Method::SessionCancel => {
                futures_util::future::ready(Err(RpcError::NotARequest(method.to_string()))).boxed()
            }
            // v2's only (`from_name` does not find them on v1).
            Method::AuthLogin | Method::AuthLogout | Method::ToolCallCancel | Method::TerminalCancel => not_served(),
        }
    }

    fn notification(&self, method: &str, params: Option<Value>) {
        let params = params::normalize(params);
        // `session/cancel` has the same name and params in v1 and v2.
        match Method::from_name(method, self.wire.is_v2()) {
            Some(Method::SessionCancel) => self.cancel(params),
            _ => tracing::debug!(%method, "ignoring unknown notification"),
        }
    }

    fn cancels_itself(&self, method: &str) -> bool {
        // A v2 prompt is answered at once; its turn is ended by `session/cancel`.
        !self.wire.is_v2() && Method::from_name(method, false) == Some(Method::SessionPrompt)
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        self.sessions.cancel_all();
        // The cancelled v2 turns end on their own tasks: their `idle` goes out before the flush.
        self.detached.close();
        let (detached, outbox) = (self.detached.clone(), self.outbox.clone());
        async move {
            detached.wait().await;
            outbox.flush().await;
        }
        .boxed()
    }
}
