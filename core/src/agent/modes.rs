//! The session's permission modes and its remembered "always" answers: plain data that the
//! session holds and the permission dialogue (`permission.rs`) reads.

use crate::tools::Needs;

/// The session modes, in the order offered: (id, name, description).
pub const MODES: &[(&str, &str, &str)] = &[
    ("read-only", "Read only", "Reads and searches; no edits, no commands"),
    ("ask", "Ask", "Asks before every edit and command"),
    ("auto-edit", "Auto edit", "Edits files in the workspace without asking; asks before commands"),
    ("full", "Full access", "Never asks; the workspace jail still holds"),
];
pub const DEFAULT_MODE: &str = "ask";

/// Whether `mode` is one of [`MODES`].
pub fn is_mode(mode: &str) -> bool {
    MODES.iter().any(|(id, ..)| *id == mode)
}

/// A remembered "always" answer, scoped to one tool and an exact path or a command prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub tool: String,
    pub scope: String,
    pub allow: bool,
}

impl Rule {
    pub fn matches(&self, tool: &str, needs: &Needs) -> bool {
        self.tool == tool
            && match needs {
                Needs::Edit(path) | Needs::Mcp(path) => *path == self.scope,
                Needs::Command(cmd) => cmd == &self.scope || cmd.starts_with(&format!("{} ", self.scope)),
                Needs::Nothing => false,
            }
    }
}
