//! run_command: a shell command in the session's cwd, in the editor's terminal when it offers
//! one (`terminal.rs`), else on this machine (`shell.rs`) with its output streamed into the
//! tool card, or, for a v2 client, into an agent-owned terminal.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use tokio_util::sync::CancellationToken;

use super::shell::{self, Args, Stops, Tail};
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::{AGENT_TERMINAL_PREFIX, Terminal, ToolContent, ToolKind};
use crate::provider::ToolSpec;
use crate::sandbox::{Confinement, Escalation, Launch};

/// The card shows a local command's output at most this often.
const OUTPUT_EVERY: Duration = Duration::from_millis(100);

pub struct RunCommand;

impl Tool for RunCommand {
    fn name(&self) -> &str {
        "run_command"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "run_command",
            "Run a shell command in the session's working directory. Output is captured; long runs time out. \
             A command that does not end by itself (a dev server, a file watcher, `tail -f`) would hold the \
             conversation until it times out: set `background` to true, read its output later with \
             command_output and end it with kill_command. \
             Commands run in a sandbox: they may write only inside the session's folders and $TMPDIR, cannot \
             read credential stores, and have no network. Only when a command cannot work that way (it must \
             download dependencies, say), set `escalate` to \"network\" (network allowed, the rest holds) or \
             \"unsandboxed\" (no sandbox at all), with a `reason`: the user is asked each time.",
            json!({"type":"object","properties":{
                "command":{"type":"string"},
                "timeout_secs":{"type":"integer","minimum":1,"description":"Ignored with background."},
                "background":{"type":"boolean","description":"Start it and return after about 2 s with its first output and an id, leaving it running (dev servers, watchers, anything that does not exit by itself)."},
                "escalate":{"type":"string","enum":["network","unsandboxed"],"description":"Lift part of the sandbox for this call; the user is asked."},
                "reason":{"type":"string","description":"Why the escalation is needed, shown to the user."}
            },"required":["command"]}),
        )
    }

    fn announce(&self, args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("run_command", args)?;
        let first_line = a.command.lines().next().unwrap_or("").trim();
        let command = a.command.trim().to_string();
        let (title, needs) = match a.escalate {
            Some(escalation) => {
                (format!("Run `{first_line}` {}", escalation.phrase()), Needs::Escalated { command, escalation })
            }
            None => (format!("Run `{first_line}`"), Needs::Command(command)),
        };
        let title = if a.background { format!("{title} in the background") } else { title };
        Ok(Announce { kind: ToolKind::Execute, title, locations: vec![], needs })
    }

    /// An escalation's question says what is lifted and why.
    fn preview<'a>(
        &'a self,
        args: &'a Value,
        cx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Vec<ToolContent>, ToolError>> {
        Box::pin(async move {
            let a: Args = parse_args("run_command", args)?;
            let Some(escalation) = a.escalate.filter(|e| cx.sandbox.lifts(*e)) else { return Ok(Vec::new()) };
            let lifted = match escalation {
                Escalation::Network => "This command asks for network access; the rest of the sandbox still holds.",
                Escalation::Unsandboxed => {
                    "This command asks to run outside the sandbox: it could write anywhere you can, read your \
                     credentials and reach the network."
                }
            };
            let reason = a.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()).unwrap_or("(no reason given)");
            Ok(vec![ToolContent::Text(format!("{lifted}\nReason: {reason}\n\n$ {}", a.command.trim()))])
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let a: Args = parse_args("run_command", args)?;
            // The call was authorized with its escalation (if any): this is how it runs.
            let confinement = cx.sandbox.escalated(a.escalate);
            if let Confinement::Refused(reason) = &confinement {
                return Err(ToolError::Failed(format!(
                    "not run: commands are refused here ({reason}; [sandbox] required = true)"
                )));
            }
            let launch = confinement.launch();
            // Run here even for editors with terminals: a command that outlives the call must
            // end with the session, and with Corvid (the launcher's parent-death signal).
            let output = if a.background {
                super::start_background::run(&a, cx, launch).await
            } else if cx.editor.features().terminal {
                super::terminal::run(args, cx, launch).await
            } else {
                run_local(args, cx, launch).await
            };
            output.map(|o| explain_denial(o, launch))
        })
    }
}

/// What a command's output says when the sandbox refused it something.
const DENIAL_SIGNS: [&str; 3] = ["Permission denied", "Operation not permitted", "Read-only file system"];

/// A sandboxed command that failed on a denial gets a line saying what the sandbox allows and
/// how to ask for more, so the model asks instead of trying to get around it.
fn explain_denial(mut output: Output, sandbox: Option<&Launch>) -> Output {
    let Some(policy) = sandbox.map(Launch::policy) else { return output };
    if output.ok || !DENIAL_SIGNS.iter().any(|s| output.for_model.contains(s)) {
        return output;
    }
    let writes = if policy.read_only { "only to $TMPDIR" } else { "only inside the session's folders and $TMPDIR" };
    let network = if policy.network { "" } else { " and has no network" };
    output.for_model.push_str(&format!(
        "\n[This command ran in Corvid's sandbox: it may write {writes}, cannot read protected paths \
         (credential stores such as ~/.ssh, Corvid's own files){network}. If that is what failed, do not try \
         to get around it. If the task needs it, call run_command again with \"escalate\": \"network\" (network \
         only) or \"unsandboxed\", and a \"reason\": the user is asked. Otherwise tell the user what needs more access.]"
    ));
    output
}

/// The command on this machine. A v2 client gets it as an agent-owned terminal
/// ([`run_in_agent_terminal`]); others see its output in the card as it grows (throttled).
async fn run_local(args: &Value, cx: &ToolContext<'_>, sandbox: Option<&Launch>) -> Result<Output, ToolError> {
    if cx.editor.features().v2 {
        return run_in_agent_terminal(args, cx, sandbox).await;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    // Only v2's `terminal/cancel` stops a command alone.
    let never = CancellationToken::new();
    let run = shell::run(args, cx.jail, sandbox, tx, Stops { cancel: cx.cancel, stop: &never });
    tokio::pin!(run);
    let mut shown = Tail::default();
    let mut pending = false;
    let mut last_sent = tokio::time::Instant::now();
    loop {
        tokio::select! {
            result = &mut run => return result.map(|(output, _)| output),
            Some(bytes) = rx.recv() => {
                shown.push(&bytes);
                pending = true;
            }
            () = tokio::time::sleep(OUTPUT_EVERY), if pending => {}
        }
        if pending && last_sent.elapsed() >= OUTPUT_EVERY {
            cx.updates.show(vec![ToolContent::Text(shown.text())], false).await;
            pending = false;
            last_sent = tokio::time::Instant::now();
        }
    }
}

/// The command as an agent-owned terminal (ACP v2 has no client terminals): announced with
/// what it runs and where, its output streamed as chunks (throttled, at most
/// [`TERMINAL_STREAM_CAP`] bytes; past that, the output's end replaces the stream once the
/// command ends), and its exit status. The card shows the terminal; `terminal/cancel` kills
/// the command and the call reports it, the turn going on.
async fn run_in_agent_terminal(
    args: &Value,
    cx: &ToolContext<'_>,
    sandbox: Option<&Launch>,
) -> Result<Output, ToolError> {
    let a: Args = parse_args("run_command", args)?;
    let id = format!("{AGENT_TERMINAL_PREFIX}{}", cx.call_id);
    let cwd = cx.jail.cwd().to_path_buf();
    cx.updates.terminal(Terminal::Started { id: id.clone(), command: a.command.clone(), cwd }).await;
    cx.updates.show(vec![ToolContent::Terminal(id.clone())], false).await;
    let stop = cx.updates.cancellable_terminal(&id);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let run = shell::run(args, cx.jail, sandbox, tx, Stops { cancel: cx.cancel, stop: &stop });
    tokio::pin!(run);
    let mut stream = Stream::default();
    let mut last_sent = tokio::time::Instant::now();
    let result = loop {
        tokio::select! {
            result = &mut run => break result,
            Some(bytes) = rx.recv() => stream.push(&bytes),
            () = tokio::time::sleep(OUTPUT_EVERY), if !stream.pending.is_empty() => {}
        }
        if last_sent.elapsed() >= OUTPUT_EVERY
            && let Some(data) = stream.take()
        {
            cx.updates.terminal(Terminal::Output { id: id.clone(), data }).await;
            last_sent = tokio::time::Instant::now();
        }
    };
    cx.updates.terminal_ended(&id);
    // What the command wrote last, still queued when it ended.
    while let Ok(bytes) = rx.try_recv() {
        stream.push(&bytes);
    }
    if let Some(data) = stream.take() {
        cx.updates.terminal(Terminal::Output { id: id.clone(), data }).await;
    }
    if stream.cut > 0 {
        let mut data = format!("[the first {} bytes of the output are not shown]\n", stream.tail.dropped).into_bytes();
        data.extend_from_slice(stream.tail.bytes());
        cx.updates.terminal(Terminal::Replaced { id: id.clone(), data }).await;
    }
    let (mut output, exit) = match result {
        Ok(done) => done,
        Err(e) => {
            // It never ran: the terminal still ends.
            cx.updates.terminal(Terminal::Exited { id, exit_code: None, signal: None }).await;
            return Err(e);
        }
    };
    cx.updates.terminal(Terminal::Exited { id: id.clone(), exit_code: exit.code, signal: exit.signal }).await;
    // The output too, for clients that do not draw terminals (and a v1 replay, `event::v1::for_v1`).
    if let Some(raw) = output.raw.as_object_mut() {
        raw.insert("terminalId".into(), json!(id));
        raw.insert("output".into(), json!(stream.tail.text()));
    }
    output.content = vec![ToolContent::Terminal(id)];
    Ok(output)
}

/// Most output bytes streamed to an agent-owned terminal.
const TERMINAL_STREAM_CAP: usize = 1024 * 1024;

/// An agent-owned terminal's output on its way out: the bytes not yet sent, how many were cut
/// past [`TERMINAL_STREAM_CAP`], and the output's end (for the replacement after a cut).
#[derive(Default)]
struct Stream {
    pending: Vec<u8>,
    streamed: usize,
    cut: usize,
    tail: Tail,
}

impl Stream {
    fn push(&mut self, bytes: &[u8]) {
        self.tail.push(bytes);
        let room = TERMINAL_STREAM_CAP.saturating_sub(self.streamed + self.pending.len());
        let kept = bytes.len().min(room);
        self.pending.extend_from_slice(&bytes[..kept]);
        self.cut += bytes.len() - kept;
    }

    /// The bytes to send now, if any.
    fn take(&mut self) -> Option<Vec<u8>> {
        if self.pending.is_empty() {
            return None;
        }
        self.streamed += self.pending.len();
        Some(std::mem::take(&mut self.pending))
    }
}
