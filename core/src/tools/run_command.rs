//! run_command: a shell command in the session's cwd, in the editor's terminal when it offers
//! one (`terminal.rs`), else on this machine (`shell.rs`) with its output streamed into the
//! tool card.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::shell::Args;
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::{ToolContent, ToolKind};
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
             Commands run in a sandbox: they may write only inside the session's folders and $TMPDIR, cannot \
             read credential stores, and have no network. Only when a command cannot work that way (it must \
             download dependencies, say), set `escalate` to \"network\" (network allowed, the rest holds) or \
             \"unsandboxed\" (no sandbox at all), with a `reason`: the user is asked each time.",
            json!({"type":"object","properties":{
                "command":{"type":"string"},
                "timeout_secs":{"type":"integer","minimum":1},
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
            let output = if cx.editor.features().terminal {
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

/// The command on this machine, its output shown in the card as it grows (throttled).
async fn run_local(args: &Value, cx: &ToolContext<'_>, sandbox: Option<&Launch>) -> Result<Output, ToolError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let run = super::shell::run(args, cx.jail, sandbox, tx, cx.cancel);
    tokio::pin!(run);
    let mut last_sent = tokio::time::Instant::now();
    let mut pending: Option<String> = None;
    loop {
        tokio::select! {
            result = &mut run => return result,
            Some(text) = rx.recv() => pending = Some(text),
            () = tokio::time::sleep(OUTPUT_EVERY), if pending.is_some() => {}
        }
        if last_sent.elapsed() >= OUTPUT_EVERY
            && let Some(text) = pending.take()
        {
            cx.updates.show(vec![ToolContent::Text(text)], false).await;
            last_sent = tokio::time::Instant::now();
        }
    }
}
