//! kill_command: ends a background command (`run_command` with `background: true`) and
//! everything it started, then reports what it printed since the last read.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::background::Status;
use super::command_output::{IdArgs, report};
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::ToolKind;
use crate::provider::ToolSpec;

/// How long the call waits for the command to be gone (the launcher's grace, then SIGKILL).
const GONE_WITHIN: Duration = Duration::from_secs(5);

pub struct KillCommand;

impl Tool for KillCommand {
    fn name(&self) -> &str {
        "kill_command"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "kill_command",
            "End a background command (started by run_command with background: true) and every process it \
             started. Returns what it printed since the last read.",
            IdArgs::schema(),
        )
    }

    fn announce(&self, args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        let a: IdArgs = parse_args("kill_command", args)?;
        // Ending what the user already let run asks nothing.
        Ok(Announce {
            kind: ToolKind::Execute,
            title: format!("Stop {}", a.id.trim()),
            locations: vec![],
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let a: IdArgs = parse_args("kill_command", args)?;
            let job = cx.background.find(&a.id)?;
            let was_running = job.status() == Status::Running;
            job.stop.cancel();
            // The kill is under way whatever happens to this call: a cancel only stops the wait.
            tokio::select! {
                biased;
                () = cx.cancel.cancelled() => return Err(ToolError::Cancelled),
                () = job.wait(GONE_WITHIN) => {}
            }
            let read = job.read();
            let mut output = report(&job.id, &job.command, read.output, &read.status);
            if !was_running {
                output.for_model.push_str("\n(it had already ended)");
            }
            Ok(output)
        })
    }
}
