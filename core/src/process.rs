//! Starting the processes Corvid runs for the model (commands, MCP servers, `corvid chat`'s
//! agent) and ending them with everything they started, the same way on every system:
//! - the shell: `CORVID_SHELL` (e.g. `bash -c`, `pwsh -NoProfile -Command`) when set, else
//!   `sh -c` on Unix and on Windows the `COMSPEC` shell (`cmd.exe` unless the user set
//!   another) with `/C`;
//! - the group: on Unix a process group of its own (`killpg` reaches the children); on
//!   Windows a new process group, and `taskkill /T /F` ends the tree by parentage.
//!
//! Windows has no signals: `terminate` there is `kill`.

use tokio::process::Command;

/// `command` as a line for the platform's shell.
pub fn shell(command: &str) -> Command {
    let (program, args) = shell_argv(command);
    let mut cmd = Command::new(program);
    cmd.args(args);
    cmd
}

/// The shell's program and arguments for `command` (an editor's `terminal/create` gets them
/// as strings): `CORVID_SHELL` when set, else `sh -c` on Unix and on Windows the `COMSPEC`
/// shell (`cmd.exe`) with `/C`.
pub fn shell_argv(command: &str) -> (String, Vec<String>) {
    shell_argv_with(std::env::var("CORVID_SHELL").ok().as_deref(), command)
}

/// The same line as [`shell_argv`], with the shell configured as `configured`: a program and
/// its leading arguments split at whitespace (`bash -c`, `pwsh -NoProfile -Command`), the
/// command line appended as one argument. Blank counts as unset.
pub fn shell_argv_with(configured: Option<&str>, command: &str) -> (String, Vec<String>) {
    let mut parts = configured.unwrap_or_default().split_whitespace();
    if let Some(program) = parts.next() {
        let args = parts.map(str::to_string).chain([command.to_string()]).collect();
        return (program.to_string(), args);
    }
    #[cfg(windows)]
    {
        let shell = std::env::var("COMSPEC").unwrap_or_else(|_| "cmd.exe".to_string());
        (shell, vec!["/C".to_string(), command.to_string()])
    }
    #[cfg(not(windows))]
    {
        ("sh".to_string(), vec!["-c".to_string(), command.to_string()])
    }
}

/// Makes the process the leader of a group of its own, so that [`Group`] reaches what it
/// starts too.
pub fn own_group(cmd: &mut Command) -> &mut Command {
    #[cfg(unix)]
    cmd.process_group(0);
    #[cfg(windows)]
    {
        /// `CREATE_NEW_PROCESS_GROUP`: Ctrl-C in the editor's console does not reach it.
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        cmd.creation_flags(CREATE_NEW_PROCESS_GROUP);
    }
    cmd
}

/// A started process and what it started (see [`own_group`]).
#[derive(Debug, Clone, Copy)]
pub struct Group {
    pid: u32,
}

impl Group {
    /// The group of a child just spawned with [`own_group`]; `None` once it has been reaped.
    pub fn of(child: &tokio::process::Child) -> Option<Group> {
        child.id().map(Group::leader)
    }

    /// The group led by `pid`, a process spawned with [`own_group`].
    pub fn leader(pid: u32) -> Group {
        Group { pid }
    }

    /// Asks the group to end (SIGTERM), so a supervisor in it can end its own tree first.
    pub fn terminate(self) {
        #[cfg(unix)]
        self.signal(nix::sys::signal::Signal::SIGTERM);
        #[cfg(not(unix))]
        self.kill();
    }

    /// Ends the group at once (SIGKILL; on Windows the process tree).
    pub fn kill(self) {
        #[cfg(unix)]
        self.signal(nix::sys::signal::Signal::SIGKILL);
        #[cfg(windows)]
        {
            // Synchronous callers (drop paths, shutdown): started, not waited for.
            let _ = std::process::Command::new("taskkill")
                .args(["/T", "/F", "/PID"])
                .arg(self.pid.to_string())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
    }

    #[cfg(unix)]
    fn signal(self, signal: nix::sys::signal::Signal) {
        if let Ok(pgid) = i32::try_from(self.pid) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), signal);
        }
    }
}

/// How a process ended, in words a person and the ACP `exitStatus` use: the signal's name
/// (`SIGKILL`) when one ended it; `None` otherwise (and always on Windows).
pub fn signal_name(status: &std::process::ExitStatus) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal().and_then(|n| nix::sys::signal::Signal::try_from(n).ok()).map(|s| s.as_str().to_string())
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_shell_gets_the_line_as_its_last_argument() {
        let line = "echo 'a b' && true";
        assert_eq!(
            shell_argv_with(Some("pwsh  -NoProfile -Command "), line),
            ("pwsh".to_string(), vec!["-NoProfile".to_string(), "-Command".to_string(), line.to_string()])
        );
        assert_eq!(
            shell_argv_with(Some("bash -c"), line),
            ("bash".to_string(), vec!["-c".to_string(), line.to_string()])
        );
        // Blank is unset: the platform's default.
        assert_eq!(shell_argv_with(Some("  "), line), shell_argv_with(None, line));
        #[cfg(unix)]
        assert_eq!(shell_argv_with(None, line), ("sh".to_string(), vec!["-c".to_string(), line.to_string()]));
    }

    #[tokio::test]
    async fn kill_ends_the_group_and_what_it_started() {
        let dir = std::env::temp_dir().join(format!("corvid-group-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let marker = dir.join("late");
        // A grandchild that would write the marker after a second, unless killed with the group.
        let line = format!("(sleep 1; touch '{}') & sleep 30", marker.display());
        let mut cmd = shell(&line);
        own_group(&mut cmd).kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn");
        let group = Group::of(&child).expect("running");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        group.kill();
        let status = child.wait().await.expect("wait");
        assert_eq!(signal_name(&status).as_deref(), Some("SIGKILL"));
        tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
        assert!(!marker.exists(), "the grandchild outlived the group");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
