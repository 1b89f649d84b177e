//! `[sandbox]`: how commands the model runs are confined (see `crate::sandbox`).

use std::path::PathBuf;

/// `[sandbox] mode`, or `CORVID_SANDBOX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Commands may write in the session's folders, their temp dir and `writable_roots`.
    #[default]
    WorkspaceWrite,
    /// Commands may write only to their temp dir (and device files).
    ReadOnly,
    /// Commands run unconfined, as they did before the sandbox existed.
    Off,
}

impl SandboxMode {
    pub fn id(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }

    pub fn from_id(id: &str) -> Option<SandboxMode> {
        [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly, SandboxMode::Off].into_iter().find(|m| m.id() == id)
    }
}

/// The resolved `[sandbox]` section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    /// Whether commands may open network sockets (other than Unix ones).
    pub network: bool,
    /// Folders commands may write to besides the session's own.
    pub writable_roots: Vec<PathBuf>,
    /// Refuse to run commands where the kernel cannot confine them (no Landlock).
    pub required: bool,
    /// The program that applies the policy and execs the command (`corvid sandbox`). The
    /// `corvid` binary is its own launcher; an embedder (the Node addon) has to name one.
    /// `None`: commands run unconfined (a warning is logged once).
    pub launcher: Option<PathBuf>,
    /// The MCP stdio servers (by the name the editor gives them) that run in the session's
    /// sandbox: `[mcp.servers.<name>] sandbox = true`.
    pub mcp_servers: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("unknown sandbox mode `{0}`: expected `workspace-write`, `read-only` or `off`")]
pub struct UnknownSandboxMode(pub String);

/// The launcher when nothing names one: this very program, if it is `corvid`.
pub(super) fn default_launcher() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    (exe.file_name()? == "corvid").then_some(exe)
}
