//! command_output: what a background command (`run_command` with `background: true`) printed
//! since the last read, and whether it still runs or how it ended. The model's copy is capped
//! like any result (`tools::cap`, the whole saved beside).

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::background::Status;
use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::ToolKind;
use crate::provider::ToolSpec;

/// The arguments of `command_output` and `kill_command`: which background command.
#[derive(Deserialize)]
pub(super) struct IdArgs {
    pub id: String,
}

impl IdArgs {
    /// Their JSON schema, as offered to the model.
    pub(super) fn schema() -> Value {
        json!({"type":"object","properties":{
            "id":{"type":"string","description":"The id run_command returned (`id: bg1` → \"bg1\")."}
        },"required":["id"]})
    }
}

pub struct CommandOutput;

impl Tool for CommandOutput {
    fn name(&self) -> &str {
        "command_output"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "command_output",
            "Read what a background command (started by run_command with background: true) printed since the \
             last read, and whether it is still running or its exit code.",
            IdArgs::schema(),
        )
    }

    fn announce(&self, args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        let a: IdArgs = parse_args("command_output", args)?;
        Ok(Announce {
            kind: ToolKind::Read,
            title: format!("Read the output of {}", a.id.trim()),
            locations: vec![],
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let a: IdArgs = parse_args("command_output", args)?;
            let job = cx.background.find(&a.id)?;
            let read = job.read();
            Ok(report(&job.id, &job.command, read.output, &read.status))
        })
    }
}

/// A read of a background command as the model and the card get it: the output, then a line
/// with the id and the status.
pub(super) fn report(id: &str, command: &str, mut text: String, status: &Status) -> Output {
    let printed = !text.is_empty();
    if printed && !text.ends_with('\n') {
        text.push('\n');
    }
    if !printed {
        text.push_str("(no new output)\n");
    }
    text.push_str(&format!("[id: {id}: {}]", status.describe()));
    let (code, running) = match status {
        Status::Running => (None, true),
        Status::Exited { code, .. } => (*code, false),
    };
    let raw =
        json!({ "id": id, "command": command, "running": running, "exitCode": code, "status": status.describe() });
    Output::text(text, raw)
}
