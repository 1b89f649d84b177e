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
            "Run a shell command in the session's working directory. Output is captured; long runs time out.",
            json!({"type":"object","properties":{"command":{"type":"string"},"timeout_secs":{"type":"integer","minimum":1}},"required":["command"]}),
        )
    }

    fn announce(&self, args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args("run_command", args)?;
        let first_line = a.command.lines().next().unwrap_or("").trim();
        Ok(Announce {
            kind: ToolKind::Execute,
            title: format!("Run `{first_line}`"),
            locations: vec![],
            needs: Needs::Command(a.command.trim().to_string()),
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let output = if cx.editor.features().terminal {
                super::terminal::run(args, cx).await
            } else {
                run_local(args, cx).await
            };
            output.map(|o| explain_denial(o, cx.sandbox.is_some()))
        })
    }
}

/// What a command's output says when the sandbox refused it something.
const DENIAL_SIGNS: [&str; 3] = ["Permission denied", "Operation not permitted", "Read-only file system"];

/// A sandboxed command that failed on a denial gets a line saying what the sandbox allows, so
/// the model tells the user what needs more access instead of trying to get around it.
fn explain_denial(mut output: Output, sandboxed: bool) -> Output {
    if output.ok || !sandboxed || !DENIAL_SIGNS.iter().any(|s| output.for_model.contains(s)) {
        return output;
    }
    output.for_model.push_str(
        "\n[This command ran in Corvid's sandbox: it may write only inside the session's folders and \
         $TMPDIR, cannot read protected paths (credential stores such as ~/.ssh, Corvid's own files) and \
         has no network. If that is what failed, do not try to get around it: tell the user what needs \
         more access. They can allow it in the [sandbox] settings of Corvid's config (network, \
         writable_roots) or run the command themselves.]",
    );
    output
}

/// The command on this machine, its output shown in the card as it grows (throttled).
async fn run_local(args: &Value, cx: &ToolContext<'_>) -> Result<Output, ToolError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let run = super::shell::run(args, cx.jail, cx.sandbox, tx, cx.cancel);
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
