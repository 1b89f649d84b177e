//! Running a shell command through the launcher: `<launcher> sandbox --policy <JSON> -- sh -c
//! CMD`, where the launcher is `corvid` itself or, for the Node addon, Node running its
//! launcher script (`config::Launcher`). The launcher applies the policy to itself and then
//! starts `sh`, so no code runs between `fork` and `exec` in Corvid (`unsafe` is denied, and
//! with it `pre_exec`), and the same launch can be handed to anything that starts processes
//! (an editor's terminal, which gets the policy in its environment instead: [`Launch::argv`]).

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Policy, argv};
use crate::config::{Config, Launcher, SandboxMode};
use crate::roots::Roots;

/// How one session's commands are started under its policy.
#[derive(Debug, Clone)]
pub struct Launch {
    launcher: Launcher,
    policy: Policy,
}

impl Launch {
    /// `None`: commands run unconfined, because the sandbox is off or no launcher is known
    /// (an embedder that named none; warned about once per process).
    pub fn for_session(config: &Config, roots: &Roots, session_id: &str, read_only_session: bool) -> Option<Self> {
        // Elsewhere than on Linux there is no sandbox to launch into (`super::unsupported`).
        if config.sandbox.mode == SandboxMode::Off || !cfg!(target_os = "linux") {
            return None;
        }
        let Some(launcher) = config.sandbox.launcher.clone() else {
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!("no sandbox launcher is configured: commands run unconfined");
            }
            return None;
        };
        Some(Launch { launcher, policy: Policy::for_session(config, roots, session_id, read_only_session) })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The same launch with network sockets allowed (an escalation the user granted).
    pub fn with_network(&self) -> Launch {
        let mut launch = self.clone();
        launch.policy.network = true;
        launch
    }

    /// The launcher's arguments for the shell running `command` (`sh -c`, or `CORVID_SHELL`):
    /// its own leading ones, then the sandbox's.
    pub fn args(&self, command: &str) -> Vec<OsString> {
        self.args_for(shell_line(command))
    }

    /// The launcher's arguments for any program and its arguments.
    fn args_for(&self, program: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
        let mut args: Vec<OsString> = self.launcher.args.iter().map(OsString::from).collect();
        args.extend(argv::build(&self.policy.to_json(), program));
        args
    }

    /// The command, ready to be configured further and spawned. Makes the session's temp dir
    /// first (0700, like its parents that do not exist yet).
    pub async fn command(&self, command: &str) -> std::io::Result<tokio::process::Command> {
        self.program(shell_line(command)).await
    }

    /// `program` (its path and arguments) under the launcher, as `command` does for a shell
    /// line (an MCP server that opted in).
    pub async fn program(
        &self,
        program: impl IntoIterator<Item = OsString>,
    ) -> std::io::Result<tokio::process::Command> {
        self.make_tmp().await?;
        let mut cmd = tokio::process::Command::new(&self.launcher.program);
        cmd.args(self.args_for(program));
        cmd.envs(self.launcher.env.iter().map(|(k, v)| (k, v)));
        Ok(cmd)
    }

    /// The program, arguments and environment for someone else to start (an editor's
    /// `terminal/create`), as strings; makes the session's temp dir first. The policy travels
    /// in the environment: the editor shows its user the command line, which then reads
    /// `<launcher> sandbox -- sh -c <their command>`.
    pub async fn argv(&self, command: &str) -> std::io::Result<Argv> {
        self.make_tmp().await?;
        let mut args: Vec<OsString> = self.launcher.args.iter().map(OsString::from).collect();
        args.extend(argv::build_bare(shell_line(command)));
        let mut env = self.launcher.env.clone();
        env.push((argv::POLICY_ENV.to_string(), self.policy.to_json()));
        Ok(Argv {
            program: self.launcher.program.to_string_lossy().into_owned(),
            args: args.into_iter().map(|a| a.to_string_lossy().into_owned()).collect(),
            env,
        })
    }

    async fn make_tmp(&self) -> std::io::Result<()> {
        let mut dir = tokio::fs::DirBuilder::new();
        #[cfg(unix)]
        dir.mode(0o700);
        dir.recursive(true).create(&self.policy.tmp).await
    }
}

/// A launch for someone else to start: [`Launch::argv`].
#[derive(Debug)]
pub struct Argv {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// The shell's program and arguments for `command` ([`crate::process::shell_argv`]).
fn shell_line(command: &str) -> Vec<OsString> {
    let (program, args) = crate::process::shell_argv(command);
    std::iter::once(program).chain(args).map(OsString::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argv_carries_the_policy_and_the_command_unchanged() {
        let mut config = Config::default();
        config.sandbox.launcher = Some(Launcher::program("/opt/corvid"));
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

    #[tokio::test]
    async fn a_launcher_script_goes_first_and_its_environment_is_set() {
        let base = std::env::temp_dir().join(format!("corvid-launch-{}", std::process::id()));
        let config = Config {
            data_dir: base.join("data"),
            sandbox: crate::config::SandboxConfig {
                launcher: Some(Launcher {
                    program: "/usr/bin/node".into(),
                    args: vec!["/opt/corvid-acp/sandbox-launcher.cjs".into()],
                    env: vec![("ELECTRON_RUN_AS_NODE".into(), "1".into())],
                }),
                ..Default::default()
            },
            ..Config::default()
        };
        let roots = Roots::new(base.join("w"), vec![]);
        let launch = Launch::for_session(&config, &roots, "s", false).expect("on");
        let Argv { program, args, env } = launch.argv("true").await.expect("argv");
        assert_eq!(program, "/usr/bin/node");
        assert_eq!(args, ["/opt/corvid-acp/sandbox-launcher.cjs", "sandbox", "--", "sh", "-c", "true"]);
        assert_eq!(env[0], ("ELECTRON_RUN_AS_NODE".to_string(), "1".to_string()));
        assert_eq!(env[1].0, "CORVID_SANDBOX_POLICY");
        assert_eq!(&Policy::from_json(&env[1].1).expect("policy"), launch.policy());
        assert!(launch.policy().tmp.is_dir(), "the temp dir is made first");
        let cmd = launch.command("true").await.expect("command");
        let set: Vec<_> = cmd.as_std().get_envs().collect();
        assert_eq!(set, [(std::ffi::OsStr::new("ELECTRON_RUN_AS_NODE"), Some(std::ffi::OsStr::new("1")))]);
        let _ = std::fs::remove_dir_all(&base);
    }
}
