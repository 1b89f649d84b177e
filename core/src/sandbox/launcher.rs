//! Running a shell command through the launcher: `<corvid> sandbox --policy <JSON> -- sh -c
//! CMD`. The launcher applies the policy and then starts `sh`, so no code runs
//! between `fork` and `exec` in Corvid (`unsafe` is denied, and with it `pre_exec`), and the
//! same argv can be handed to anything that starts processes (an editor's terminal).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Policy, argv};
use crate::config::{Config, SandboxMode};
use crate::roots::Roots;

/// How one session's commands are started under its policy.
#[derive(Debug, Clone)]
pub struct Launch {
    exe: PathBuf,
    policy: Policy,
}

impl Launch {
    /// `None`: commands run unconfined, because the sandbox is off or no launcher is known
    /// (an embedder that named none; warned about once per process).
    pub fn for_session(config: &Config, roots: &Roots, session_id: &str, read_only_session: bool) -> Option<Self> {
        if config.sandbox.mode == SandboxMode::Off {
            return None;
        }
        let Some(exe) = config.sandbox.launcher.clone() else {
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!("no sandbox launcher is configured: commands run unconfined");
            }
            return None;
        };
        Some(Launch { exe, policy: Policy::for_session(config, roots, session_id, read_only_session) })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The launcher's arguments for `sh -c command`.
    pub fn args(&self, command: &str) -> Vec<OsString> {
        argv::build(&self.policy.to_json(), &["sh", "-c", command])
    }

    /// The command, ready to be configured further and spawned. Makes the session's temp dir
    /// first (0700, like its parents that do not exist yet).
    pub async fn command(&self, command: &str) -> std::io::Result<tokio::process::Command> {
        self.make_tmp().await?;
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(self.args(command));
        Ok(cmd)
    }

    /// The program and arguments for someone else to start (an editor's `terminal/create`),
    /// as strings; makes the session's temp dir first.
    pub async fn argv(&self, command: &str) -> std::io::Result<(String, Vec<String>)> {
        self.make_tmp().await?;
        let args = self.args(command).into_iter().map(|a| a.to_string_lossy().into_owned()).collect();
        Ok((self.exe.to_string_lossy().into_owned(), args))
    }

    async fn make_tmp(&self) -> std::io::Result<()> {
        tokio::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.policy.tmp).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argv_carries_the_policy_and_the_command_unchanged() {
        let mut config = Config::default();
        config.sandbox.launcher = Some("/opt/corvid".into());
        let roots = Roots::new("/nonexistent/w".into(), vec![]);
        let launch = Launch::for_session(&config, &roots, "s", false).expect("on");
        let args = launch.args("echo 'a b' && rm -rf -- x");
        assert_eq!(args[..2], [OsString::from("sandbox"), OsString::from("--policy")]);
        let policy = Policy::from_json(args[2].to_str().expect("utf-8")).expect("policy");
        assert_eq!(&policy, launch.policy());
        assert_eq!(args[3..], ["--", "sh", "-c", "echo 'a b' && rm -rf -- x"].map(OsString::from));

        config.sandbox.mode = SandboxMode::Off;
        assert!(Launch::for_session(&config, &roots, "s", false).is_none());
        config.sandbox.mode = SandboxMode::WorkspaceWrite;
        config.sandbox.launcher = None;
        assert!(Launch::for_session(&config, &roots, "s", false).is_none());
    }
}
