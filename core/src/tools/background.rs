//! Background commands: those `run_command` starts with `background: true` (a dev server, a
//! watcher) and leaves running while the conversation goes on. Each belongs to its session
//! ([`BackgroundCommands`], held by the session): `command_output` reads what it printed since
//! the last read, `kill_command` ends it, and all of them end with the session (close, delete,
//! a reload, the connection's end: [`BackgroundCommands::end_all`]; the agent's exit or crash:
//! the sandbox launcher's parent-death signal, since Corvid's runtime threads started it).
//!
//! A command runs exactly as a foreground one does (`shell::start`: its own process group,
//! through the sandbox's launcher, no provider keys) and is watched by a task of its own,
//! which keeps its unread output, notes how it ended and, for a v2 client, feeds its
//! agent-owned terminal.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::shell::{self, Capture};
use super::{Jail, ToolError};
use crate::event::Terminal;
use crate::process::{self, Group};
use crate::sandbox::Launch;

/// Most background commands one session runs at once: each holds processes and memory, and
/// a model that starts more has lost track of them.
pub const MAX_RUNNING: usize = 8;
/// Ended commands kept for a last read (their output, their exit), the oldest dropped first.
const KEEP_ENDED: usize = 16;
/// An agent-owned terminal gets a background command's output at most this often.
const FEED_EVERY: Duration = Duration::from_millis(100);
/// Most bytes streamed to a background command's terminal: a server that logs every request
/// must not grow the session's ledger without bound. Past it, the terminal says so once.
const FEED_CAP: usize = 1024 * 1024;

/// Reports on an agent-owned terminal that outlives the call that opened it (a background
/// command's): stored and sent as the session's updates, outside any turn.
pub trait TerminalFeed: Send + Sync {
    /// The terminal's id, which its updates carry.
    fn id(&self) -> &str;
    fn send(&self, update: Terminal) -> futures_util::future::BoxFuture<'static, ()>;
    /// The command ended: `terminal/cancel` no longer reaches it.
    fn ended(&self);
}

/// Makes a background command's terminal, given the command's stop token (so `terminal/cancel`
/// ends it).
pub type MakeFeed<'a> = &'a (dyn Fn(&CancellationToken) -> Arc<dyn TerminalFeed> + Sync);

/// The background commands of one session.
#[derive(Default)]
pub struct BackgroundCommands {
    jobs: Mutex<Jobs>,
}

#[derive(Default)]
struct Jobs {
    next: u32,
    list: Vec<Arc<Job>>,
    /// Set once the session ended: nothing more starts.
    closed: bool,
}

/// One background command.
pub struct Job {
    /// What the model calls it by (`bg1`, `bg2`, … in its session).
    pub id: String,
    pub command: String,
    /// Fired to end it: `kill_command`, the session's end, v2's `terminal/cancel`.
    pub stop: CancellationToken,
    /// Its process group, for the synchronous end ([`BackgroundCommands::end_all`]).
    group: Option<Group>,
    /// Whether the sandbox's launcher leads the group (it ends its tree on SIGTERM).
    sandboxed: bool,
    state: Mutex<JobState>,
    /// `true` once it has ended and its last output is in.
    done: watch::Sender<bool>,
}

struct JobState {
    /// What it printed since the model last read.
    unread: Capture,
    status: Status,
    /// Whether the model has been told how it ended.
    end_told: bool,
    /// Set when the session ends: its terminal gets nothing more (the session may be deleted).
    quiet: bool,
}

/// Whether a background command runs, or how it ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Running,
    Exited { code: Option<i32>, signal: Option<String>, killed: bool },
}

impl Status {
    /// How it reads to the model: "running", "exit code 0", "killed by kill_command", ….
    pub fn describe(&self) -> String {
        match self {
            Status::Running => "still running".to_string(),
            Status::Exited { killed: true, .. } => "killed".to_string(),
            Status::Exited { code: Some(code), .. } => format!("exited with code {code}"),
            Status::Exited { signal: Some(signal), .. } => format!("ended by {signal}"),
            Status::Exited { .. } => "ended".to_string(),
        }
    }
}

/// What a read of a background command gives.
pub struct Read {
    pub output: String,
    pub status: Status,
}

impl Job {
    fn state(&self) -> MutexGuard<'_, JobState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What it printed since the last read, and whether it still runs (an ended command's
    /// end counts as told).
    pub fn read(&self) -> Read {
        let mut state = self.state();
        let output = std::mem::take(&mut state.unread).text();
        if state.status != Status::Running {
            state.end_told = true;
        }
        Read { output, status: state.status.clone() }
    }

    pub fn status(&self) -> Status {
        self.state().status.clone()
    }

    /// Waits until it has ended (its last output in), or `limit` has passed.
    pub async fn wait(&self, limit: Duration) {
        let mut done = self.done.subscribe();
        let _ = tokio::time::timeout(limit, done.wait_for(|d| *d)).await;
    }

    /// Ends it now, without waiting: the launcher is told (it ends its tree) or, unconfined,
    /// the group is killed. For the session's end, when the watching task may never run again
    /// (the agent exiting); the task still reaps it and kills the group if it lingers.
    /// `quiet`: its terminal is told nothing more (the session is being deleted).
    fn end_now(&self, quiet: bool) {
        if quiet {
            self.state().quiet = true;
        }
        self.stop.cancel();
        if let Some(group) = self.group {
            if self.sandboxed { group.terminate() } else { group.kill() }
        }
    }
}

impl BackgroundCommands {
    fn jobs(&self) -> MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts `command` (confined by `sandbox`, if any) and the task that watches it. `feed`:
    /// its agent-owned terminal, for a v2 client, given the command's stop token (so
    /// `terminal/cancel` ends it).
    pub async fn start(
        &self,
        command: &str,
        jail: &Jail,
        sandbox: Option<&Launch>,
        feed: Option<MakeFeed<'_>>,
    ) -> Result<Arc<Job>, ToolError> {
        let running = self.jobs().list.iter().filter(|j| j.status() == Status::Running).count();
        if running >= MAX_RUNNING {
            return Err(ToolError::Failed(format!(
                "{running} background commands are running already; end one with kill_command first"
            )));
        }
        // A sandboxed job's child is dropped only when Corvid's runtime shuts down (its watcher
        // owns it), right after `end_all` sent the group SIGTERM: a SIGKILL of the launcher then
        // would end it before it killed what escaped the group (`setsid`), which would go to
        // init. Its parent-death signal and its SIGTERM end the tree instead.
        let (child, output) = shell::start(command, jail, sandbox, sandbox.is_none()).await?;
        let stop = CancellationToken::new();
        let (done, _) = watch::channel(false);
        let mut jobs = self.jobs();
        jobs.next += 1;
        let job = Arc::new(Job {
            id: format!("bg{}", jobs.next),
            command: command.to_string(),
            stop: stop.clone(),
            group: Group::of(&child),
            sandboxed: sandbox.is_some(),
            state: Mutex::new(JobState {
                unread: Capture::default(),
                status: Status::Running,
                end_told: false,
                quiet: false,
            }),
            done,
        });
        if jobs.closed {
            // The session ended while this one started: it ends too.
            job.end_now(true);
        }
        jobs.list.push(job.clone());
        let ended: Vec<usize> = (0..jobs.list.len()).filter(|&i| jobs.list[i].status() != Status::Running).collect();
        if ended.len() > KEEP_ENDED {
            let oldest = ended[0];
            jobs.list.remove(oldest);
        }
        drop(jobs);
        let feed = feed.map(|make| make(&stop));
        tokio::spawn(watch_job(job.clone(), child, output, feed));
        Ok(job)
    }

    /// The command the model calls `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.jobs().list.iter().find(|j| j.id == id.trim()).cloned()
    }

    /// The command the model calls `id`, or an error that names the ones it can call.
    pub fn find(&self, id: &str) -> Result<Arc<Job>, ToolError> {
        if let Some(job) = self.get(id) {
            return Ok(job);
        }
        let known: Vec<String> = self.jobs().list.iter().map(|j| j.id.clone()).collect();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        Err(ToolError::Failed(format!(
            "no background command `{id}` in this session (known: {known}); run_command with background: true starts one"
        )))
    }

    /// Ends every command, at once (the session ends); nothing starts after. `quiet`: their
    /// terminals are told nothing more (the session is being deleted: nothing may be stored
    /// in it); otherwise each still reports its exit, so a replay shows it ended.
    pub fn end_all(&self, quiet: bool) {
        let mut jobs = self.jobs();
        jobs.closed = true;
        // One already being ended keeps the word it was ended with.
        for job in jobs.list.iter().filter(|j| j.status() == Status::Running && !j.stop.is_cancelled()) {
            job.end_now(quiet);
        }
    }

    /// What the model should know at the start of a turn: every command still running, and
    /// those that ended since it last heard of them. `None` when there are none.
    pub fn report(&self) -> Option<String> {
        self.note(true)
    }

    /// What the model should know after a tool call: the commands that ended since it last
    /// heard of them (`None` when none did).
    pub fn news(&self) -> Option<String> {
        self.note(false)
    }

    fn note(&self, with_running: bool) -> Option<String> {
        let jobs = self.jobs();
        let mut lines = Vec::new();
        for job in &jobs.list {
            let mut state = job.state();
            let show = match state.status {
                Status::Running => with_running,
                Status::Exited { .. } => !std::mem::replace(&mut state.end_told, true),
            };
            if show {
                lines.push(format!("- id: {} `{}`: {}", job.id, one_line(&job.command), state.status.describe()));
            }
        }
        if lines.is_empty() {
            return None;
        }
        Some(format!(
            "[Background commands (read their output with command_output, end them with kill_command):\n{}]",
            lines.join("\n")
        ))
    }
}

impl Drop for BackgroundCommands {
    fn drop(&mut self) {
        self.end_all(true);
    }
}

/// A command's first line, shortened, as the notes name it.
fn one_line(command: &str) -> String {
    let line = command.lines().next().unwrap_or("").trim();
    let mut short: String = line.chars().take(80).collect();
    if line.chars().count() > 80 || command.trim().lines().count() > 1 {
        short.push('…');
    }
    short
}

/// Watches one command until it ends: its output goes to the unread buffer (and its
/// terminal), its end is noted. A stop ends the whole group (through the launcher first).
async fn watch_job(
    job: Arc<Job>,
    mut child: tokio::process::Child,
    mut output: mpsc::UnboundedReceiver<Vec<u8>>,
    feed: Option<Arc<dyn TerminalFeed>>,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut fed = 0usize;
    let mut last_fed = tokio::time::Instant::now();
    let mut readers_done = false;
    let (status, killed) = loop {
        tokio::select! {
            biased;
            () = job.stop.cancelled() => {
                break (shell::end(&mut child, job.group, job.sandboxed).await, true);
            }
            chunk = output.recv(), if !readers_done => match chunk {
                Some(bytes) => {
                    job.state().unread.push(&bytes);
                    if feed.is_some() {
                        pending.extend_from_slice(&bytes);
                    }
                }
                None => readers_done = true,
            },
            waited = child.wait(), if readers_done => break (waited.ok(), false),
            () = tokio::time::sleep(FEED_EVERY), if !pending.is_empty() => {}
        }
        if let Some(feed) = &feed
            && last_fed.elapsed() >= FEED_EVERY
        {
            feed_output(&job, feed.as_ref(), &mut pending, &mut fed).await;
            last_fed = tokio::time::Instant::now();
        }
    };
    // What it wrote last, still queued when it ended.
    while let Ok(bytes) = output.try_recv() {
        job.state().unread.push(&bytes);
        pending.extend_from_slice(&bytes);
    }
    let code = status.and_then(|s| s.code());
    let signal = status.as_ref().and_then(process::signal_name);
    job.state().status = Status::Exited { code, signal: signal.clone(), killed };
    job.done.send_replace(true);
    if let Some(feed) = &feed {
        feed.ended();
        feed_output(&job, feed.as_ref(), &mut pending, &mut fed).await;
        if !job.state().quiet {
            feed.send(Terminal::Exited { id: feed.id().to_string(), exit_code: code, signal }).await;
        }
    }
}

/// Sends what is pending to the terminal, up to [`FEED_CAP`] in all (then one line saying the
/// rest is not shown). Nothing once the session has ended.
async fn feed_output(job: &Job, feed: &dyn TerminalFeed, pending: &mut Vec<u8>, fed: &mut usize) {
    if pending.is_empty() || job.state().quiet {
        pending.clear();
        return;
    }
    let room = FEED_CAP.saturating_sub(*fed);
    if room == 0 {
        pending.clear();
        return;
    }
    let mut data = std::mem::take(pending);
    if data.len() > room {
        data.truncate(room);
        data.extend_from_slice(b"\n[more output is not shown here; command_output reads it]\n");
    }
    *fed += data.len();
    feed.send(Terminal::Output { id: feed.id().to_string(), data }).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::Roots;

    fn jail() -> (Jail, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("corvid-bg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let roots = Roots::new(dunce::canonicalize(&dir).expect("canonical"), Vec::new());
        (Jail::new(roots, Vec::new()), dir)
    }

    #[tokio::test]
    async fn a_background_command_is_read_in_pieces_and_killed_with_its_group() {
        let (jail, dir) = jail();
        let marker = dir.join("late");
        let bg = BackgroundCommands::default();
        // A grandchild that would write the marker after a second, unless killed with the group.
        let line = format!("echo first; (sleep 1; touch '{}') & sleep 30", marker.display());
        let job = bg.start(&line, &jail, None, None).await.expect("started");
        assert_eq!(job.id, "bg1");
        job.wait(Duration::from_millis(300)).await;
        let first = job.read();
        assert_eq!((first.output.as_str(), &first.status), ("first\n", &Status::Running));
        assert_eq!(job.read().output, "", "a second read gets only what came since");
        assert!(bg.report().is_some_and(|r| r.contains("id: bg1") && r.contains("still running")));
        assert!(bg.news().is_none(), "nothing ended");
        job.stop.cancel();
        job.wait(Duration::from_secs(5)).await;
        assert!(matches!(job.status(), Status::Exited { killed: true, .. }));
        assert!(bg.news().is_some_and(|n| n.contains("killed")));
        assert!(bg.news().is_none(), "an end is told once");
        tokio::time::sleep(Duration::from_millis(1300)).await;
        assert!(!marker.exists(), "the grandchild outlived kill_command");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn the_session_end_ends_every_command_and_starts_no_more() {
        let (jail, dir) = jail();
        let bg = BackgroundCommands::default();
        let job = bg.start("sleep 30", &jail, None, None).await.expect("started");
        let exited = bg.start("exit 3", &jail, None, None).await.expect("started");
        exited.wait(Duration::from_secs(5)).await;
        assert_eq!(exited.status().describe(), "exited with code 3");
        bg.end_all(false);
        job.wait(Duration::from_secs(5)).await;
        assert!(matches!(job.status(), Status::Exited { .. }));
        let late = bg.start("sleep 30", &jail, None, None).await.expect("started");
        late.wait(Duration::from_secs(5)).await;
        assert!(matches!(late.status(), Status::Exited { killed: true, .. }), "a start after the end ends");
        let _ = std::fs::remove_dir_all(dir);
    }
}
