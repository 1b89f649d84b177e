//! The process tree below the launcher: reaping what has exited, and killing what is left.
//! The launcher is the child subreaper of everything below it, so a `setsid` or
//! double-forked grandchild is re-parented to it, not to init, and is found here too.

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid};

/// Kill rounds before giving up on a tree that keeps forking (each round kills every child,
/// whose own children are then re-parented to us for the next).
const MAX_KILL_ROUNDS: usize = 1000;

/// Reaps every child that has exited (orphans re-parented to us included); the program's
/// status once it is among them. `waitpid(-1)`: nothing else in this process waits for
/// children (the launcher never uses `tokio::process`), so no one else's child is taken.
pub(super) fn reap(program: Pid) -> Option<u8> {
    let mut ended = None;
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return ended,
            Ok(status) if status.pid() == Some(program) => ended = exit_status(status).or(ended),
            Ok(_) => {}
        }
    }
}

/// Waits for the program alone (when its end can no longer be signalled to us).
pub(super) fn wait_for(program: Pid) -> u8 {
    loop {
        match waitpid(program, None) {
            Ok(status) => {
                if let Some(code) = exit_status(status) {
                    return code;
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => return 1,
        }
    }
}

/// The status a shell would report: the exit code, or 128 + the signal that ended it.
pub(super) fn exit_status(status: WaitStatus) -> Option<u8> {
    match status {
        WaitStatus::Exited(_, code) => Some(u8::try_from(code & 0xff).unwrap_or(1)),
        WaitStatus::Signaled(_, signal, _) => Some(128u8.saturating_add(signal as u8)),
        _ => None,
    }
}

/// Kills every process below us: each round SIGKILLs our children and reaps them; their
/// children are then re-parented to us (we are their subreaper) for the next round.
pub(super) fn kill_all() {
    let me = getpid();
    for _ in 0..MAX_KILL_ROUNDS {
        let children = children_of(me);
        if children.is_empty() {
            return;
        }
        for pid in children {
            let _ = kill(pid, Signal::SIGKILL);
        }
        while let Ok(status) = waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
        // Let the kernel finish re-parenting before the next look.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The processes whose parent is `parent` (from /proc; zombies not yet reaped included). In a
/// multi-threaded launcher (the Node addon's) a child's parent is still reported as the
/// process, whichever thread started it.
fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        if parent_in_stat(&stat) == Some(parent.as_raw()) {
            found.push(Pid::from_raw(pid));
        }
    }
    found
}

/// The ppid field of a `/proc/PID/stat` line, `pid (comm) state ppid …`: comm may hold
/// spaces and parentheses, so the fields are counted after the last `)`.
fn parent_in_stat(stat: &str) -> Option<i32> {
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_a_shell_reports_them() {
        let pid = Pid::from_raw(42);
        assert_eq!(exit_status(WaitStatus::Exited(pid, 3)), Some(3));
        assert_eq!(exit_status(WaitStatus::Signaled(pid, Signal::SIGKILL, false)), Some(137));
        assert_eq!(exit_status(WaitStatus::Stopped(pid, Signal::SIGSTOP)), None);
    }

    #[test]
    fn the_parent_is_read_past_an_odd_command_name() {
        assert_eq!(parent_in_stat("123 (a) b (c) S 77 123 123 0"), Some(77));
        assert_eq!(parent_in_stat("123 (sh) S 1 1 1"), Some(1));
        assert_eq!(parent_in_stat("garbage"), None);
    }
}
