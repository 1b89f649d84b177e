//! The launcher itself: what runs as `corvid sandbox --policy <JSON> -- PROGRAM [ARGS…]` (the
//! binary's hidden subcommand) and as `node sandbox-launcher.cjs sandbox …` (the Node addon's
//! `sandboxMain`). It starts the program confined to the policy (`apply`: every process the
//! program starts inherits the confinement), and stays as its supervisor, so that nothing the
//! command started outlives it or whoever started the launcher:
//! - it is the child subreaper of everything below it (`tree`): a `setsid` or double-forked
//!   grandchild is re-parented to the launcher, not to init, so it can still be found and
//!   killed;
//! - when the program exits, whatever it left running is killed, and the launcher exits with
//!   the program's status (128 + the signal when a signal ended it, as shells report it);
//! - SIGTERM, SIGINT or SIGHUP (SIGTERM is also its parent-death signal: Corvid, the editor's
//!   terminal, whoever started it, died) kill the whole tree and end the launcher.
//!
//! **Threads.** The host may have threads of its own that do not block signals (Node's V8 and
//! libuv threads), so a signal sent to the process can land on any of them: blocking signals
//! on one thread and `sigwait`ing for them there would miss those. Handlers see every
//! delivery, whichever thread takes it: tokio's (signal-hook-registry underneath), on a
//! current-thread runtime built here that runs on the caller's thread. A host whose own
//! handlers end the process on these signals (Node's, for SIGTERM and SIGINT) must replace
//! them before calling in: signal-hook calls the handler it found before its own.
//!
//! Landlock, seccomp and `no_new_privs` bind a thread, not a process, and a child inherits
//! them from the thread that forks it. So the policy is applied, and the program spawned,
//! on a thread of their own that ends right after the spawn (with `std::process`:
//! `tokio::process` would reap behind our `waitpid(-1)`). None of the launcher's remaining
//! threads is then inside the sandbox, and Landlock lets a sandboxed process trace or write
//! the memory of none but its own domain's: were the supervising thread confined, a command
//! could write the memory it shares with the host's unconfined threads and run there. The
//! launcher is also made non-dumpable, so that, short of `CAP_SYS_PTRACE`, nothing can
//! attach to it even in the moment before the spawning thread ends.
//!
//! It prints nothing on success, not even where Landlock is missing (the caller knows that
//! from its own probe): its stdout and stderr are the command's. A failure is one line on
//! stderr and exit status 126 (the policy could not be applied) or 127 (the program could not
//! be started), as a shell reports them.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::process::Stdio;

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, getppid};
use tokio::signal::unix::{SignalKind, signal};

use super::argv::{self, ArgvError};
use super::{Policy, SandboxError, apply, netns, tree};

/// Why the launcher did not run the command.
#[derive(Debug, thiserror::Error)]
enum LaunchError {
    #[error(transparent)]
    Argv(#[from] ArgvError),
    #[error("the policy is not UTF-8")]
    PolicyEncoding,
    #[error("no policy: pass --policy <JSON> or set {}", argv::POLICY_ENV)]
    NoPolicy,
    #[error("invalid policy: {0}")]
    Policy(serde_json::Error),
    #[error("cannot watch for signals: {0}")]
    Signals(std::io::Error),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Netns(#[from] netns::NetnsError),
    #[error("cannot become the command's subreaper: {0}")]
    Subreaper(nix::Error),
    #[error("cannot start the thread that starts the command: {0}")]
    Thread(std::io::Error),
    #[error("the thread that starts the command panicked")]
    ThreadPanicked,
    #[error("cannot run {program}: {source}")]
    Spawn { program: String, source: std::io::Error },
}

impl LaunchError {
    /// As a shell reports them: 127 for a program that cannot be started, 126 otherwise.
    fn status(&self) -> u8 {
        match self {
            LaunchError::Spawn { .. } => 127,
            _ => 126,
        }
    }
}

/// The launcher's whole run from its raw arguments (`sandbox [--policy <JSON>] -- PROGRAM
/// [ARGS…]`, as `Launch` writes them); the exit status. For embedders that have no argument
/// parser of their own (the Node addon).
pub fn launcher_main(args: &[OsString]) -> u8 {
    finish(argv::parse(args).map_err(LaunchError::from).and_then(|p| run(p.policy, p.command)))
}

/// Runs `command` confined to the policy (JSON; `None`: the one in `CORVID_SANDBOX_POLICY`)
/// and supervises it; the exit status. What `corvid sandbox` calls once clap has read its
/// arguments. Blocks until the command is done.
pub fn supervise(policy: Option<&str>, command: &[OsString]) -> u8 {
    finish(run(policy.map(OsStr::new), command))
}

fn finish(result: Result<u8, LaunchError>) -> u8 {
    match result {
        Ok(status) => status,
        Err(e) => {
            // The launcher's stderr is the command's: one line, then the shell's status.
            let _ = writeln!(std::io::stderr().lock(), "corvid sandbox: {e}");
            e.status()
        }
    }
}

fn run(policy: Option<&OsStr>, command: &[OsString]) -> Result<u8, LaunchError> {
    // Read first: if the parent dies before the parent-death signal is set, this is how we
    // notice (we were re-parented already).
    let parent = getppid();
    let Some((program, args)) = command.split_first() else {
        return Err(ArgvError::NoCommand.into());
    };
    let from_env = std::env::var_os(argv::POLICY_ENV);
    let policy = policy.or(from_env.as_deref()).ok_or(LaunchError::NoPolicy)?;
    let policy = Policy::from_json(policy.to_str().ok_or(LaunchError::PolicyEncoding)?).map_err(LaunchError::Policy)?;
    // First, while this process has no other thread and before the parent-death signal and
    // non-dumpable are set (`netns` says why). Where it cannot be had, the socket filter
    // alone keeps the network off, as `probe` reports.
    let private_loopback = !policy.network
        && match netns::enter() {
            Ok(()) => true,
            Err(e @ netns::NetnsError::Map { .. }) => return Err(e.into()),
            Err(_) => false,
        };
    // Watching before anything can send them: before the parent-death signal is set, and
    // before there is a child to report on.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().map_err(LaunchError::Signals)?;
    let mut signals = runtime.block_on(async { Signals::watch() }).map_err(LaunchError::Signals)?;
    // Set on this thread, which lives as long as the launcher: the kernel sends it for the
    // threads that asked for it, and only while they live. "Parent" is the *thread* that
    // forked the launcher, not its process: Corvid spawns from its runtime's worker threads,
    // which live as long as the runtime (never from short-lived blocking-pool threads, which
    // would kill their commands when they retire).
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(SandboxError::Prctl)?;
    if getppid() != parent {
        // Whoever started us is gone already; there is no one to run the command for.
        return Ok(128 + Signal::SIGTERM as u8);
    }
    nix::sys::prctl::set_child_subreaper(true).map_err(LaunchError::Subreaper)?;
    nix::sys::prctl::set_dumpable(false).map_err(SandboxError::Prctl)?;
    let program = program.clone();
    let args = args.to_vec();
    let spawner = std::thread::Builder::new()
        .name("corvid-sandbox".into())
        .spawn(move || start(&policy, private_loopback, &program, &args))
        .map_err(LaunchError::Thread)?;
    let child = spawner.join().map_err(|_| LaunchError::ThreadPanicked)??;
    let status = runtime.block_on(wait(child, &mut signals));
    tree::kill_all();
    Ok(status)
}

/// On the thread that ends after it: confines the thread, then starts the program from it.
fn start(policy: &Policy, private_loopback: bool, program: &OsStr, args: &[OsString]) -> Result<Pid, LaunchError> {
    apply(policy, private_loopback)?;
    let child = std::process::Command::new(program)
        .args(args)
        .env("TMPDIR", &policy.tmp)
        .env_remove(argv::POLICY_ENV)
        .stdin(inherited(std::io::stdin().as_fd()))
        .stdout(inherited(std::io::stdout().as_fd()))
        .stderr(inherited(std::io::stderr().as_fd()))
        .spawn()
        .map_err(|source| LaunchError::Spawn { program: program.to_string_lossy().into_owned(), source })?;
    // The handle is dropped without waiting: the supervisor reaps with `waitpid`.
    Ok(Pid::from_raw(child.id() as i32))
}

/// The launcher's own stdin, stdout or stderr for the command: a copy, which the spawn puts
/// in place, because the host may have made its stdio close-on-exec (Node does so at start-up,
/// and the command would start with none). One that cannot be copied (closed) stays as it is.
fn inherited(fd: BorrowedFd<'_>) -> Stdio {
    fd.try_clone_to_owned().map(Stdio::from).unwrap_or_else(|_| Stdio::inherit())
}

/// The signals the launcher acts on: the program's end, and the ones that stop it.
struct Signals {
    child: tokio::signal::unix::Signal,
    stops: Stops,
}

struct Stops {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Must run inside the runtime (tokio registers the handlers with its driver).
    fn watch() -> std::io::Result<Self> {
        Ok(Signals {
            child: signal(SignalKind::child())?,
            stops: Stops {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
                hup: signal(SignalKind::hangup())?,
            },
        })
    }
}

impl Stops {
    /// The next stop signal. A stream that ends (its driver is gone: never while the runtime
    /// lives) counts as one, so the failure kills the tree rather than leaving it.
    async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.hup.recv() => Signal::SIGHUP,
        }
    }
}

/// Waits until the program exits (its status) or a stop signal says to end it (128 + it).
async fn wait(program: Pid, signals: &mut Signals) -> u8 {
    let Signals { child, stops } = signals;
    loop {
        // Before each wait: a SIGCHLD coalesces several exits, and the program may have ended
        // before the first wait began.
        if let Some(status) = tree::reap(program) {
            return status;
        }
        tokio::select! {
            biased;
            stop = stops.next() => {
                // Ours to end: the program goes first, then what it started.
                let _ = kill(program, Signal::SIGKILL);
                return 128 + stop as u8;
            }
            seen = child.recv() => {
                if seen.is_none() {
                    // No more SIGCHLD to be told of; the program's end is still ours to await.
                    return tree::wait_for(program);
                }
            }
        }
    }
}
