//! How one session's commands are confined, decided once per tool call from the config, the
//! kernel and the session's mode, and what one call may ask to have lifted (an escalation,
//! granted only by the user).

use serde::Deserialize;

use super::{Launch, Status, landlock_abi};
use crate::config::{Config, SandboxMode};
use crate::roots::Roots;

/// What a command may ask to have lifted for one call, with a reason. Such a call always asks
/// the user (in every mode but read-only, which runs no commands), naming what is lifted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Escalation {
    /// The sandbox holds, but network sockets are allowed.
    Network,
    /// No sandbox at all: the command may write anywhere the user can and read their secrets.
    Unsandboxed,
}

impl Escalation {
    pub fn id(self) -> &'static str {
        match self {
            Escalation::Network => "network",
            Escalation::Unsandboxed => "unsandboxed",
        }
    }

    /// What is lifted, as the question and the card name it ("Run `x` …").
    pub fn phrase(self) -> &'static str {
        match self {
            Escalation::Network => "with network access",
            Escalation::Unsandboxed => "outside the sandbox",
        }
    }
}

/// How a session's commands run.
#[derive(Debug, Clone)]
pub enum Confinement {
    /// Through the launcher, under its policy.
    Sandboxed(Launch),
    /// Unconfined: the sandbox is off (`off`), or cannot be had here (`reason`) and is not
    /// required.
    Unconfined { off: bool, reason: String },
    /// Not at all: `[sandbox] required = true` and the sandbox cannot be had (the reason).
    Refused(String),
}

impl Confinement {
    pub fn for_session(config: &Config, roots: &Roots, session_id: &str, read_only_session: bool) -> Self {
        let off = config.sandbox.mode == SandboxMode::Off;
        let launch = Launch::for_session(config, roots, session_id, read_only_session);
        if let Some(launch) = launch.filter(|_| landlock_abi().is_some() || !config.sandbox.required) {
            // Without Landlock (and not required) the launcher still filters the network and
            // supervises the command, so it is kept.
            return Confinement::Sandboxed(launch);
        }
        let reason = match Status::of(config) {
            Status::None { reason } => reason,
            Status::Landlock { .. } => "no sandbox launcher is configured".to_string(),
        };
        if !off && config.sandbox.required {
            return Confinement::Refused(reason);
        }
        Confinement::Unconfined { off, reason }
    }

    /// The launcher's plan, when commands are sandboxed.
    pub fn launch(&self) -> Option<&Launch> {
        match self {
            Confinement::Sandboxed(launch) => Some(launch),
            _ => None,
        }
    }

    /// Whether granting `escalation` would lift anything: nothing is, where commands are not
    /// sandboxed, or for network where the policy allows it already.
    pub fn lifts(&self, escalation: Escalation) -> bool {
        match (self, escalation) {
            (Confinement::Sandboxed(launch), Escalation::Network) => !launch.policy().network,
            (Confinement::Sandboxed(_), Escalation::Unsandboxed) => true,
            _ => false,
        }
    }

    /// How one call runs once the user granted `escalation` (`None`: no escalation asked).
    pub fn escalated(&self, escalation: Option<Escalation>) -> Confinement {
        match (self, escalation) {
            (Confinement::Sandboxed(launch), Some(Escalation::Network)) => {
                Confinement::Sandboxed(launch.with_network())
            }
            (Confinement::Sandboxed(_), Some(Escalation::Unsandboxed)) => Confinement::Unconfined {
                off: false,
                reason: "the user allowed this command outside the sandbox".into(),
            },
            (other, _) => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(launcher: Option<&str>) -> Config {
        let mut config = Config::default();
        config.sandbox.launcher = launcher.map(crate::config::Launcher::program);
        config
    }

    #[test]
    fn refused_only_when_required_and_unavailable() {
        let roots = Roots::new("/nonexistent/w".into(), vec![]);
        let mut c = config(None);
        assert!(matches!(Confinement::for_session(&c, &roots, "s", false), Confinement::Unconfined { off: false, .. }));
        c.sandbox.required = true;
        let refused = Confinement::for_session(&c, &roots, "s", false);
        assert!(matches!(&refused, Confinement::Refused(r) if r.contains("launcher")), "{refused:?}");
        c.sandbox.mode = SandboxMode::Off;
        assert!(matches!(Confinement::for_session(&c, &roots, "s", false), Confinement::Unconfined { off: true, .. }));
        let on = Confinement::for_session(&config(Some("/opt/corvid")), &roots, "s", false);
        assert!(on.launch().is_some());
    }

    #[test]
    fn an_escalation_lifts_only_what_is_in_force() {
        let roots = Roots::new("/nonexistent/w".into(), vec![]);
        let mut c = config(Some("/opt/corvid"));
        let on = Confinement::for_session(&c, &roots, "s", false);
        assert!(on.lifts(Escalation::Network) && on.lifts(Escalation::Unsandboxed));
        let networked = on.escalated(Some(Escalation::Network));
        assert!(networked.launch().is_some_and(|l| l.policy().network));
        assert!(!networked.lifts(Escalation::Network), "network is allowed already");
        assert!(on.escalated(Some(Escalation::Unsandboxed)).launch().is_none());
        assert!(!on.escalated(None).launch().is_some_and(|l| l.policy().network));

        c.sandbox.mode = SandboxMode::Off;
        let off = Confinement::for_session(&c, &roots, "s", false);
        assert!(!off.lifts(Escalation::Network) && !off.lifts(Escalation::Unsandboxed));
    }
}
