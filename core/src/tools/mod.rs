//! Built-in tools: what the model can do in the workspace, all behind the jail.

pub mod ask;
pub mod deliver;
pub mod files;
pub mod fs;
pub mod jail;
pub mod plan;
pub mod search;
pub mod shell;
pub mod terminal;

use agent_client_protocol_schema::v1 as acp;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub use jail::{Jail, JailError};

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
    #[error("{0}")]
    Failed(String),
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
    /// Calling a tool of an MCP server (its full `mcp__server__tool` name).
    Mcp(String),
}

/// How a call is shown before it runs.
#[derive(Debug, Clone)]
pub struct Announce {
    pub kind: acp::ToolKind,
    pub title: String,
    pub locations: Vec<acp::ToolCallLocation>,
    pub needs: Needs,
}

/// A finished call.
#[derive(Debug, Clone)]
pub struct Output {
    /// What the model reads.
    pub for_model: String,
    /// What the client shows.
    pub content: Vec<acp::ToolCallContent>,
    pub raw: Value,
}

impl Output {
    pub fn text(text: String, raw: Value) -> Self {
        let content = vec![acp::ToolCallContent::from(acp::ContentBlock::from(text.clone()))];
        Self { for_model: text, content, raw }
    }
}

pub fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolError> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolError::Arguments { tool: tool.to_string(), reason: e.to_string() })
}

/// The tools offered to the model.
pub fn specs() -> Vec<ToolSpec> {
    let f = |name: &'static str, description: &'static str, parameters| ToolSpec {
        kind: "function",
        function: FunctionSpec { name: name.into(), description: description.into(), parameters },
    };
    vec![
        f(
            "read_file",
            "Read a text file. Lines are numbered. Use offset/limit (1-based lines) for large files.",
            json!({"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}},"required":["path"]}),
        ),
        f(
            "list_directory",
            "List a directory (respecting .gitignore). Set recursive to walk the tree.",
            json!({"type":"object","properties":{"path":{"type":"string"},"recursive":{"type":"boolean"}}}),
        ),
        f(
            "glob",
            "Find files whose path matches a glob such as src/**/*.rs (respecting .gitignore).",
            json!({"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}),
        ),
        f(
            "search",
            "Search file contents with a regular expression (respecting .gitignore). Returns path:line: text.",
            json!({"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"}},"required":["pattern"]}),
        ),
        f(
            "write_file",
            "Create or overwrite a file with the given content.",
            json!({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}),
        ),
        f(
            "edit_file",
            "Replace old_text with new_text in a file. old_text must occur exactly once; include surrounding lines to make it unique.",
            json!({"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}},"required":["path","old_text","new_text"]}),
        ),
        f(
            "run_command",
            "Run a shell command in the session's working directory. Output is captured; long runs time out.",
            json!({"type":"object","properties":{"command":{"type":"string"},"timeout_secs":{"type":"integer","minimum":1}},"required":["command"]}),
        ),
        f(
            "deliver_file",
            "Hand a file from the workspace to the user as an attachment (at most 10 MB).",
            json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        ),
        f(
            "ask_user",
            "Ask the user a question and wait for the answer. Offer choices when you can; use sparingly.",
            json!({"type":"object","properties":{"question":{"type":"string"},"choices":{"type":"array","items":{"type":"string"},"maxItems":10}},"required":["question"]}),
        ),
        f(
            "update_plan",
            "Show the user your plan as a checklist. Send the full list every time.",
            json!({"type":"object","properties":{"entries":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"priority":{"type":"string","enum":["high","medium","low"]},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["entries"]}),
        ),
    ]
}

/// How a call will be shown and what it needs, before it runs.
pub fn announce(name: &str, args: &Value, jail: &Jail) -> Result<Announce, ToolError> {
    match name {
        "read_file" => fs::announce_read(args, jail),
        "list_directory" => fs::announce_list(args, jail),
        "glob" => search::announce_glob(args, jail),
        "search" => search::announce_search(args, jail),
        "write_file" | "edit_file" => fs::announce_change(name, args, jail),
        "run_command" => shell::announce(args),
        "deliver_file" => deliver::announce(args, jail),
        "ask_user" => ask::announce(args),
        "update_plan" => Ok(Announce {
            kind: acp::ToolKind::Think,
            title: "Update plan".into(),
            locations: vec![],
            needs: Needs::Nothing,
        }),
        other => Err(ToolError::Unknown(other.to_string())),
    }
}

pub fn location(path: &std::path::Path, line: Option<u32>) -> acp::ToolCallLocation {
    acp::ToolCallLocation::new(path.to_path_buf()).line(line)
}

/// `path` shown relative to the cwd when inside it.
pub fn display(path: &std::path::Path, jail: &Jail) -> String {
    path.strip_prefix(jail.cwd()).map(|p| p.display().to_string()).unwrap_or_else(|_| path.display().to_string())
}
