//! Configuration: a TOML file plus environment overrides.
//!
//! Precedence (highest first): `CORVID_*` environment variables, the TOML file
//! (`$CORVID_CONFIG`, default `~/.config/corvid/config.toml`), built-in defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::provider::{ProviderKind, UnknownProvider};
use crate::transport::DEFAULT_MAX_MESSAGE_BYTES;

/// Where a local Ollama answers when nothing else is configured.
pub const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";
/// Answer length asked for when the config does not say (Anthropic requires a bound).
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8192;
/// Context window assumed when the config does not say (tokens).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Claude models have 200k-token windows; OpenAI-compatible servers vary.
const ANTHROPIC_CONTEXT_WINDOW: u64 = 200_000;
/// The prices' currency when the config names none.
const DEFAULT_CURRENCY: &str = "USD";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write config file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {source}")]
    Parse { path: PathBuf, source: toml::de::Error },
    #[error(transparent)]
    UnknownProvider(#[from] UnknownProvider),
}

/// The file's shape. Every field is optional; see `docs` in the README.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    provider: Option<ProviderSection>,
    data_dir: Option<PathBuf>,
    /// Session store: a SQLite file path, `sqlite://PATH` or `postgres://…`; `none` keeps
    /// sessions in memory.
    store: Option<String>,
    log: Option<String>,
    limits: Option<LimitsSection>,
    discovery: Option<DiscoverySection>,
    /// Agent aliases: `[agents.<alias>]`.
    agents: Option<std::collections::BTreeMap<String, AgentSection>>,
    acp: Option<AcpSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AcpSection {
    /// The alias used when a `session/new` names none (and the connection sets none).
    default_agent: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentSection {
    model: Option<String>,
    kind: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    system_prompt: Option<String>,
    default_mode: Option<String>,
    tools: Option<Vec<String>>,
    enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderSection {
    kind: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    /// Models offered in the session's model picker (the first is the default when `model` is unset).
    #[serde(default)]
    models: Vec<String>,
    max_retries: Option<u32>,
    stall_timeout_secs: Option<u64>,
    /// The model's context window in tokens, reported as `size` in `usage_update`.
    context_window: Option<u64>,
    /// Price of a million input (prompt) tokens, in `currency`; enables `cost` in `usage_update`.
    input_price_per_mtok: Option<f64>,
    /// Price of a million output (completion) tokens.
    output_price_per_mtok: Option<f64>,
    /// ISO 4217 code of the prices (default USD).
    currency: Option<String>,
    /// Upper bound of one answer (Anthropic's `max_tokens`; the thinking budget comes on top).
    max_output_tokens: Option<u32>,
    /// Whether the model takes images (default: guessed from the provider and model name).
    images: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsSection {
    max_message_bytes: Option<usize>,
    client_request_timeout_secs: Option<u64>,
    max_turn_requests: Option<u32>,
    permission_timeout_secs: Option<u64>,
    /// Replaces the default forbidden paths (/etc, Corvid's config, credential stores in ~: see
    /// `Jail::default_forbidden`).
    forbidden_paths: Option<Vec<PathBuf>>,
    /// How long an MCP tool call may take before it fails.
    mcp_call_timeout_secs: Option<u64>,
    /// Tokens (input + output, summed over every model request) one session may use.
    max_session_tokens: Option<u64>,
    /// What one session may cost, in the prices' currency (needs the prices).
    max_session_cost: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiscoverySection {
    ollama_url: Option<String>,
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

/// One `[agents.<alias>]` entry: overrides of the provider and the session's behaviour.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentProfile {
    pub model: Option<String>,
    pub kind: Option<ProviderKind>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// Appended to Corvid's own system prompt.
    pub system_prompt: Option<String>,
    /// Permission mode new sessions start in (one of the session modes).
    pub default_mode: Option<String>,
    /// The tools offered to the model; `None`: all of them.
    pub tools: Option<Vec<String>>,
    pub enabled: bool,
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
    /// How long a permission request may go unanswered before it counts as reject.
    pub permission_timeout: Duration,
    /// Paths no tool may touch, even inside the session roots.
    pub forbidden_paths: Vec<PathBuf>,
    /// Retries of a model request on 429/5xx/connect errors.
    pub max_retries: u32,
    /// A model stream silent for this long is treated as failed.
    pub stall_timeout: Duration,
    /// The model's context window (tokens), for `usage_update`.
    pub context_window: u64,
    /// Token prices, when configured.
    pub prices: Option<Prices>,
    /// `[provider] images`: overrides the guess of whether the model takes images.
    pub images: Option<bool>,
    /// Per-session spending limits.
    pub budget: Budget,
    /// How long an MCP tool call may take before it fails.
    pub mcp_call_timeout: Duration,
    /// Upper bound of one model answer (tokens); sent to Anthropic as `max_tokens`.
    pub max_output_tokens: u32,
    /// The file this configuration was read from, if any.
    pub source: Option<PathBuf>,
    /// Agent aliases from `[agents.<alias>]`.
    pub agents: std::collections::BTreeMap<String, AgentProfile>,
    /// `[acp] default_agent`.
    pub default_agent: Option<String>,
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
}

/// What tokens cost: per million, in `currency`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    pub currency: String,
}

impl Prices {
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok) / 1_000_000.0
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
    /// `~/.config/corvid/config.toml`. The flag says whether the user named it explicitly.
    pub fn file_path(env: &dyn Env) -> (Option<PathBuf>, bool) {
        match env.var("CORVID_CONFIG") {
            Some(p) => (Some(PathBuf::from(p)), true),
            None => (env.var("HOME").map(|h| PathBuf::from(h).join(".config/corvid/config.toml")), false),
        }
    }

    pub fn load_from(env: &dyn Env) -> Result<Self, ConfigError> {
        let home = env.var("HOME").map(PathBuf::from);
        let (path, explicit) = Self::file_path(env);
        let file = match &path {
            Some(p) => read_file(p, explicit)?,
            None => None,
        };
        let source = file.as_ref().and(path);
        Self::resolve(file.unwrap_or_default(), env, home.as_deref(), source)
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
            || env.var("OPENAI_API_KEY").is_some();
        let provider = if configured {
            let kind = kind.as_deref().map(str::parse).transpose()?.unwrap_or(ProviderKind::OpenAi);
            // Each provider's own variable is the fallback; an OpenAI key never goes to Anthropic.
            let api_key = api_key.or_else(|| match kind {
                ProviderKind::OpenAi => env.var("OPENAI_API_KEY"),
                ProviderKind::Anthropic => env.var("ANTHROPIC_API_KEY"),
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
            .or_else(|| env.var("XDG_DATA_HOME").map(|x| PathBuf::from(x).join("corvid")))
            .or_else(|| home.map(|h| h.join(".local/share/corvid")))
            .unwrap_or(defaults.data_dir);
        let limits = file.limits.unwrap_or_default();
        let mut agents = std::collections::BTreeMap::new();
        for (alias, a) in file.agents.unwrap_or_default() {
            let kind = a
                .kind
                .as_deref()
                .map(str::parse::<ProviderKind>)
                .transpose()
                .map_err(|UnknownProvider(name)| UnknownProvider(format!("{name} (in [agents.{alias}])")))?;
            let profile = AgentProfile {
                model: a.model,
                kind,
                base_url: a.base_url,
                api_key: a.api_key,
                system_prompt: a.system_prompt,
                default_mode: a.default_mode,
                tools: a.tools,
                enabled: a.enabled.unwrap_or(true),
            };
            agents.insert(alias, profile);
        }
        let default_window = match &provider {
            Some(ProviderConfig { kind: ProviderKind::Anthropic, .. }) => ANTHROPIC_CONTEXT_WINDOW,
            _ => defaults.context_window,
        };
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
            permission_timeout: secs(limits.permission_timeout_secs, defaults.permission_timeout),
            // Not the defaults' list: that one cannot name the credential stores under `home`.
            forbidden_paths: limits.forbidden_paths.unwrap_or_else(|| crate::tools::Jail::default_forbidden(home)),
            max_retries: section.max_retries.unwrap_or(defaults.max_retries),
            stall_timeout: secs(section.stall_timeout_secs, defaults.stall_timeout),
            prices: match (section.input_price_per_mtok, section.output_price_per_mtok) {
                (None, None) => None,
                (input, output) => Some(Prices {
                    input_per_mtok: input.unwrap_or(0.0),
                    output_per_mtok: output.unwrap_or(0.0),
                    currency: section.currency.clone().unwrap_or_else(|| DEFAULT_CURRENCY.into()),
                }),
            },
            budget: Budget { max_tokens: limits.max_session_tokens, max_cost: limits.max_session_cost },
            images: section.images,
            mcp_call_timeout: secs(limits.mcp_call_timeout_secs, defaults.mcp_call_timeout),
            context_window: section.context_window.unwrap_or(default_window),
            max_output_tokens: section.max_output_tokens.unwrap_or(defaults.max_output_tokens).max(1),
            source,
            agents,
            default_agent: file.acp.and_then(|a| a.default_agent),
        })
    }
}

impl Config {
    /// This configuration as seen by sessions of agent `alias`: its provider overrides
    /// applied (a changed kind or base URL starts from that provider's defaults).
    pub fn for_agent(&self, profile: &AgentProfile) -> Config {
        let mut config = self.clone();
        let overrides = profile.kind.is_some() || profile.base_url.is_some() || profile.api_key.is_some();
        if overrides || profile.model.is_some() {
            let base = self.provider.clone();
            let kind = profile.kind.or(base.as_ref().map(|p| p.kind)).unwrap_or(ProviderKind::OpenAi);
            let same_kind = base.as_ref().is_some_and(|p| p.kind == kind);
            let base_url = profile
                .base_url
                .clone()
                .or_else(|| base.as_ref().filter(|_| same_kind).map(|p| p.base_url.clone()))
                .unwrap_or_else(|| kind.default_base_url().to_string());
            let same_endpoint = same_kind && base.as_ref().is_some_and(|p| p.base_url == base_url);
            let api_key = profile
                .api_key
                .clone()
                .or_else(|| base.as_ref().filter(|_| same_endpoint).and_then(|p| p.api_key.clone()));
            let (model, models) = match &profile.model {
                Some(m) => (Some(m.clone()), vec![m.clone()]),
                None if same_endpoint => {
                    (base.as_ref().and_then(|p| p.model.clone()), base.map(|p| p.models).unwrap_or_default())
                }
                None => (None, Vec::new()),
            };
            config.provider = Some(ProviderConfig { kind, base_url, api_key, model, models });
        }
        config
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
            permission_timeout: Duration::from_secs(600),
            forbidden_paths: crate::tools::Jail::default_forbidden(None),
            max_retries: 3,
            stall_timeout: Duration::from_secs(120),
            context_window: DEFAULT_CONTEXT_WINDOW,
            prices: None,
            images: None,
            budget: Budget::default(),
            mcp_call_timeout: Duration::from_secs(120),
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            source: None,
            agents: Default::default(),
            default_agent: None,
        }
    }
}

fn read_file(path: &Path, explicit: bool) -> Result<Option<FileConfig>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            toml::from_str(&text).map(Some).map_err(|source| ConfigError::Parse { path: path.to_path_buf(), source })
        }
        // A missing default file is normal; a missing file the user named is an error.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => Ok(None),
        Err(source) => Err(ConfigError::Read { path: path.to_path_buf(), source }),
    }
}

/// How to configure a provider; shown in `session/new`'s auth error and the auth method.
pub const HOW_TO_CONFIGURE: &str = "No model provider is configured and no local Ollama answered at \
http://127.0.0.1:11434. Set CORVID_BASE_URL (an OpenAI-compatible endpoint such as \
https://api.openai.com/v1 or https://openrouter.ai/api/v1), CORVID_API_KEY and CORVID_MODEL in the \
environment the editor starts Corvid with, or put a [provider] section with base_url, api_key and \
model in ~/.config/corvid/config.toml; or start Ollama (ollama serve) with a model pulled. For \
Anthropic's Claude models set CORVID_PROVIDER=anthropic, ANTHROPIC_API_KEY and CORVID_MODEL.";

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct MapEnv(HashMap<&'static str, &'static str>);
    impl Env for MapEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|s| s.to_string())
        }
    }

    fn file(text: &str) -> FileConfig {
        toml::from_str(text).expect("valid toml")
    }

    #[test]
    fn environment_overrides_the_file() {
        let env = MapEnv(HashMap::from([("CORVID_MODEL", "m-env"), ("OPENAI_API_KEY", "sk-fallback")]));
        let f = file("[provider]\nbase_url = \"http://x/v1\"\nmodel = \"m-file\"\nmodels = [\"a\"]\n");
        let c = Config::resolve(f, &env, None, None).expect("config");
        let p = c.provider.expect("provider");
        assert_eq!(p.model.as_deref(), Some("m-env"));
        assert_eq!(p.models, vec!["m-env", "a"]);
        assert_eq!(p.api_key.as_deref(), Some("sk-fallback"));
        assert_eq!(p.base_url, "http://x/v1");
    }

    #[test]
    fn nothing_set_resolves_to_the_defaults() {
        let c = Config::resolve(FileConfig::default(), &MapEnv(HashMap::new()), None, None).expect("config");
        assert_eq!(format!("{c:?}"), format!("{:?}", Config::default()));
    }

    #[test]
    fn nothing_configured_means_no_provider() {
        let c = Config::resolve(FileConfig::default(), &MapEnv(HashMap::new()), Some(Path::new("/h")), None)
            .expect("config");
        assert!(c.provider.is_none());
        assert_eq!(c.data_dir, PathBuf::from("/h/.local/share/corvid"));
    }

    #[test]
    fn unknown_provider_and_unknown_keys_are_errors() {
        let env = MapEnv(HashMap::from([("CORVID_PROVIDER", "acme")]));
        assert!(matches!(
            Config::resolve(FileConfig::default(), &env, None, None),
            Err(ConfigError::UnknownProvider(_))
        ));
        assert!(toml::from_str::<FileConfig>("bogus = 1").is_err());
        let e = Config::resolve(FileConfig::default(), &env, None, None).expect_err("unknown");
        assert!(e.to_string().contains("`openai`") && e.to_string().contains("`anthropic`"), "{e}");
    }

    #[test]
    fn anthropic_uses_its_own_key_and_url() {
        let env = MapEnv(HashMap::from([
            ("CORVID_PROVIDER", "anthropic"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("OPENAI_API_KEY", "sk-openai"),
            ("CORVID_MODEL", "claude-sonnet-4-5"),
        ]));
        let c = Config::resolve(FileConfig::default(), &env, None, None).expect("config");
        let p = c.provider.expect("provider");
        assert_eq!(p.kind, ProviderKind::Anthropic);
        assert_eq!(p.api_key.as_deref(), Some("sk-ant"));
        assert_eq!(p.base_url, ProviderKind::Anthropic.default_base_url());
        assert_eq!(c.context_window, 200_000);
        assert_eq!(c.max_output_tokens, DEFAULT_MAX_OUTPUT_TOKENS);
    }

    #[test]
    fn anthropic_never_takes_the_openai_key_and_corvid_key_wins() {
        let env = MapEnv(HashMap::from([("OPENAI_API_KEY", "sk-openai")]));
        let f = file("[provider]\nkind = \"anthropic\"\nmodel = \"claude-opus-4-1\"\nmax_output_tokens = 4096\n");
        let c = Config::resolve(f, &env, None, None).expect("config");
        assert_eq!(c.max_output_tokens, 4096);
        let p = c.provider.expect("provider");
        assert_eq!(p.kind, ProviderKind::Anthropic);
        assert_eq!(p.api_key, None);

        let env = MapEnv(HashMap::from([
            ("CORVID_PROVIDER", "anthropic"),
            ("CORVID_API_KEY", "sk-corvid"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
        ]));
        let p = Config::resolve(FileConfig::default(), &env, None, None).expect("config").provider.expect("provider");
        assert_eq!(p.api_key.as_deref(), Some("sk-corvid"));
        assert_eq!(p.model, None, "the model list is asked at session/new");
    }

    #[test]
    fn openai_keeps_its_key_fallback() {
        let env = MapEnv(HashMap::from([("OPENAI_API_KEY", "sk-openai"), ("ANTHROPIC_API_KEY", "sk-ant")]));
        let p = Config::resolve(FileConfig::default(), &env, None, None).expect("config").provider.expect("provider");
        assert_eq!(p.kind, ProviderKind::OpenAi);
        assert_eq!(p.api_key.as_deref(), Some("sk-openai"));
        assert_eq!(p.base_url, ProviderKind::OpenAi.default_base_url());
    }

    #[test]
    fn prices_and_budgets() {
        let f = file(
            "[provider]\nmodel = \"m\"\ninput_price_per_mtok = 3.0\noutput_price_per_mtok = 15.0\n\
             [limits]\nmax_session_tokens = 1000\nmax_session_cost = 0.5\n",
        );
        let c = Config::resolve(f, &MapEnv(HashMap::new()), None, None).expect("config");
        let prices = c.prices.expect("prices");
        assert_eq!(prices.currency, "USD");
        assert!((prices.cost(1_000_000, 100_000) - 4.5).abs() < 1e-9);
        assert_eq!(c.budget, Budget { max_tokens: Some(1000), max_cost: Some(0.5) });
        let none = Config::resolve(FileConfig::default(), &MapEnv(HashMap::new()), None, None).expect("config");
        assert!(none.prices.is_none());
    }

    #[test]
    fn agent_aliases_and_their_provider_overrides() {
        let f = file(
            "[provider]\nbase_url = \"http://x/v1\"\napi_key = \"k\"\nmodel = \"m\"\n\
             [acp]\ndefault_agent = \"a\"\n\
             [agents.a]\nmodel = \"m2\"\ntools = [\"read_file\"]\n\
             [agents.b]\nkind = \"anthropic\"\nenabled = false\n",
        );
        let c = Config::resolve(f, &MapEnv(HashMap::new()), None, None).expect("config");
        assert_eq!(c.default_agent.as_deref(), Some("a"));
        let a = &c.agents["a"];
        assert!(a.enabled);
        assert_eq!(a.tools.as_deref(), Some(&["read_file".to_string()][..]));
        let pa = c.for_agent(a).provider.expect("provider");
        assert_eq!(
            (pa.base_url.as_str(), pa.api_key.as_deref(), pa.model.as_deref()),
            ("http://x/v1", Some("k"), Some("m2"))
        );
        assert_eq!(pa.models, vec!["m2".to_string()]);
        let b = &c.agents["b"];
        assert!(!b.enabled);
        // Another provider kind: its own default URL, and the other endpoint's key stays home.
        let pb = c.for_agent(b).provider.expect("provider");
        assert_eq!(pb.kind, ProviderKind::Anthropic);
        assert_eq!(pb.base_url, ProviderKind::Anthropic.default_base_url());
        assert_eq!(pb.api_key, None);
        let bad = toml::from_str::<FileConfig>("[agents.x]\nkind = \"nope\"\n").expect("toml");
        assert!(Config::resolve(bad, &MapEnv(HashMap::new()), None, None).is_err());
        let bad = toml::from_str::<FileConfig>("[agents.x]\nkind = \"nope\"\n").expect("toml");
        let e = Config::resolve(bad, &MapEnv(HashMap::new()), None, None).expect_err("unknown kind");
        assert!(
            e.to_string().starts_with("unsupported provider `nope (in [agents.x])`: Corvid supports `openai`"),
            "{e}"
        );
    }
}
