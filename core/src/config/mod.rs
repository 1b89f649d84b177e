//! Configuration: a TOML file plus environment overrides.
//!
//! Precedence (highest first): `CORVID_*` environment variables, the TOML file
//! (`$CORVID_CONFIG`, default `~/.config/corvid/config.toml`), built-in defaults.

mod agents;
mod file;
mod models;
mod places;
mod protected;
mod sandbox;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use agents::AgentProfile;
use file::FileConfig;
pub(crate) use file::parse_reason;
pub use models::ModelOverride;
pub use protected::default_forbidden_paths;
pub use sandbox::{Launcher, SandboxConfig, SandboxMode, UnknownSandboxMode};

use crate::provider::{ProviderKind, UnknownProvider};
use crate::transport::DEFAULT_MAX_MESSAGE_BYTES;

/// Where a local Ollama answers when nothing else is configured.
pub const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";
/// The prices' currency when the config names none.
pub(crate) const DEFAULT_CURRENCY: &str = "USD";

#[derive(Debug, thiserror::Error)]
// The causes are part of each message and not `#[source]`s: error chains printed with their
// sources (anyhow's `{:#}`) would say them twice.
pub enum ConfigError {
    #[error("cannot read config file {path}: {reason}")]
    Read { path: PathBuf, reason: std::io::Error },
    #[error("cannot write config file {path}: {reason}")]
    Write { path: PathBuf, reason: std::io::Error },
    /// `reason` names the line and column.
    #[error("invalid config file {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error(transparent)]
    UnknownProvider(#[from] UnknownProvider),
    #[error(transparent)]
    UnknownSandboxMode(#[from] UnknownSandboxMode),
    #[error("invalid config: {0}")]
    Invalid(String),
}

/// A model provider the user configured explicitly.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub api_key: Option<String>,
    /// `None`: ask the server's `/models` at session/new and take the first.
    pub model: Option<String>,
    pub models: Vec<String>,
}

/// The resolved configuration the core runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `None` when nothing configures a provider: Corvid then looks for a local Ollama.
    pub provider: Option<ProviderConfig>,
    pub ollama_url: String,
    pub data_dir: PathBuf,
    /// `None`: `$data_dir/sessions.db`.
    pub store: Option<String>,
    pub log: Option<String>,
    pub max_message_bytes: usize,
    /// Deadline for every request Corvid sends to the client.
    pub client_request_timeout: Duration,
    pub max_turn_requests: u32,
    /// Subagents running at once on one connection (`[limits] max_subagents`; 0 turns the
    /// `delegate` tool off).
    pub max_subagents: usize,
    /// How long a permission request may go unanswered before it counts as reject.
    pub permission_timeout: Duration,
    /// Paths no tool may touch, even inside the session roots.
    pub forbidden_paths: Vec<PathBuf>,
    /// Retries of a model request on 429/5xx/connect errors.
    pub max_retries: u32,
    /// The longest one request's retries may wait in all (each wait is at most a minute).
    pub max_retry_wait: Duration,
    /// A model stream silent for this long is treated as failed.
    pub stall_timeout: Duration,
    /// `[provider] context_window`: every model's window (tokens), over the catalog's.
    pub context_window: Option<u64>,
    /// `[provider]` token prices: every model's, over the catalog's.
    pub prices: Option<Prices>,
    /// `[provider] images`: whether every model takes images, over the catalog.
    pub images: Option<bool>,
    /// `[models."<id>"]`: one model's overrides of the catalog (`catalog::ModelInfo::resolve`).
    pub models: std::collections::BTreeMap<String, ModelOverride>,
    /// Per-session spending limits.
    pub budget: Budget,
    /// How long an MCP tool call may take before it fails.
    pub mcp_call_timeout: Duration,
    /// `[provider] max_output_tokens`: the upper bound of every model's answer, over the
    /// catalog's (sent to Anthropic as `max_tokens`).
    pub max_output_tokens: Option<u32>,
    /// The file this configuration was read from, if any.
    pub source: Option<PathBuf>,
    /// The file Corvid looked for (`$CORVID_CONFIG` or the default path), read or not.
    pub file: Option<PathBuf>,
    /// Why the configuration could not be loaded (a missing or broken file). Corvid then still
    /// answers `initialize` but opens no session, and says this instead.
    pub problem: Option<String>,
    /// Agent aliases from `[agents.<alias>]`.
    pub agents: std::collections::BTreeMap<String, AgentProfile>,
    /// `[acp] default_agent`.
    pub default_agent: Option<String>,
    /// `[acp] protocol_v2` (or `CORVID_PROTOCOL_V2`, `1`/`true` or anything else for off): a
    /// client asking for protocol version 2 gets the ACP v2 preview. On by default; off keeps
    /// every connection at 1.
    pub protocol_v2: bool,
    /// `[sandbox]`: how commands are confined.
    pub sandbox: SandboxConfig,
}

/// What one connection runs with beside the [`Config`] all of them share: set by the front end
/// for each connection, never read from the file or the environment. The default (stdio, the
/// addon) limits nothing and names no agent.
#[derive(Debug, Clone, Default)]
pub struct ConnectionOptions {
    /// Cap on the sessions the connection may hold; `corvid serve` sets it for its remote
    /// connections. `None`: unlimited.
    pub max_sessions: Option<usize>,
    /// The connection's default agent alias (`corvid serve`'s `?agent=`).
    pub agent: Option<String>,
    /// Whether the config file is read again when no provider is usable (none configured, or
    /// signed out): a terminal sign-in (`corvid acp --login`, run by the client beside this
    /// process) then works without a restart. `corvid acp` sets it; embedders that pass their
    /// own settings (the Node addon) do not, so a key in a file they never named is not used.
    pub reread_config: bool,
}

/// What tokens cost: per million, in `currency`. A cache price left unset is the input price.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    pub cache_write_per_mtok: Option<f64>,
    pub cache_read_per_mtok: Option<f64>,
    pub currency: String,
}

impl Prices {
    /// What one request cost: uncached input at the input price, cache reads and writes at
    /// theirs (the input price where unset), output at the output price.
    pub fn cost(&self, usage: &crate::provider::TokenUsage) -> f64 {
        let cached = usage.cache_read_tokens + usage.cache_write_tokens;
        let uncached = usage.input_tokens.saturating_sub(cached) as f64;
        let read = self.cache_read_per_mtok.unwrap_or(self.input_per_mtok);
        let write = self.cache_write_per_mtok.unwrap_or(self.input_per_mtok);
        (uncached * self.input_per_mtok
            + usage.cache_read_tokens as f64 * read
            + usage.cache_write_tokens as f64 * write
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// Per-session limits; crossing one ends the turn with `max_tokens`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budget {
    pub max_tokens: Option<u64>,
    pub max_cost: Option<f64>,
}

/// Abstracts the environment so tests can resolve a config without touching the process env.
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Config {
    /// Reads the config file (if any) and applies the `CORVID_*` environment overrides.
    pub fn load() -> Result<Self, ConfigError> {
        Self::load_from(&ProcessEnv)
    }

    /// Where the config file is (or would be): `$CORVID_CONFIG`, else
    /// `~/.config/corvid/config.toml` (on Windows `%APPDATA%\corvid\config.toml`). The flag
    /// says whether the user named it explicitly.
    pub fn file_path(env: &dyn Env) -> (Option<PathBuf>, bool) {
        match env.var("CORVID_CONFIG") {
            Some(p) => (Some(PathBuf::from(p)), true),
            None => (places::config_file(env, places::home(env).as_deref()), false),
        }
    }

    pub fn load_from(env: &dyn Env) -> Result<Self, ConfigError> {
        let home = places::home(env);
        let (path, explicit) = Self::file_path(env);
        let file = match &path {
            Some(p) => file::read(p, explicit)?,
            None => None,
        };
        let source = file.as_ref().and(path.clone());
        let mut config = Self::resolve(file.unwrap_or_default(), env, home.as_deref(), source)?;
        config.file = path;
        Ok(config)
    }

    /// [`Config::load_from`], or, when that fails, the defaults with the failure as
    /// [`Config::problem`]: an editor that starts Corvid gets an `initialize` answer that says
    /// what is wrong, instead of a process that exited before it.
    ///
    /// Everything else comes from the environment alone, as without a file: above all where
    /// data lives (a broken config must not put a `.corvid` store in the editor's folder) and
    /// the sandbox launcher.
    pub fn load_or_problem(env: &dyn Env) -> Self {
        Self::load_from(env).unwrap_or_else(|e| {
            let home = places::home(env);
            let base = Self::resolve(FileConfig::default(), env, home.as_deref(), None).unwrap_or_default();
            Config { problem: Some(e.to_string()), file: Self::file_path(env).0, ..base }
        })
    }

    fn resolve(
        file: FileConfig,
        env: &dyn Env,
        home: Option<&Path>,
        source: Option<PathBuf>,
    ) -> Result<Self, ConfigError> {
        // Whatever the file and the environment leave unset keeps its default.
        let defaults = Config::default();
        let section = file.provider.unwrap_or_default();
        let kind = env.var("CORVID_PROVIDER").or(section.kind.clone());
        let base_url = env.var("CORVID_BASE_URL").or(section.base_url.clone());
        let api_key = env.var("CORVID_API_KEY").or(section.api_key.clone());
        let model = env.var("CORVID_MODEL").or(section.model.clone());

        let configured = kind.is_some()
            || base_url.is_some()
            || api_key.is_some()
            || model.is_some()
            || env.var("OPENAI_API_KEY").is_some()
            || env.var("OPENAI_BASE_URL").is_some();
        let provider = if configured {
            let kind = kind.as_deref().map(str::parse).transpose()?.unwrap_or(ProviderKind::OpenAi);
            // Each provider's own variable is the fallback; an OpenAI key never goes to Anthropic.
            let api_key = api_key.or_else(|| match kind {
                ProviderKind::OpenAi | ProviderKind::OpenAiResponses => env.var("OPENAI_API_KEY"),
                ProviderKind::Anthropic => env.var("ANTHROPIC_API_KEY"),
            });
            // The same for the base URL, as the providers' SDKs spell it (Anthropic's without
            // `/v1`: `anthropic::api_root` takes either).
            let base_url = base_url.or_else(|| match kind {
                ProviderKind::OpenAi | ProviderKind::OpenAiResponses => env.var("OPENAI_BASE_URL"),
                ProviderKind::Anthropic => env.var("ANTHROPIC_BASE_URL"),
            });
            let mut models = section.models.clone();
            let model = model.or_else(|| models.first().cloned());
            if let Some(m) = model.as_ref().filter(|m| !models.contains(m)) {
                models.insert(0, m.clone());
            }
            Some(ProviderConfig {
                kind,
                base_url: base_url.unwrap_or_else(|| kind.default_base_url().to_string()),
                api_key,
                model,
                models,
            })
        } else {
            None
        };

        let data_dir = env
            .var("CORVID_DATA_DIR")
            .map(PathBuf::from)
            .or(file.data_dir)
            .or_else(|| places::data_dir(env, home))
            .unwrap_or(defaults.data_dir);
        let limits = file.limits.unwrap_or_default();
        let agents = agents::profiles(file.agents.unwrap_or_default())?;
        let secs = |secs: Option<u64>, default: Duration| secs.map_or(default, Duration::from_secs);
        Ok(Config {
            provider,
            ollama_url: file.discovery.and_then(|d| d.ollama_url).unwrap_or(defaults.ollama_url),
            data_dir,
            store: file.store,
            log: env.var("CORVID_LOG").or(file.log),
            max_message_bytes: limits.max_message_bytes.unwrap_or(defaults.max_message_bytes),
            client_request_timeout: secs(limits.client_request_timeout_secs, defaults.client_request_timeout),
            max_turn_requests: limits.max_turn_requests.unwrap_or(defaults.max_turn_requests),
            max_subagents: limits.max_subagents.unwrap_or(defaults.max_subagents),
            permission_timeout: secs(limits.permission_timeout_secs, defaults.permission_timeout),
            // Not the defaults' list: that one cannot name the credential stores under `home`.
            forbidden_paths: limits.forbidden_paths.unwrap_or_else(|| default_forbidden_paths(home)),
            max_retries: section.max_retries.unwrap_or(defaults.max_retries),
            max_retry_wait: section.max_retry_wait_secs.map(Duration::from_secs).unwrap_or(defaults.max_retry_wait),
            stall_timeout: secs(section.stall_timeout_secs, defaults.stall_timeout),
            prices: match (section.input_price_per_mtok, section.output_price_per_mtok) {
                (None, None) => None,
                (input, output) => Some(Prices {
                    input_per_mtok: input.unwrap_or(0.0),
                    output_per_mtok: output.unwrap_or(0.0),
                    cache_write_per_mtok: section.cache_write_price_per_mtok,
                    cache_read_per_mtok: section.cache_read_price_per_mtok,
                    currency: section.currency.clone().unwrap_or_else(|| DEFAULT_CURRENCY.into()),
                }),
            },
            budget: Budget { max_tokens: limits.max_session_tokens, max_cost: limits.max_session_cost },
            images: section.images,
            mcp_call_timeout: secs(limits.mcp_call_timeout_secs, defaults.mcp_call_timeout),
            context_window: section.context_window.filter(|w| *w > 0),
            max_output_tokens: section.max_output_tokens.map(|m| m.max(1)),
            models: models::overrides(file.models.unwrap_or_default())?,
            source,
            file: None,
            problem: None,
            agents,
            protocol_v2: env
                .var("CORVID_PROTOCOL_V2")
                .map(|v| v == "1" || v == "true")
                .unwrap_or_else(|| file.acp.as_ref().and_then(|a| a.protocol_v2).unwrap_or(defaults.protocol_v2)),
            default_agent: file.acp.and_then(|a| a.default_agent),
            sandbox: Self::sandbox(file.sandbox.unwrap_or_default(), file.mcp.unwrap_or_default(), env)?,
        })
    }

    /// `[sandbox]`, with `CORVID_SANDBOX` over its mode, and the MCP servers that opted in.
    fn sandbox(
        section: file::SandboxSection,
        mcp: file::McpSection,
        env: &dyn Env,
    ) -> Result<SandboxConfig, ConfigError> {
        let mode = match env.var("CORVID_SANDBOX").or(section.mode) {
            Some(id) => SandboxMode::from_id(&id).ok_or(UnknownSandboxMode(id))?,
            None => SandboxMode::default(),
        };
        Ok(SandboxConfig {
            mode,
            network: section.network.unwrap_or(false),
            writable_roots: section.writable_roots.unwrap_or_default(),
            required: section.required.unwrap_or(false),
            launcher: sandbox::default_launcher(),
            mcp_servers: mcp
                .servers
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(name, server)| server.sandbox.unwrap_or(false).then_some(name))
                .collect(),
        })
    }
}

impl Default for Config {
    /// No file, no environment: what an embedder starts from before setting fields. Resolving
    /// the file and the environment starts from it too, so each built-in default is written
    /// once: here, or in a constant of this module.
    fn default() -> Self {
        Config {
            provider: None,
            ollama_url: DEFAULT_OLLAMA_URL.into(),
            data_dir: PathBuf::from(".corvid"),
            store: None,
            log: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            client_request_timeout: Duration::from_secs(300),
            max_turn_requests: 50,
            max_subagents: 3,
            permission_timeout: Duration::from_secs(600),
            forbidden_paths: default_forbidden_paths(None),
            max_retries: 6,
            max_retry_wait: Duration::from_secs(180),
            stall_timeout: Duration::from_secs(120),
            context_window: None,
            prices: None,
            models: Default::default(),
            images: None,
            budget: Budget::default(),
            mcp_call_timeout: Duration::from_secs(120),
            max_output_tokens: None,
            source: None,
            file: None,
            problem: None,
            agents: Default::default(),
            default_agent: None,
            protocol_v2: true,
            sandbox: SandboxConfig::default(),
        }
    }
}

impl Config {
    /// How to configure a provider, naming what was tried (the Ollama URL, the config file);
    /// shown in `session/new`'s auth error and the auth method.
    pub fn how_to_configure(&self) -> String {
        let file = match &self.file {
            Some(path) => format!("a [provider] section with base_url, api_key and model in {}", path.display()),
            None => "a [provider] section with base_url, api_key and model in a config file named by \
                     CORVID_CONFIG"
                .to_string(),
        };
        format!(
            "No model provider is configured and no local Ollama answered at {ollama}. Set CORVID_BASE_URL (an \
             OpenAI-compatible endpoint such as https://api.openai.com/v1 or https://openrouter.ai/api/v1), \
             CORVID_API_KEY and CORVID_MODEL in the environment the editor starts Corvid with, or put {file}; or \
             start Ollama (ollama serve) with a model pulled. For Anthropic's Claude models set \
             CORVID_PROVIDER=anthropic, ANTHROPIC_API_KEY and CORVID_MODEL.",
            ollama = self.ollama_url,
        )
    }
}

#[cfg(test)]
mod tests;
