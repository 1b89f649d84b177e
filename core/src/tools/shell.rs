//! run_command on this machine: a shell command in the session cwd, in its own process group,
//! with its output streamed to the caller, a timeout, an output cap, and a kill on cancel.
//! With a sandbox, the process is the launcher, which confines itself and supervises the
//! shell it starts in its own process group (`sandbox::supervise`).

use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Jail, Output, ToolError, parse_args};
use crate::process::{self, Group};
use crate::sandbox::{Escalation, Launch};

const DEFAULT_TIMEOUT: u64 = 120;
/// How long a stopped command's launcher gets to kill its tree before the group is killed.
const LAUNCHER_GRACE: Duration = Duration::from_millis(200);
const MAX_TIMEOUT: u64 = 1800;
/// Output kept for a card (the tail, if longer), and for the model past [`KEEP_WHOLE`].
pub(crate) const OUTPUT_CAP: usize = 64 * 1024;
/// A command's output kept whole for the model up to this many bytes: what the model reads
/// is cut to head and tail afterwards, with the whole saved to a file (`tools::cap`). Past
/// it, only the last [`OUTPUT_CAP`] bytes are kept besides (memory stays bounded).
const KEEP_WHOLE: usize = 8 * 1024 * 1024;
/// Most output a client terminal keeps for us (`outputByteLimit`; it cuts from the start).
pub(crate) const TERMINAL_OUTPUT_LIMIT: usize = 1024 * 1024;
/// Provider credentials never reach commands the model runs.
const SECRET_VARS: &[&str] = &["CORVID_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"];

/// The variables removed from the environment of every process Corvid starts for the model
/// (commands, client terminals, MCP servers): the provider keys above, and any inherited
/// `*_API_KEY` (other providers' keys the user happens to have exported).
pub(crate) fn secret_vars() -> Vec<String> {
    let mut vars: Vec<String> = SECRET_VARS.iter().map(|v| (*v).to_string()).collect();
    for (name, _) in std::env::vars_os() {
        if let Some(name) = name.to_str()
            && name.to_ascii_uppercase().ends_with("_API_KEY")
            && !vars.iter().any(|v| v == name)
        {
            vars.push(name.to_string());
        }
    }
    vars
}

#[derive(Deserialize)]
pub(super) struct Args {
    pub command: String,
    timeout_secs: Option<u64>,
    /// Part of the sandbox to lift for this call (the user is asked).
    #[serde(default)]
    pub escalate: Option<Escalation>,
    /// Why, in the model's words: shown in the question.
    #[serde(default)]
    pub reason: Option<String>,
    /// Start it and return after a short wait, leaving it running (`tools::background`).
    #[serde(default)]
    pub background: bool,
}

impl Args {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT).clamp(1, MAX_TIMEOUT))
    }
}

/// How a command ended.
pub enum Ended {
    Exited(Option<i32>),
    TimedOut,
    /// The call or the turn was cancelled.
    Cancelled,
    /// The user stopped the command alone (v2's `terminal/cancel`); the call goes on.
    Stopped,
}

/// How the process itself ended: its exit code, or the signal that ended it (for an
/// agent-owned terminal's `exitStatus`).
#[derive(Debug, Clone, Default)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

/// The last [`OUTPUT_CAP`] bytes of a command's output, and how many came before them.
#[derive(Default)]
pub struct Tail {
    bytes: Vec<u8>,
    pub dropped: usize,
}

impl Tail {
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > OUTPUT_CAP {
            let excess = self.bytes.len() - OUTPUT_CAP;
            self.bytes.drain(..excess);
            self.dropped += excess;
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// A command's output as the model gets it: the first [`KEEP_WHOLE`] bytes, and the last
/// [`OUTPUT_CAP`] bytes of the rest.
#[derive(Default)]
pub struct Capture {
    head: Vec<u8>,
    rest: Tail,
}

impl Capture {
    pub fn push(&mut self, chunk: &[u8]) {
        let room = KEEP_WHOLE.saturating_sub(self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..room]);
        if room < chunk.len() {
            self.rest.push(&chunk[room..]);
        }
    }

    /// Bytes dropped between the head and the tail.
    pub fn dropped(&self) -> usize {
        self.rest.dropped
    }

    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.rest.dropped > 0 {
            text.push_str(&format!("\n[… {} bytes of output not kept here …]\n", self.rest.dropped));
        }
        text.push_str(&self.rest.text());
        text
    }
}

/// The ways a running command can be ended early.
pub struct Stops<'a> {
    /// The call's token (the turn's cancel, or `tool_call/cancel` of this call).
    pub cancel: &'a CancellationToken,
    /// The command's own (`terminal/cancel`): it is killed and the call reports it.
    pub stop: &'a CancellationToken,
}

/// Runs the command (through the sandbox's launcher, if any); `progress` receives its output
/// as it comes.
pub async fn run(
    args: &Value,
    jail: &Jail,
    sandbox: Option<&Launch>,
    progress: mpsc::UnboundedSender<Vec<u8>>,
    stops: Stops<'_>,
) -> Result<(Output, Exit), ToolError> {
    let a: Args = parse_args("run_command", args)?;
    let timeout = a.timeout();
    let (mut child, mut rx) = start(&a.command, jail, sandbox, true).await?;
    let group = Group::of(&child);

    let mut output = Capture::default();
    // What the card shows: the end, as before (the model's copy is cut when it is read).
    let mut card = Tail::default();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut readers_done = false;
    let mut status = None;
    let ended = loop {
        tokio::select! {
            biased;
            () = stops.cancel.cancelled() => break Ended::Cancelled,
            () = stops.stop.cancelled() => break Ended::Stopped,
            () = &mut deadline => break Ended::TimedOut,
            chunk = rx.recv(), if !readers_done => match chunk {
                Some(bytes) => {
                    output.push(&bytes);
                    card.push(&bytes);
                    let _ = progress.send(bytes);
                }
                None => readers_done = true,
            },
            waited = child.wait(), if readers_done => {
                status = waited.ok();
                break Ended::Exited(status.and_then(|s| s.code()));
            }
        }
    };
    if !matches!(ended, Ended::Exited(_)) {
        status = end(&mut child, group, sandbox.is_some()).await;
    }
    let exit = Exit { code: status.and_then(|s| s.code()), signal: status.as_ref().and_then(process::signal_name) };
    let text = output.text();
    let (summary, ok, code) = outcome(&ended, timeout);
    let ended_line = |mut text: String| {
        if !text.ends_with('\n') && !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[{summary}]"));
        text
    };
    let for_model = ended_line(text);
    let mut shown = String::new();
    if card.dropped > 0 {
        shown.push_str(&format!("[first {} bytes of output not shown]\n", card.dropped));
    }
    shown.push_str(&card.text());
    let raw = json!({ "command": a.command, "exitCode": code, "outcome": summary, "truncatedBytes": output.dropped() });
    let content = vec![crate::event::ToolContent::Text(ended_line(shown))];
    Ok((Output { for_model, content, raw, ok, images: Vec::new() }, exit))
}

/// Starts `command` in the session cwd, in a process group of its own (through the sandbox's
/// launcher, if any), without provider keys; its stdout and stderr arrive on the receiver,
/// which closes once both are done. `kill_on_drop`: a dropped child is SIGKILLed.
pub(super) async fn start(
    command: &str,
    jail: &Jail,
    sandbox: Option<&Launch>,
    kill_on_drop: bool,
) -> Result<(tokio::process::Child, mpsc::UnboundedReceiver<Vec<u8>>), ToolError> {
    let mut cmd = match sandbox {
        Some(launch) => launch.command(command).await.map_err(temp_dir_failed)?,
        None => process::shell(command),
    };
    process::own_group(&mut cmd)
        .current_dir(jail.cwd())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(kill_on_drop);
    for var in secret_vars() {
        cmd.env_remove(var);
    }
    let mut child = cmd.spawn().map_err(|e| ToolError::Failed(format!("cannot start the command: {e}")))?;
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    spawn_reader(child.stdout.take(), tx.clone());
    spawn_reader(child.stderr.take(), tx);
    Ok((child, rx))
}

/// Ends a started command and everything it started; how it ended. A sandboxed one's
/// launcher is asked first (SIGTERM), since it kills what escaped the group (`setsid`) and
/// SIGKILL would end it before it could.
pub(super) async fn end(
    child: &mut tokio::process::Child,
    group: Option<Group>,
    sandboxed: bool,
) -> Option<std::process::ExitStatus> {
    if sandboxed {
        if let Some(g) = group {
            g.terminate();
        }
        let _ = tokio::time::timeout(LAUNCHER_GRACE, child.wait()).await;
    }
    if let Some(g) = group {
        g.kill();
    }
    child.wait().await.ok()
}

/// A sandboxed command whose temp dir could not be made does not run.
pub(super) fn temp_dir_failed(e: std::io::Error) -> ToolError {
    ToolError::Failed(format!("cannot make the command's temp dir: {e}"))
}

/// How an ending reads to the model: a summary, success, and the exit code if there is one.
pub(super) fn outcome(ended: &Ended, timeout: Duration) -> (String, bool, Option<i32>) {
    match ended {
        Ended::Exited(Some(0)) => ("exit code 0".to_string(), true, Some(0)),
        Ended::Exited(Some(c)) => (format!("exit code {c}"), false, Some(*c)),
        Ended::Exited(None) => ("killed by a signal".to_string(), false, None),
        Ended::TimedOut => (format!("timed out after {} s and was killed", timeout.as_secs()), false, None),
        Ended::Cancelled => ("cancelled and killed".to_string(), false, None),
        Ended::Stopped => ("stopped by the user and killed".to_string(), false, None),
    }
}

fn spawn_reader(pipe: Option<impl tokio::io::AsyncRead + Unpin + Send + 'static>, tx: mpsc::UnboundedSender<Vec<u8>>) {
    let Some(mut pipe) = pipe else { return };
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
}
