//! `corvid sandbox --policy <JSON> -- PROGRAM [ARGS…]` (hidden): the launcher Corvid runs
//! commands through. It applies the policy to itself (`corvid_core::sandbox::apply`: every
//! process it starts inherits the confinement), starts the program, and stays as its
//! supervisor, so that nothing the command started outlives it or whoever started the
//! launcher:
//! - it is the child subreaper of everything below it: a `setsid` or double-forked grandchild
//!   is re-parented to the launcher, not to init, so it can still be found and killed;
//! - when the program exits, whatever it left running is killed, and the launcher exits with
//!   the program's status (128 + the signal when a signal ended it, as shells report it);
//! - SIGTERM, SIGINT or SIGHUP (SIGTERM is also its parent-death signal: Corvid, the editor's
//!   terminal, whoever started it, died) kill the whole tree and end the launcher.
//!
//! It prints nothing on success, not even where Landlock is missing (the caller knows that
//! from its own probe): its stdout and stderr are the command's. A failure is one line on
//! stderr and exit status 126 (the policy could not be applied) or 127 (the program could not
//! be started), as a shell reports them.

use std::ffi::OsString;
use std::process::ExitCode;

use corvid_core::sandbox::{Policy, apply};
use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid, getppid};

/// Kill rounds before giving up on a tree that keeps forking (each round kills every child,
/// whose own children are then re-parented to us for the next).
const MAX_KILL_ROUNDS: usize = 1000;

pub fn run(policy: &str, command: &[OsString]) -> ExitCode {
    // Read first: if the parent dies before the parent-death signal is set, this is how we
    // notice (we were re-parented already).
    let parent = getppid();
    let Some((program, args)) = command.split_first() else {
        return fail(126, "no command given");
    };
    let policy = match Policy::from_json(policy) {
        Ok(p) => p,
        Err(e) => return fail(126, &format!("invalid policy: {e}")),
    };
    // Blocked before anything can send them, taken with `sigwait` below. The program does not
    // inherit the mask: std clears it in the child before exec.
    let mut watched = SigSet::empty();
    for signal in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        watched.add(signal);
    }
    if let Err(e) = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&watched), None) {
        return fail(126, &format!("cannot block signals: {e}"));
    }
    if let Err(e) = apply(&policy) {
        return fail(126, &e.to_string());
    }
    if getppid() != parent {
        // Whoever started us is gone already; there is no one to run the command for.
        return ExitCode::from(128 + Signal::SIGTERM as u8);
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        return fail(126, &format!("cannot become the command's subreaper: {e}"));
    }
    let child = match std::process::Command::new(program).args(args).env("TMPDIR", &policy.tmp).spawn() {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(e) => return fail(127, &format!("cannot run {}: {e}", program.to_string_lossy())),
    };
    let status = supervise(child, &watched);
    kill_tree();
    ExitCode::from(status)
}

/// Waits until the program exits (its status) or a watched signal says to stop (128 + it).
fn supervise(child: Pid, watched: &SigSet) -> u8 {
    loop {
        match watched.wait() {
            Ok(Signal::SIGCHLD) => {
                if let Some(status) = reap(child) {
                    return status;
                }
            }
            Ok(stop) => {
                // Ours to end: the program goes first, then what it started.
                let _ = kill(child, Signal::SIGKILL);
                return 128 + stop as u8;
            }
            // `sigwait` only fails on an invalid set; the program's end is still ours to await.
            Err(_) => {
                if let Ok(status) = waitpid(child, None) {
                    return exit_status(status).unwrap_or(1);
                }
                return 1;
            }
        }
    }
}

/// Reaps every child that has exited (orphans re-parented to us included); the program's
/// status once it is among them.
fn reap(child: Pid) -> Option<u8> {
    let mut ended = None;
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return ended,
            Ok(status) if status.pid() == Some(child) => ended = exit_status(status).or(ended),
            Ok(_) => {}
        }
    }
}

fn exit_status(status: WaitStatus) -> Option<u8> {
    match status {
        WaitStatus::Exited(_, code) => Some(u8::try_from(code & 0xff).unwrap_or(1)),
        WaitStatus::Signaled(_, signal, _) => Some(128u8.saturating_add(signal as u8)),
        _ => None,
    }
}

/// Kills every process below us: each round SIGKILLs our children and reaps them; their
/// children are then re-parented to us (we are their subreaper) for the next round.
fn kill_tree() {
    let me = getpid();
    for _ in 0..MAX_KILL_ROUNDS {
        let children = children_of(me);
        if children.is_empty() {
            return;
        }
        for pid in children {
            let _ = kill(pid, Signal::SIGKILL);
        }
        loop {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Err(Errno::ECHILD) => break,
                Err(_) => break,
                Ok(_) => {}
            }
        }
        // Let the kernel finish re-parenting before the next look.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The processes whose parent is `parent` (from /proc; zombies not yet reaped included).
fn children_of(parent: Pid) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split after the last `)`.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
        if ppid == Some(parent.as_raw()) {
            found.push(Pid::from_raw(pid));
        }
    }
    found
}

fn fail(code: u8, message: &str) -> ExitCode {
    crate::write_stderr(&format!("corvid sandbox: {message}\n"));
    ExitCode::from(code)
}
