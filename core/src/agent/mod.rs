//! The ACP agent: method handlers on top of the RPC layer.

mod accounting;
mod commands;
#[doc(hidden)]
pub mod fuzzing;
mod instructions;
mod model_source;
mod modes;
mod outbox;
mod params;
mod permission;
pub(crate) mod prompt;
mod restore;
mod session;
mod turn;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1 as acp;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::config::{Config, ConnectionOptions, HOW_TO_CONFIGURE};
use crate::editor::ClientFeatures;
use crate::rpc::{Handler, Peer, RequestContext, RpcError};
use crate::store::PendingStore;
use crate::store::batch::Record;
use crate::store::time::now_rfc3339;
use model_source::ModelSourceResolver;
use outbox::Outbox;
use params::parse;
use session::{MODE_OPTION, MODEL_OPTION, Session, Sessions, THOUGHT_LEVEL_OPTION};
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
}

/// Tells the user which MCP servers failed and why: a `notice` when the client shows them,
/// otherwise an agent message.
pub(super) async fn report_mcp_failures(outbox: &Outbox, session: &Session, notices: bool) {
    let Some(mcp) = session.mcp.get() else { return };
    for status in &mcp.statuses {
        let Some(error) = &status.error else { continue };
        let title = format!("MCP server `{}` is not available", status.name);
        let update = if notices {
            acp::SessionUpdate::Notice(acp::Notice::new(acp::NoticeSeverity::Warning, title).description(error.clone()))
        } else {
            let text = format!("{title}: {error}. Its tools are not offered in this session.\n\n");
            acp::SessionUpdate::AgentMessageChunk(outbox::text_chunk(text, &uuid::Uuid::new_v4().to_string()))
        };
        outbox::emit(outbox, session, None, &update, true).await;
    }
}

/// An agent alias and its profile.
pub(crate) type AgentChoice = (String, crate::config::AgentProfile);

/// The agent alias a request names: `agentAlias`, `agent_alias` or `agent`, in the params or
/// in their `_meta` (extension fields; removed before the params are parsed).
fn requested_agent(method: &str, params: &mut Option<Value>) -> Result<Option<(&'static str, String)>, RpcError> {
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
            Err(RpcError::invalid_params(method, format!("{field}: must be a string (an agent alias)")))
        }
    }
}

pub(super) fn to_value<T: Serialize>(v: &T) -> Result<Value, RpcError> {
    serde_json::to_value(v).map_err(|e| RpcError::Internal(format!("serializing a response: {e}")))
}

impl Agent {
    pub fn new(peer: Peer, config: Arc<Config>, store: PendingStore, connection: ConnectionOptions) -> Arc<Self> {
        let outbox = Outbox::spawn(store.clone(), peer.clone());
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
        })
    }

    fn client_features(&self) -> ClientFeatures {
        self.client.lock().map(|f| *f).unwrap_or_default()
    }

    fn http(&self) -> &reqwest::Client {
        self.http.get_or_init(crate::http_client)
    }

    async fn initialize(self: Arc<Self>, params: Option<Value>) -> Result<Value, RpcError> {
        let req: acp::InitializeRequest = parse("initialize", params)?;
        let store = self.store.clone().await;
        let client = ClientFeatures::from(&req.client_capabilities);
        if let Ok(mut features) = self.client.lock() {
            *features = client;
        }
        // Corvid speaks v1 only; any other requested version is answered with 1 (the client
        // decides whether it can live with that).
        let mut sessions = acp::SessionCapabilities::new().close(acp::SessionCloseCapabilities::new());
        if store.is_ok() {
            sessions = sessions
                .list(acp::SessionListCapabilities::new())
                .resume(acp::SessionResumeCapabilities::new())
                .delete(acp::SessionDeleteCapabilities::new());
        }
        let capabilities = acp::AgentCapabilities::new()
            .load_session(store.is_ok())
            .prompt_capabilities(acp::PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(acp::McpCapabilities::new().http(true))
            .session_capabilities(sessions)
            .auth(acp::AgentAuthCapabilities::new().logout(acp::LogoutCapabilities::new()));
        let mut auth_methods = Vec::new();
        if client.auth_terminal {
            // Only clients that can run a terminal for us get this one (the spec's rule).
            auth_methods.push(acp::AuthMethod::Terminal(
                acp::AuthMethodTerminal::new(LOGIN_AUTH_METHOD, "Sign in to a model provider")
                    .description("Choose a provider, model and API key; saved to Corvid's config file".to_string())
                    .args(vec![LOGIN_ARG.to_string()]),
            ));
        }
        if self.config.provider.is_none() || self.is_signed_out() {
            auth_methods.push(acp::AuthMethod::Agent(
                acp::AuthMethodAgent::new(SETUP_AUTH_METHOD, "Configure a model provider")
                    .description(HOW_TO_CONFIGURE.to_string()),
            ));
        }
        let info = acp::Implementation::new("corvid", env!("CARGO_PKG_VERSION")).title("Corvid".to_string());
        let store_meta = match &store {
            Ok(s) => serde_json::json!({ "status": "open", "location": s.location() }),
            Err(reason) => serde_json::json!({ "status": "unavailable", "reason": reason }),
        };
        let mut meta = serde_json::Map::new();
        meta.insert("corvid".into(), serde_json::json!({ "store": store_meta }));
        to_value(
            &acp::InitializeResponse::new(agent_client_protocol_schema::ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                .auth_methods(auth_methods)
                .agent_info(info)
                .meta(meta),
        )
    }

    /// Connects the session's MCP servers and returns the `_meta` that reports them.
    async fn attach_mcp(&self, session: &Session, servers: &[acp::McpServer]) -> serde_json::Map<String, Value> {
        let servers = crate::mcp::McpServers::connect(servers, self.http(), self.config.mcp_call_timeout).await;
        let mut meta = serde_json::Map::new();
        meta.insert("corvid".into(), serde_json::json!({ "mcpServers": servers.meta() }));
        let _ = session.mcp.set(Arc::new(servers));
        meta
    }

    /// The session's endpoint and models (for its agent alias), unless the user signed out.
    async fn model_source(&self, agent: Option<&AgentChoice>) -> Result<Arc<model_source::ModelSource>, RpcError> {
        if self.is_signed_out() {
            return Err(RpcError::AuthRequired(SIGNED_OUT.to_string()));
        }
        self.sources.resolve(&self.config, self.http(), agent).await
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
    ) -> Result<Option<AgentChoice>, RpcError> {
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
            RpcError::invalid_params(method, format!("{field}: agent alias `{alias}` {why} (enabled: {offered})"))
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

    fn is_signed_out(&self) -> bool {
        self.signed_out.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `logout`: the stored API key leaves the config file, and this connection needs a new
    /// sign-in before its next session (a key from the environment is the editor's to remove).
    async fn logout(self: Arc<Self>, params: Option<Value>) -> Result<Value, RpcError> {
        let _req: acp::LogoutRequest = parse("logout", params)?;
        if let Some(path) = &self.config.source {
            let path = path.clone();
            let removed = tokio::task::spawn_blocking(move || crate::config_file::remove_api_key(&path))
                .await
                .map_err(|e| RpcError::Internal(format!("logout: {e}")))?
                .map_err(|e| RpcError::Internal(e.to_string()))?;
            tracing::info!(removed, "logout: stored API key removed");
        }
        self.signed_out.store(true, std::sync::atomic::Ordering::Relaxed);
        self.sources.reset().await;
        to_value(&acp::LogoutResponse::new())
    }

    async fn authenticate(self: Arc<Self>, params: Option<Value>) -> Result<Value, RpcError> {
        let req: acp::AuthenticateRequest = parse("authenticate", params)?;
        if req.method_id.0.as_ref() == LOGIN_AUTH_METHOD {
            return Err(RpcError::invalid_params(
                "authenticate",
                format!(
                    "methodId: `{LOGIN_AUTH_METHOD}` is a terminal method: run `corvid acp {LOGIN_ARG}` in a terminal, then reconnect"
                ),
            ));
        }
        if req.method_id.0.as_ref() != SETUP_AUTH_METHOD {
            return Err(RpcError::invalid_params(
                "authenticate",
                format!("methodId: unknown auth method `{}`", req.method_id),
            ));
        }
        // The user may have started Ollama or fixed the config since the last try.
        self.sources.reset().await;
        self.model_source(None).await?;
        to_value(&acp::AuthenticateResponse::new())
    }

    /// Hook for `corvid serve`: a remote connection may hold only so many sessions, however it
    /// came to hold them (`session/new`, `session/load`, `session/resume`). Restoring a session
    /// the connection already holds (`replacing`) replaces it and adds none.
    pub(super) fn check_session_limit(&self, method: &str, replacing: Option<&str>) -> Result<(), RpcError> {
        let Some(limit) = self.connection.max_sessions else { return Ok(()) };
        if replacing.is_some_and(|id| self.sessions.get(id).is_ok()) || self.sessions.count() < limit {
            return Ok(());
        }
        Err(RpcError::LimitReached(format!(
            "{method}: this connection already has {limit} sessions, the server's limit (close one with session/close)"
        )))
    }

    async fn new_session(self: Arc<Self>, params: Option<Value>, ctx: RequestContext) -> Result<Value, RpcError> {
        const M: &str = "session/new";
        let mut params = params;
        let requested = requested_agent(M, &mut params)?;
        let req: acp::NewSessionRequest = parse(M, params)?;
        self.check_session_limit(M, None)?;
        let mut roots = vec![existing_dir(M, "cwd", &req.cwd)?];
        for (i, dir) in req.additional_directories.iter().enumerate() {
            roots.push(existing_dir(M, &format!("additionalDirectories[{i}]"), dir)?);
        }
        let agent = self.choose_agent(M, requested, None)?;
        let source = self.model_source(agent.as_ref()).await?;
        let session = Arc::new(Session::new(uuid::Uuid::new_v4().to_string(), roots, source, agent));
        let mcp = self.attach_mcp(&session, &req.mcp_servers).await;
        let dirs: Vec<String> = session.roots[1..].iter().map(|p| p.display().to_string()).collect();
        let model = session.state().model.clone();
        self.outbox
            .push(Record::NewSession {
                id: session.id.clone(),
                cwd: session.roots[0].display().to_string(),
                additional_directories: serde_json::to_string(&dirs).unwrap_or_else(|_| "[]".into()),
                model,
                agent: session.agent.as_ref().map(|(alias, _)| alias.clone()),
                at: now_rfc3339(),
            })
            .await;
        let mode = session.state().mode.clone();
        if mode != modes::DEFAULT_MODE {
            // The alias's default_mode, stored like a mode change.
            self.outbox.push(Record::Mode { session_id: session.id.clone(), mode }).await;
        }
        // The session is durable before the client learns its id.
        self.outbox.flush().await;
        self.sessions.insert(session.clone());
        tracing::info!(session_id = %session.id, cwd = %session.roots[0].display(), "session created");
        // The slash commands and any MCP failures, once the client knows the session.
        let (outbox, announced, notices) = (self.outbox.clone(), session.clone(), self.client_features().notices);
        ctx.after_response(
            async move {
                let commands = acp::AvailableCommandsUpdate::new(commands::available());
                let update = acp::SessionUpdate::AvailableCommandsUpdate(commands);
                outbox::emit(&outbox, &announced, None, &update, true).await;
                report_mcp_failures(&outbox, &announced, notices).await;
                outbox.flush().await;
            }
            .boxed(),
        );
        to_value(
            &acp::NewSessionResponse::new(session.id.clone())
                .config_options(session.config_options())
                .modes(session.mode_state())
                .meta(mcp),
        )
    }

    /// Synchronous part of `session/prompt`: validate and claim the session before returning,
    /// so a `session/cancel` sent right behind the prompt always finds the turn.
    fn prompt(
        self: &Arc<Self>,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let started = (|| -> Result<_, RpcError> {
            let mut params = params.unwrap_or(Value::Null);
            prompt::normalize(&mut params);
            let req: acp::PromptRequest = parse("session/prompt", Some(params))?;
            let session = self.sessions.get(&req.session_id.0)?;
            let claim = session.begin_turn(ctx.cancel.child_token())?;
            Ok((claim, req.prompt))
        })();
        let this = self.clone();
        async move {
            let (claim, blocks) = started?;
            // Decoding and storing uploads is blocking work: off the async threads. An invalid
            // block fails the request here, before the turn starts (the claim is released).
            let uploads = this.config.data_dir.join("uploads");
            let jail = crate::tools::Jail::new(claim.session.roots.clone(), this.config.forbidden_paths.clone());
            let (content, blocks) = tokio::task::spawn_blocking(move || {
                let content = prompt::convert(&blocks, &uploads, &jail);
                (content, blocks)
            })
            .await
            .map_err(|e| RpcError::Internal(format!("converting the prompt: {e}")))?;
            let content = content?;
            this.claim_in_store(&claim).await?;
            let prompt = UserPrompt { text: content.text, images: content.images, blocks };
            let turn_ctx = TurnContext {
                outbox: this.outbox.clone(),
                peer: this.peer.clone(),
                http: this.http().clone(),
                config: this.config.clone(),
                client: this.client_features(),
            };
            let stop = Turn::new(claim, turn_ctx).run(prompt).await?;
            to_value(&acp::PromptResponse::new(stop))
        }
        .boxed()
    }

    async fn set_config_option(self: Arc<Self>, params: Option<Value>) -> Result<Value, RpcError> {
        const M: &str = "session/set_config_option";
        // `value` is an untagged enum flattened into the request: serde's own error names
        // neither the field nor what it takes.
        if let Some(v) = params.as_ref().and_then(|p| p.get("value"))
            && !(v.is_string() || v.is_boolean())
        {
            return Err(RpcError::invalid_params(
                M,
                format!("value: must be a value id (a string) or a boolean, got {v}"),
            ));
        }
        let req: acp::SetSessionConfigOptionRequest = parse(M, params)?;
        let session = self.sessions.get(&req.session_id.0)?;
        let Some(value) = req.value.as_value_id() else {
            return Err(RpcError::invalid_params(
                M,
                format!("value: `{}` takes a value id, not a boolean", req.config_id),
            ));
        };
        match req.config_id.0.as_ref() {
            MODEL_OPTION => {
                if !session.source.models.iter().any(|m| m.as_str() == value.0.as_ref()) {
                    let offered = session.source.models.join(", ");
                    return Err(RpcError::invalid_params(
                        M,
                        format!("value: `{value}` is not one of the models offered ({offered})"),
                    ));
                }
                session.state().model = value.0.to_string();
                self.outbox.push(Record::Model { session_id: session.id.clone(), model: value.0.to_string() }).await;
            }
            MODE_OPTION => {
                self.change_mode(&session, M, "value", &value.0).await?;
            }
            THOUGHT_LEVEL_OPTION => {
                let model = session.state().model.clone();
                if !session.offers_thought_level(&model) {
                    return Err(RpcError::invalid_params(
                        M,
                        format!("configId: `{THOUGHT_LEVEL_OPTION}` is not offered for model `{model}`"),
                    ));
                }
                if crate::provider::anthropic::thinking_budget(&value.0).is_none() {
                    let levels: Vec<&str> =
                        crate::provider::anthropic::THOUGHT_LEVELS.iter().map(|(id, ..)| *id).collect();
                    return Err(RpcError::invalid_params(
                        M,
                        format!("value: `{value}` is not a thought level (one of {})", levels.join(", ")),
                    ));
                }
                session.state().thought_level = value.0.to_string();
                self.outbox
                    .push(Record::ThoughtLevel { session_id: session.id.clone(), level: value.0.to_string() })
                    .await;
            }
            other => {
                return Err(RpcError::invalid_params(M, format!("configId: unknown config option `{other}`")));
            }
        }
        self.outbox.flush().await;
        to_value(&acp::SetSessionConfigOptionResponse::new(session.config_options()))
    }

    /// Legacy `session/set_mode`, kept in sync with the `mode` config option.
    async fn set_mode(self: Arc<Self>, params: Option<Value>) -> Result<Value, RpcError> {
        const M: &str = "session/set_mode";
        let req: acp::SetSessionModeRequest = parse(M, params)?;
        let session = self.sessions.get(&req.session_id.0)?;
        self.change_mode(&session, M, "modeId", &req.mode_id.0).await?;
        let update = acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(session.config_options()));
        outbox::emit(&self.outbox, &session, None, &update, true).await;
        self.outbox.flush().await;
        to_value(&acp::SetSessionModeResponse::new())
    }

    async fn change_mode(&self, session: &Arc<Session>, method: &str, field: &str, mode: &str) -> Result<(), RpcError> {
        if !modes::is_mode(mode) {
            let known: Vec<&str> = modes::MODES.iter().map(|(id, ..)| *id).collect();
            return Err(RpcError::invalid_params(
                method,
                format!("{field}: unknown mode `{mode}` (one of {})", known.join(", ")),
            ));
        }
        session.state().mode = mode.to_string();
        self.outbox.push(Record::Mode { session_id: session.id.clone(), mode: mode.to_string() }).await;
        // Legacy clients follow modes through current_mode_update.
        let update = acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(mode.to_string()));
        outbox::emit(&self.outbox, session, None, &update, true).await;
        Ok(())
    }

    fn close_session(&self, params: Option<Value>) -> Result<Value, RpcError> {
        let req: acp::CloseSessionRequest = parse("session/close", params)?;
        let session = self
            .sessions
            .remove(&req.session_id.0)
            .ok_or_else(|| RpcError::SessionNotFound(req.session_id.to_string()))?;
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

/// Checks that `path` is absolute and an existing directory; returns it canonicalized.
pub(super) fn existing_dir(method: &str, field: &str, path: &Path) -> Result<PathBuf, RpcError> {
    // No path can contain NUL; say so instead of "does not exist (nul byte found ...)".
    if std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).contains(&0) {
        return Err(RpcError::invalid_params(method, format!("{field} contains a NUL byte")));
    }
    if !path.is_absolute() {
        return Err(RpcError::invalid_params(
            method,
            format!("{field} must be an absolute path, got `{}`", path.display()),
        ));
    }
    match std::fs::canonicalize(path) {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(_) => Err(RpcError::invalid_params(method, format!("{field} is not a directory: {}", path.display()))),
        Err(e) => Err(RpcError::invalid_params(method, format!("{field} does not exist: {} ({e})", path.display()))),
    }
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
        match method {
            "initialize" => this.initialize(params).boxed(),
            "authenticate" => this.authenticate(params).boxed(),
            "logout" => this.logout(params).boxed(),
            "session/new" => this.new_session(params, ctx).boxed(),
            "session/prompt" => this.prompt(params, ctx),
            "session/set_config_option" => this.set_config_option(params).boxed(),
            "session/set_mode" => this.set_mode(params).boxed(),
            "session/close" => futures_util::future::ready(this.close_session(params)).boxed(),
            "session/load" | "session/resume" => {
                // Marked before the next frame is read, so a prompt sent right behind the
                // load is told to wait rather than "session not found".
                let loading = this.sessions.begin_loading(params.as_ref());
                let method = if method == "session/load" { "session/load" } else { "session/resume" };
                this.restore(method, params, method == "session/load")
                    .map(move |result| {
                        drop(loading);
                        result
                    })
                    .boxed()
            }
            "session/list" => this.list_sessions(params).boxed(),
            "session/delete" => this.delete_session(params).boxed(),
            // Corvid extensions: durable "always" permission answers, listable and revocable.
            "_corvid/permissions/list" => this.list_rules(params).boxed(),
            "_corvid/permissions/revoke" => this.revoke_rule(params).boxed(),
            // ZeroClaw compatibility.
            "session/stop" => this.stop_session(params).boxed(),
            "session/cancel" => futures_util::future::ready(Err(RpcError::NotARequest(method.to_string()))).boxed(),
            other => futures_util::future::ready(Err(RpcError::MethodNotFound(other.to_string()))).boxed(),
        }
    }

    fn notification(&self, method: &str, params: Option<Value>) {
        let params = params::normalize(params);
        match method {
            "session/cancel" => self.cancel(params),
            other => tracing::debug!(method = %other, "ignoring unknown notification"),
        }
    }

    fn cancels_itself(&self, method: &str) -> bool {
        method == "session/prompt"
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        self.sessions.cancel_all();
        let outbox = self.outbox.clone();
        async move { outbox.flush().await }.boxed()
    }
}
