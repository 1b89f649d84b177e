//! What the kernel can enforce, probed once per process, and the report of what is in force
//! (`initialize`'s `_meta.corvid.sandbox`).

use serde_json::{Value, json};

use crate::config::{Config, Launcher, SandboxMode};

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

/// Whether `launcher` starts commands in a private network namespace (`netns`: the launcher
/// could not enter one where user namespaces are off, or in a threaded host run by a normal
/// user, the Node addon's). Asked of the launcher itself, once per launcher and process: it
/// runs `readlink /proc/self/ns/net` under a policy without network, and a namespace other
/// than ours is the answer. Costs one launch (a few milliseconds for `corvid`).
#[cfg(target_os = "linux")]
pub fn private_loopback(launcher: &Launcher) -> bool {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Key = (std::path::PathBuf, Vec<String>);
    static SEEN: Mutex<Option<HashMap<Key, bool>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let key = (launcher.program.clone(), launcher.args.clone());
    *seen.get_or_insert_with(HashMap::new).entry(key).or_insert_with(|| ask(launcher))
}

/// Starts `private_loopback`'s question on a thread of its own, so that the launch it costs
/// is (usually) over before `initialize` asks for the report; whoever asks first waits for
/// the answer.
pub fn prewarm(config: &Config) {
    let launcher = match &config.sandbox.launcher {
        Some(l) if config.sandbox.mode != SandboxMode::Off && !config.sandbox.network && cfg!(target_os = "linux") => {
            l.clone()
        }
        _ => return,
    };
    let _ = std::thread::Builder::new().name("corvid-netns-probe".into()).spawn(move || private_loopback(&launcher));
}

#[cfg(not(target_os = "linux"))]
pub fn private_loopback(_launcher: &Launcher) -> bool {
    false
}

#[cfg(target_os = "linux")]
fn ask(launcher: &Launcher) -> bool {
    use std::ffi::OsString;
    use std::process::{Command, Stdio};
    let Ok(ours) = std::fs::read_link("/proc/self/ns/net") else { return false };
    let policy = super::Policy {
        roots: Vec::new(),
        writable_roots: Vec::new(),
        tmp: std::env::temp_dir(),
        read_only: true,
        network: false,
        forbidden: Vec::new(),
        read_only_paths: Vec::new(),
        required: false,
    };
    let program = ["readlink", "/proc/self/ns/net"].map(OsString::from);
    let output = Command::new(&launcher.program)
        .args(&launcher.args)
        .args(super::argv::build(&policy.to_json(), program))
        .envs(launcher.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let theirs = String::from_utf8_lossy(&out.stdout);
            theirs.starts_with("net:") && theirs.trim() != ours.to_string_lossy()
        }
        _ => false,
    }
}

/// What confines a session's commands, as `initialize` reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// `loopback`: commands without network have a private loopback (`private_loopback`).
    Landlock {
        abi: u8,
        network: bool,
        loopback: bool,
        mode: SandboxMode,
    },
    None {
        reason: String,
    },
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
        let Some(launcher) = &config.sandbox.launcher else {
            return none("no sandbox launcher: this program is not the corvid binary and none is configured");
        };
        match landlock_abi() {
            Some(abi) => Status::Landlock {
                abi,
                network: config.sandbox.network,
                // An escalated command has the host's network, never a namespace.
                loopback: !config.sandbox.network && private_loopback(launcher),
                mode: config.sandbox.mode,
            },
            None if config.sandbox.required => {
                none("the kernel does not support Landlock; commands are refused ([sandbox] required = true)")
            }
            None => none("the kernel does not support Landlock"),
        }
    }

    /// One sentence for people (the mode descriptions): what confines commands.
    pub fn summary(&self) -> String {
        match self {
            Status::Landlock { network, loopback, mode, .. } => {
                let writes = if *mode == SandboxMode::ReadOnly {
                    "write only to their temp dir"
                } else {
                    "write only in the workspace"
                };
                let network = match (network, loopback) {
                    (true, _) => "",
                    (false, true) => " and have no network but a private loopback",
                    (false, false) => " and have no network",
                };
                format!("Commands run in the sandbox: they {writes}{network}")
            }
            Status::None { reason } => format!("Commands are not sandboxed: {reason}"),
        }
    }

    pub fn to_meta(&self) -> Value {
        match self {
            Status::Landlock { abi, network, loopback, mode } => json!({
                "kind": "landlock",
                "abi": abi,
                "network": if *network { "on" } else { "off" },
                // "private": commands without network may serve and reach 127.0.0.1 among
                // themselves (a network namespace of their own); "none": no IP socket at all.
                // "host": the network is on.
                "loopback": match (network, loopback) {
                    (true, _) => "host",
                    (false, true) => "private",
                    (false, false) => "none",
                },
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
                // No such launcher, so no namespace it could have made.
                let expected =
                    json!({"kind": "landlock", "abi": abi, "network": "off", "loopback": "none", "mode": "read-only"});
                assert_eq!(meta, expected);
                config.sandbox.network = true;
                assert_eq!(Status::of(&config).to_meta()["loopback"], "host");
            }
            None => assert_eq!(meta["kind"], "none"),
        }
    }
}
