//! Built-in tools: what the model can do in the workspace, all behind the jail.
//!
//! Each tool is one file implementing [`Tool`] (its argument struct, JSON schema, how a call is
//! announced and what permission it needs, and `run`); [`Registry`] is the set a turn offers
//! (the built-ins an agent alias enables, plus the session's MCP tools) and looks calls up by
//! name. A tool runs with a [`ToolContext`]: the jail, the editor, the call's card, the turn's
//! cancellation token. Nothing here knows the RPC layer or the agent.

pub mod apply_patch;
pub mod ask_user;
pub mod background;
pub mod cap;
mod change;
pub mod command_output;
pub mod delegate;
pub mod deliver_file;
pub mod edit_file;
pub mod files;
pub mod glob;
pub mod image;
pub mod jail;
pub mod kill_command;
pub mod list_directory;
pub mod read_file;
mod registry;
pub mod review;
pub mod run_command;
pub mod search;
pub mod shell;
mod start_background;
pub mod terminal;
pub mod text_match;
pub mod update_plan;
mod walk;
pub mod web_fetch;
pub mod write_file;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use background::{BackgroundCommands, TerminalFeed};
pub use jail::{Jail, JailError, meta as jail_meta};
pub use registry::{Registry, Tool, ToolContext, Updates};

use crate::event::{Location, ToolContent, ToolKind};
use crate::provider::{FunctionSpec, ToolSpec};

/// Why a tool call failed; the message goes back to the model and into the tool card.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Jail(#[from] JailError),
    #[error("invalid arguments for {tool}: {reason}")]
    Arguments { tool: String, reason: String },
    #[error("unknown tool `{0}`")]
    Unknown(String),
    /// The turn was cancelled while the tool ran (it stopped as soon as it noticed).
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Failed(String),
}

impl From<crate::editor::EditorError> for ToolError {
    fn from(e: crate::editor::EditorError) -> Self {
        match e {
            crate::editor::EditorError::Cancelled => ToolError::Cancelled,
            other => ToolError::Failed(other.to_string()),
        }
    }
}

/// What a call needs from the user before it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Needs {
    /// Reading inside the jail: never asks.
    Nothing,
    /// Changing a file (the canonical path).
    Edit(String),
    /// Running a command (the full command line).
    Command(String),
    /// Running a command with part of the sandbox lifted: always asks (see `Mode::decides`).
    Escalated { command: String, escalation: crate::sandbox::Escalation },
    /// Calling a tool of an MCP server (its full `mcp__server__tool` name).
    Mcp(String),
    /// Fetching a URL from the agent's own process (`web_fetch`): `host` is its host and port,
    /// what an "always" answer is scoped to. `private`: the host is, or resolves to, a loopback,
    /// private or link-local address (the user's own services), which always asks.
    Fetch { url: String, host: String, private: bool },
}

/// How a call is shown before it runs.
#[derive(Debug, Clone)]
pub struct Announce {
    pub kind: ToolKind,
    pub title: String,
    pub locations: Vec<Location>,
    pub needs: Needs,
}

/// A finished call.
#[derive(Debug, Clone)]
pub struct Output {
    /// What the model reads.
    pub for_model: String,
    /// What the client shows.
    pub content: Vec<ToolContent>,
    pub raw: Value,
    /// Whether the call did what it was asked (a command that exits non-zero did not): the
    /// card shows `completed` or `failed`.
    pub ok: bool,
    /// Images the model sees with `for_model` (if it takes images; `for_model` says what they
    /// are for one that does not), stored under `uploads/` ([`image`]).
    pub images: Vec<crate::provider::ImageRef>,
}

impl Output {
    pub fn text(text: String, raw: Value) -> Self {
        let content = vec![ToolContent::Text(text.clone())];
        Self { for_model: text, content, raw, ok: true, images: Vec::new() }
    }
}

pub fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolError> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolError::Arguments { tool: tool.to_string(), reason: e.to_string() })
}

/// A built-in tool's spec for the model.
pub(crate) fn spec(name: &'static str, description: &'static str, parameters: Value) -> ToolSpec {
    ToolSpec {
        kind: "function",
        function: FunctionSpec { name: name.into(), description: description.into(), parameters },
    }
}

pub fn location(path: &std::path::Path, line: Option<u32>) -> Location {
    Location { path: path.to_path_buf(), line }
}

/// `path` shown relative to the cwd when inside it.
pub fn display(path: &std::path::Path, jail: &Jail) -> String {
    path.strip_prefix(jail.cwd()).map(|p| p.display().to_string()).unwrap_or_else(|_| path.display().to_string())
}
