//! The config file's shape: every section and key, all optional, unknown keys refused.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;

/// The file's shape. Every field is optional; see `docs` in the README.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) provider: Option<ProviderSection>,
    pub(super) data_dir: Option<PathBuf>,
    /// Session store: a SQLite file path, `sqlite://PATH` or `postgres://…`; `none` keeps
    /// sessions in memory.
    pub(super) store: Option<String>,
    pub(super) log: Option<String>,
    pub(super) limits: Option<LimitsSection>,
    pub(super) discovery: Option<DiscoverySection>,
    /// Agent aliases: `[agents.<alias>]`.
    pub(super) agents: Option<std::collections::BTreeMap<String, AgentSection>>,
    pub(super) acp: Option<AcpSection>,
    pub(super) sandbox: Option<SandboxSection>,
    pub(super) mcp: Option<McpSection>,
    /// One model's overrides of the catalog: `[models."<id>"]`.
    pub(super) models: Option<std::collections::BTreeMap<String, super::models::ModelSection>>,
}

/// `[mcp]`: settings for the MCP servers the editor attaches, by the name it gives them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpSection {
    /// `[mcp.servers.<name>]`.
    pub(super) servers: Option<std::collections::BTreeMap<String, McpServerSection>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpServerSection {
    /// Run this stdio server in the session's command sandbox (default false: the user chose
    /// the server, and many need the network or their own files).
    pub(super) sandbox: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SandboxSection {
    /// `workspace-write` (default), `read-only` or `off`.
    pub(super) mode: Option<String>,
    /// Whether commands may use the network (default false).
    pub(super) network: Option<bool>,
    /// Extra folders commands may write to.
    pub(super) writable_roots: Option<Vec<PathBuf>>,
    /// Refuse commands where the kernel cannot confine them (default false).
    pub(super) required: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AcpSection {
    /// The alias used when a `session/new` names none (and the connection sets none).
    pub(super) default_agent: Option<String>,
    /// Answer ACP v2 (preview) to a client that asks for it.
    pub(super) protocol_v2: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentSection {
    pub(super) model: Option<String>,
    pub(super) kind: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) api_key: Option<String>,
    pub(super) system_prompt: Option<String>,
    pub(super) default_mode: Option<String>,
    pub(super) tools: Option<Vec<String>>,
    pub(super) enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProviderSection {
    pub(super) kind: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) api_key: Option<String>,
    pub(super) model: Option<String>,
    /// Models offered in the session's model picker (the first is the default when `model` is unset).
    #[serde(default)]
    pub(super) models: Vec<String>,
    pub(super) max_retries: Option<u32>,
    /// The longest one request's retries may wait in all, in seconds.
    pub(super) max_retry_wait_secs: Option<u64>,
    pub(super) stall_timeout_secs: Option<u64>,
    /// Every model's context window in tokens, over the catalog's (`[models."<id>"]` for one).
    pub(super) context_window: Option<u64>,
    /// Price of a million input (prompt) tokens, in `currency`; enables `cost` in `usage_update`.
    pub(super) input_price_per_mtok: Option<f64>,
    /// Price of a million output (completion) tokens.
    pub(super) output_price_per_mtok: Option<f64>,
    /// Price of a million tokens written to the provider's prompt cache (default: the input price).
    pub(super) cache_write_price_per_mtok: Option<f64>,
    /// Price of a million tokens read from the provider's prompt cache (default: the input price).
    pub(super) cache_read_price_per_mtok: Option<f64>,
    /// ISO 4217 code of the prices (default USD).
    pub(super) currency: Option<String>,
    /// Upper bound of one answer (Anthropic's `max_tokens`; the thinking budget comes on top).
    pub(super) max_output_tokens: Option<u32>,
    /// Whether the model takes images (default: the model catalog's answer).
    pub(super) images: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LimitsSection {
    pub(super) max_message_bytes: Option<usize>,
    pub(super) client_request_timeout_secs: Option<u64>,
    pub(super) max_turn_requests: Option<u32>,
    pub(super) permission_timeout_secs: Option<u64>,
    /// Replaces the default forbidden paths (/etc, Corvid's config, credential stores in ~: see
    /// `config::default_forbidden_paths`).
    pub(super) forbidden_paths: Option<Vec<PathBuf>>,
    /// How long an MCP tool call may take before it fails.
    pub(super) mcp_call_timeout_secs: Option<u64>,
    /// Tokens (input + output, summed over every model request) one session may use.
    pub(super) max_session_tokens: Option<u64>,
    /// What one session may cost, in the prices' currency (needs the prices).
    pub(super) max_session_cost: Option<f64>,
    /// Subagents (`delegate`) running at once on one connection; more wait for a free slot.
    pub(super) max_subagents: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DiscoverySection {
    pub(super) ollama_url: Option<String>,
}

/// The file at `path`; `None` when it is missing and the user did not name it.
pub(super) fn read(path: &Path, explicit: bool) -> Result<Option<FileConfig>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text)
            .map(Some)
            .map_err(|e| ConfigError::Parse { path: path.to_path_buf(), reason: parse_reason(&text, &e) }),
        // A missing default file is normal; a missing file the user named is an error.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => Ok(None),
        Err(reason) => Err(ConfigError::Read { path: path.to_path_buf(), reason }),
    }
}

/// A TOML error in one line: where (1-based line and column, from the error's byte span) and
/// what. toml's own message spans several lines with a drawing of the spot.
pub(crate) fn parse_reason(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim();
    let Some(span) = e.span() else { return message.to_string() };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}: {message}")
}
