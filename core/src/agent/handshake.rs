//! The connection's handshake: `initialize` (capabilities, auth methods, the store's state),
//! `authenticate` and `logout`.

use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use super::params::parse;
use super::{Agent, AgentError, LOGIN_ARG, LOGIN_AUTH_METHOD, SETUP_AUTH_METHOD, to_value};
use crate::editor::ClientFeatures;

impl Agent {
    pub(super) async fn initialize(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        let requested = params
            .as_ref()
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_u64)
            .map(|v| u16::try_from(v).unwrap_or(u16::MAX));
        let highest = if self.config.protocol_v2 { super::version::HIGHEST } else { super::version::V1_ONLY };
        let current = self.wire.version();
        // The highest version Corvid speaks at or below the request (`version::select`); the
        // client decides whether it can live with the answer. A repeat keeps the connection's
        // version (`version::repeat`: the SDK router's rules on a v2 connection).
        let selected = if current == 0 {
            // A version Corvid does not speak, asked in v1's shape (no v2 `info`): the spec
            // wants a version back, never an error, and v1's is the one that shape can read.
            let v1_shaped = params.as_ref().is_none_or(|p| p.get("info").is_none());
            match requested.unwrap_or(0) > highest && v1_shaped {
                true => super::version::V1_ONLY,
                false => super::version::select(requested.unwrap_or(0), highest),
            }
        } else {
            let seen = self.saw_other_request.load(std::sync::atomic::Ordering::Relaxed);
            super::version::repeat(current, requested.unwrap_or(0), seen).map_err(|refused| {
                AgentError::from(crate::rpc::RpcError::InvalidRequest(format!("initialize: {refused}")))
            })?
        };
        if selected >= 2 {
            return self.initialize_v2(params).await;
        }
        let req: acp::InitializeRequest = parse("initialize", params)?;
        self.wire.set(1);
        let store = self.store.outlook().await;
        let client = ClientFeatures::from(&req.client_capabilities);
        if let Ok(mut features) = self.client.lock() {
            *features = client;
        }
        let version = ProtocolVersion::from(selected);
        // Title and status work on live sessions without a store; the rest need one.
        let mut sessions = acp::SessionCapabilities::new()
            .close(acp::SessionCloseCapabilities::new())
            .additional_directories(acp::SessionAdditionalDirectoriesCapabilities::new())
            .system_prompt(acp::SessionSystemPromptCapabilities::new())
            .title(acp::SessionTitleCapabilities::new())
            .status(acp::SessionStatusCapabilities::new());
        if store.is_available() {
            sessions = sessions
                .list(acp::SessionListCapabilities::new())
                .resume(acp::SessionResumeCapabilities::new())
                .delete(acp::SessionDeleteCapabilities::new())
                .fork(acp::SessionForkCapabilities::new())
                .archive(acp::SessionArchiveCapabilities::new());
        }
        let capabilities = acp::AgentCapabilities::new()
            .load_session(store.is_available())
            .prompt_capabilities(acp::PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(acp::McpCapabilities::new().http(true))
            .session_capabilities(sessions)
            .auth(acp::AgentAuthCapabilities::new().logout(acp::LogoutCapabilities::new()));
        let auth_methods = self.auth_methods(client);
        let info = acp::Implementation::new("corvid", env!("CARGO_PKG_VERSION")).title("Corvid".to_string());
        to_value(
            &acp::InitializeResponse::new(version)
                .agent_capabilities(capabilities)
                .auth_methods(auth_methods)
                .agent_info(info)
                .meta(self.initialize_meta(&store, true)),
        )
    }

    /// `initialize` on a connection that chose ACP v2.
    async fn initialize_v2(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        let params = params.unwrap_or(Value::Null);
        super::v2::check_initialize(&params)?;
        self.wire.set(2);
        let store = self.store.outlook().await;
        let client = ClientFeatures::of_v2(params.get("capabilities").unwrap_or(&Value::Null));
        if let Ok(mut features) = self.client.lock() {
            *features = client;
        }
        let auth_methods = self.auth_methods(client);
        Ok(Agent::initialize_response_v2(store.is_available(), &auth_methods, self.initialize_meta(&store, false)))
    }

    /// The ways to sign in `initialize` lists: the terminal login for clients that can run it,
    /// and what to fix when no provider is usable.
    fn auth_methods(&self, client: ClientFeatures) -> Vec<acp::AuthMethod> {
        let mut auth_methods = Vec::new();
        if client.auth_terminal {
            // Only clients that can run a terminal for us get this one (the spec's rule).
            auth_methods.push(acp::AuthMethod::Terminal(
                acp::AuthMethodTerminal::new(LOGIN_AUTH_METHOD, "Sign in to a model provider")
                    .description("Choose a provider, model and API key; saved to Corvid's config file".to_string())
                    .args(vec![LOGIN_ARG.to_string()]),
            ));
        }
        if let Some(problem) = &self.config.problem {
            // A broken or missing config file: the editor shows this where it lists sign-in ways.
            auth_methods.push(acp::AuthMethod::Agent(
                acp::AuthMethodAgent::new(SETUP_AUTH_METHOD, "Fix Corvid's configuration").description(problem.clone()),
            ));
        } else if self.config.provider.is_none() || self.is_signed_out() {
            auth_methods.push(acp::AuthMethod::Agent(
                acp::AuthMethodAgent::new(SETUP_AUTH_METHOD, "Configure a model provider")
                    .description(self.config.how_to_configure()),
            ));
        }
        auth_methods
    }

    /// `initialize`'s `_meta`: the store's and the sandbox's state, and (`steering`, v1 only:
    /// v2 inserts a prompt sent mid-turn by itself) `_session/steering` support.
    fn initialize_meta(&self, store: &crate::store::Outlook, steering: bool) -> serde_json::Map<String, Value> {
        let store_meta = store.meta();
        let mut meta = serde_json::Map::new();
        let sandbox = crate::sandbox::Status::of(&self.config).to_meta();
        let jail = crate::tools::jail_meta();
        // A rewind (`agent::rewind`): prompts named by the client (`session/prompt`'s
        // `_meta.corvid.messageId`), forks cut before one, files restored by the core on request.
        let rewind = serde_json::json!({ "promptMessageId": true, "beforeMessage": true, "restoreFiles": true });
        meta.insert(
            "corvid".into(),
            serde_json::json!({ "store": store_meta, "sandbox": sandbox, "jail": jail, "rewind": rewind }),
        );
        if steering {
            // `_session/steering`, under the key claude-agent-acp and codex-acp use.
            meta.insert("steering".into(), serde_json::json!({ "supported": true }));
        }
        meta
    }

    pub(super) fn is_signed_out(&self) -> bool {
        self.signed_out.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `logout`: the stored API key leaves the config file, and this connection needs a new
    /// sign-in before its next session (a key from the environment is the editor's to remove).
    pub(super) async fn logout(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        let _req: acp::LogoutRequest = parse("logout", params)?;
        if let Some(path) = &self.config.source {
            let path = path.clone();
            let removed = tokio::task::spawn_blocking(move || crate::config_file::remove_api_key(&path))
                .await
                .map_err(|e| AgentError::internal(format!("logout: {e}")))?
                .map_err(|e| AgentError::internal(e.to_string()))?;
            tracing::info!(removed, "logout: stored API key removed");
        }
        self.signed_out.store(true, std::sync::atomic::Ordering::Relaxed);
        self.sources.reset().await;
        to_value(&acp::LogoutResponse::new())
    }

    pub(super) async fn authenticate(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        let req: acp::AuthenticateRequest = parse("authenticate", params)?;
        if req.method_id.0.as_ref() == LOGIN_AUTH_METHOD {
            return Err(AgentError::invalid_params(
                "authenticate",
                format!(
                    "methodId: `{LOGIN_AUTH_METHOD}` is a terminal method: run `corvid acp {LOGIN_ARG}` in a terminal, then reconnect"
                ),
            ));
        }
        if req.method_id.0.as_ref() != SETUP_AUTH_METHOD {
            return Err(AgentError::invalid_params(
                "authenticate",
                format!("methodId: unknown auth method `{}`", req.method_id),
            ));
        }
        // The user may have started Ollama or fixed the config since the last try.
        self.sources.reset().await;
        self.model_source(None).await?;
        to_value(&acp::AuthenticateResponse::new())
    }
}
