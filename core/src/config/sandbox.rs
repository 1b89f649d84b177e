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
    /// What applies the policy and supervises the command (`crate::sandbox::supervise`). The
    /// `corvid` binary is its own launcher; an embedder (the Node addon) has to name one.
    /// `None`: commands run unconfined (a warning is logged once).
    pub launcher: Option<Launcher>,
    /// The MCP stdio servers (by the name the editor gives them) that run in the session's
    /// sandbox: `[mcp.servers.<name>] sandbox = true`.
    pub mcp_servers: Vec<String>,
}

/// How to start the sandbox launcher: `<program> <args…> sandbox --policy <JSON> -- sh -c CMD`
/// with `env` added to the environment it inherits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Launcher {
    /// The `corvid` binary, or the Node (or Electron) running the addon.
    pub program: PathBuf,
    /// Arguments before `sandbox`: the addon's launcher script; none for `corvid`.
    pub args: Vec<String>,
    /// Variables the launcher needs to start at all (Electron runs as Node only with
    /// `ELECTRON_RUN_AS_NODE=1`). The command inherits them unless the launcher removes them
    /// (the addon's script does).
    pub env: Vec<(String, String)>,
}

impl Launcher {
    /// A launcher that is one program with nothing before `sandbox` (the `corvid` binary).
    pub fn program(program: impl Into<PathBuf>) -> Self {
        Launcher { program: program.into(), args: Vec::new(), env: Vec::new() }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown sandbox mode `{0}`: expected `workspace-write`, `read-only` or `off`")]
pub struct UnknownSandboxMode(pub String);

/// The launcher when nothing names one: this very program, if it is `corvid`.
pub(super) fn default_launcher() -> Option<Launcher> {
    let exe = std::env::current_exe().ok()?;
    (exe.file_name()? == "corvid").then(|| Launcher::program(exe))
}
