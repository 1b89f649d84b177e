//! The session's permission modes and its remembered "always" answers: plain data that the
//! session holds and the permission dialogue (`permission.rs`) reads.

use crate::tools::Needs;

/// How much a session may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    ReadOnly,
    #[default]
    Ask,
    AutoEdit,
    Full,
}

impl Mode {
    /// The modes, in the order offered.
    pub const ALL: [Mode; 4] = [Mode::ReadOnly, Mode::Ask, Mode::AutoEdit, Mode::Full];

    /// The id clients send and the store keeps.
    pub fn id(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::Ask => "ask",
            Mode::AutoEdit => "auto-edit",
            Mode::Full => "full",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Read only",
            Mode::Ask => "Ask",
            Mode::AutoEdit => "Auto edit",
            Mode::Full => "Full access",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Mode::ReadOnly => "Reads and searches; no edits, no commands",
            Mode::Ask => "Asks before every edit and command",
            Mode::AutoEdit => "Edits files in the workspace without asking; asks before commands",
            Mode::Full => "Never asks; the workspace jail still holds",
        }
    }

    /// The mode with this id.
    pub fn from_id(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    /// What the mode alone decides about a call that needs permission: `Some(true)` runs it,
    /// `Some(false)` refuses it, `None` leaves it to the session's rules and the user.
    pub fn decides(self, needs: &Needs) -> Option<bool> {
        match (self, needs) {
            (Mode::ReadOnly, _) => Some(false),
            (Mode::Full, _) | (Mode::AutoEdit, Needs::Edit(_)) => Some(true),
            _ => None,
        }
    }
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
