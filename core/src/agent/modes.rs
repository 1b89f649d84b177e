//! The session's permission modes and its remembered "always" answers: plain data that the
//! session holds and the permission dialogue (`permission.rs`) reads.

use crate::sandbox::Status;
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

    /// What the mode allows, and how commands are confined under it (`sandbox`: what is in
    /// force for the session's commands).
    pub fn description(self, sandbox: &Status) -> String {
        let asks = match self {
            Mode::ReadOnly => return "Reads and searches; no edits, no commands".to_string(),
            Mode::Ask => "Asks before every edit and command",
            Mode::AutoEdit => "Edits files in the workspace without asking; asks before commands",
            Mode::Full => "Never asks, except to lift the sandbox for a command; file tools stay in the workspace",
        };
        format!("{asks}. {}", sandbox.summary())
    }

    /// The mode with this id.
    pub fn from_id(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    /// What the mode alone decides about a call that needs permission: `Some(true)` runs it,
    /// `Some(false)` refuses it, `None` leaves it to the session's rules and the user.
    /// A command that asks to lift the sandbox, and a fetch that reaches a private address, are
    /// the user's to allow, in every mode (read-only refuses them).
    pub fn decides(self, needs: &Needs) -> Option<bool> {
        match (self, needs) {
            (Mode::ReadOnly, _) => Some(false),
            (_, Needs::Escalated { .. } | Needs::Fetch { private: true, .. }) => None,
            (Mode::Full, _) | (Mode::AutoEdit, Needs::Edit(_)) => Some(true),
            _ => None,
        }
    }
}

/// A remembered "always" answer, scoped to one tool and an exact path or a command prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The tool, and for an escalated command what was lifted (`rule_key`).
    pub tool: String,
    pub scope: String,
    pub allow: bool,
}

impl Rule {
    pub fn matches(&self, tool: &str, needs: &Needs) -> bool {
        self.tool == rule_key(tool, needs)
            && match needs {
                Needs::Edit(path) | Needs::Mcp(path) => *path == self.scope,
                Needs::Command(cmd) | Needs::Escalated { command: cmd, .. } => {
                    cmd == &self.scope || cmd.starts_with(&format!("{} ", self.scope))
                }
                Needs::Fetch { host, .. } => *host == self.scope,
                Needs::Nothing => false,
            }
    }
}

/// What a rule is keyed by: the tool, plus what an escalated command lifts (`run_command+network`),
/// so that "always allow `npm test`" never lets `npm test` reach the network, and the store's
/// rules keep their shape.
pub fn rule_key(tool: &str, needs: &Needs) -> String {
    match needs {
        Needs::Escalated { escalation, .. } => format!("{tool}+{}", escalation.id()),
        // A rule for a public host never lets the same name reach a private address.
        Needs::Fetch { private: true, .. } => format!("{tool}+private"),
        _ => tool.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Escalation;

    #[test]
    fn an_escalation_always_asks_and_has_rules_of_its_own() {
        let network = Needs::Escalated { command: "npm install".into(), escalation: Escalation::Network };
        for mode in [Mode::Ask, Mode::AutoEdit, Mode::Full] {
            assert_eq!(mode.decides(&network), None, "{mode:?}");
        }
        assert_eq!(Mode::ReadOnly.decides(&network), Some(false));

        let plain = Rule { tool: "run_command".into(), scope: "npm".into(), allow: true };
        assert!(plain.matches("run_command", &Needs::Command("npm install".into())));
        assert!(!plain.matches("run_command", &network), "a plain rule does not lift the sandbox");
        let lifted = Rule { tool: rule_key("run_command", &network), scope: "npm".into(), allow: true };
        assert_eq!(lifted.tool, "run_command+network");
        assert!(lifted.matches("run_command", &network));
        assert!(!lifted.matches(
            "run_command",
            &Needs::Escalated { command: "npm x".into(), escalation: Escalation::Unsandboxed }
        ));
        assert!(!lifted.matches("run_command", &Needs::Command("npm install".into())));
        assert!(
            !lifted
                .matches("run_command", &Needs::Escalated { command: "npmx".into(), escalation: Escalation::Network })
        );
    }

    #[test]
    fn a_fetch_asks_like_a_command_and_a_local_one_always_asks() {
        let fetch = |private| Needs::Fetch { url: "http://h/".into(), host: "h:80".into(), private };
        assert_eq!(Mode::Full.decides(&fetch(false)), Some(true));
        assert_eq!(Mode::AutoEdit.decides(&fetch(false)), None);
        assert_eq!(Mode::Ask.decides(&fetch(false)), None);
        for mode in [Mode::Ask, Mode::AutoEdit, Mode::Full] {
            assert_eq!(mode.decides(&fetch(true)), None, "{mode:?}");
        }
        assert_eq!(Mode::ReadOnly.decides(&fetch(true)), Some(false));
        let public = Rule { tool: rule_key("web_fetch", &fetch(false)), scope: "h:80".into(), allow: true };
        assert!(public.matches("web_fetch", &fetch(false)));
        assert!(!public.matches("web_fetch", &fetch(true)), "a public host's rule never reaches a local address");
        let local = Rule { tool: rule_key("web_fetch", &fetch(true)), scope: "h:80".into(), allow: true };
        assert_eq!(local.tool, "web_fetch+private");
        assert!(local.matches("web_fetch", &fetch(true)));
    }
}
