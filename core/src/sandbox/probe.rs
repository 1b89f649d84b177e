//! What the kernel can enforce, probed once per process, and the report of what is in force
//! (`initialize`'s `_meta.corvid.sandbox`).

use serde_json::{Value, json};

use crate::config::{Config, SandboxMode};

/// The kernel's Landlock ABI version; `None` without Landlock (not built in, or disabled at
/// boot). Asked once per process.
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> Option<u8> {
    static ABI_SEEN: std::sync::OnceLock<Option<u8>> = std::sync::OnceLock::new();
    *ABI_SEEN.get_or_init(probe)
}

/// Landlock is Linux's: elsewhere there is none.
#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> Option<u8> {
    None
}

/// The crate's status query: a `RestrictSelf` with no flags and no `no_new_privs` makes no
/// restricting call at all, it only reports what the kernel offers. Kept as the kernel's own
/// number (which may be newer than what this build handles: see `apply::ABI_USED`).
#[cfg(target_os = "linux")]
fn probe() -> Option<u8> {
    use landlock::{LandlockStatus, RestrictSelf};
    let status = RestrictSelf::default().no_new_privs(false).apply().ok()?;
    match status.landlock {
        LandlockStatus::Available { effective_abi, kernel_abi } => {
            u8::try_from(kernel_abi.unwrap_or(effective_abi as i32)).ok().filter(|v| *v > 0)
        }
        _ => None,
    }
}

/// What confines a session's commands, as `initialize` reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Landlock { abi: u8, network: bool, mode: SandboxMode },
    None { reason: String },
}

impl Status {
    pub fn of(config: &Config) -> Status {
        let none = |reason: &str| Status::None { reason: reason.to_string() };
        if config.sandbox.mode == SandboxMode::Off {
            return none("the sandbox is off ([sandbox] mode = \"off\")");
        }
        if !cfg!(target_os = "linux") {
            let reason = format!("the command sandbox is Linux-only (Landlock), not on {}", std::env::consts::OS);
            let refused =
                if config.sandbox.required { "; commands are refused ([sandbox] required = true)" } else { "" };
            return Status::None { reason: reason + refused };
        }
        if config.sandbox.launcher.is_none() {
            return none("no sandbox launcher: this program is not the corvid binary and none is configured");
        }
        match landlock_abi() {
            Some(abi) => Status::Landlock { abi, network: config.sandbox.network, mode: config.sandbox.mode },
            None if config.sandbox.required => {
                none("the kernel does not support Landlock; commands are refused ([sandbox] required = true)")
            }
            None => none("the kernel does not support Landlock"),
        }
    }

    /// One sentence for people (the mode descriptions): what confines commands.
    pub fn summary(&self) -> String {
        match self {
            Status::Landlock { network, mode, .. } => {
                let writes = if *mode == SandboxMode::ReadOnly {
                    "write only to their temp dir"
                } else {
                    "write only in the workspace"
                };
                let network = if *network { "" } else { " and have no network" };
                format!("Commands run in the sandbox: they {writes}{network}")
            }
            Status::None { reason } => format!("Commands are not sandboxed: {reason}"),
        }
    }

    pub fn to_meta(&self) -> Value {
        match self {
            Status::Landlock { abi, network, mode } => json!({
                "kind": "landlock",
                "abi": abi,
                "network": if *network { "on" } else { "off" },
                "mode": mode.id(),
            }),
            Status::None { reason } => json!({ "kind": "none", "reason": reason }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_follows_the_config() {
        let mut config = Config::default();
        config.sandbox.mode = SandboxMode::Off;
        assert_eq!(Status::of(&config).to_meta()["kind"], "none");
        config.sandbox.mode = SandboxMode::ReadOnly;
        config.sandbox.launcher = None;
        assert!(Status::of(&config).to_meta()["reason"].as_str().is_some_and(|r| r.contains("launcher")));
        config.sandbox.launcher = Some(crate::config::Launcher::program("/usr/bin/corvid"));
        let meta = Status::of(&config).to_meta();
        match landlock_abi() {
            Some(abi) => {
                assert_eq!(meta, json!({"kind": "landlock", "abi": abi, "network": "off", "mode": "read-only"}))
            }
            None => assert_eq!(meta["kind"], "none"),
        }
    }
}
