//! run_command with `background: true`: the command starts as any other (sandboxed, asked
//! for as any command), and the call returns after a short wait, or as soon as it exits, with
//! what it printed so far and the id `command_output` and `kill_command` take. The command
//! itself is then the session's (`tools::background`). A v2 client sees it as an agent-owned
//! terminal that keeps receiving its output after the call.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::background::{MakeFeed, Status};
use super::shell::Args;
use super::{Output, ToolContext, ToolError};
use crate::event::{AGENT_TERMINAL_PREFIX, Terminal, ToolContent};
use crate::sandbox::Launch;

/// How long the call waits for the first output (a server's "listening on …") before it
/// returns, unless the command exits sooner.
const FIRST_WAIT: Duration = Duration::from_secs(2);

/// Starts the command in the background and reports on its first moments.
pub async fn run(a: &Args, cx: &ToolContext<'_>, sandbox: Option<&Launch>) -> Result<Output, ToolError> {
    let terminal = cx.editor.features().v2.then(|| format!("{AGENT_TERMINAL_PREFIX}{}", cx.call_id));
    if let Some(id) = &terminal {
        let cwd = cx.jail.cwd().to_path_buf();
        cx.updates.terminal(Terminal::Started { id: id.clone(), command: a.command.clone(), cwd }).await;
        cx.updates.show(vec![ToolContent::Terminal(id.clone())], false).await;
    }
    let make_feed =
        |stop: &CancellationToken| cx.updates.background_terminal(terminal.as_deref().unwrap_or_default(), stop);
    let feed: Option<MakeFeed<'_>> = match terminal {
        Some(_) => Some(&make_feed),
        None => None,
    };
    let job = match cx.background.start(&a.command, cx.jail, sandbox, feed).await {
        Ok(job) => job,
        Err(e) => {
            if let Some(id) = terminal {
                cx.updates.terminal(Terminal::Exited { id, exit_code: None, signal: None }).await;
            }
            return Err(e);
        }
    };
    tokio::select! {
        biased;
        () = cx.cancel.cancelled() => {
            // The model never learns its id: what this call started ends with it.
            job.stop.cancel();
            return Err(ToolError::Cancelled);
        }
        () = job.wait(FIRST_WAIT) => {}
    }
    let read = job.read();
    let mut for_model = match &read.status {
        Status::Running => format!(
            "Started in the background, id: {} (still running after {} s). Read what it prints next with \
             command_output and end it with kill_command when it is no longer needed; it ends with the session \
             anyway.\n",
            job.id,
            FIRST_WAIT.as_secs()
        ),
        ended => format!("Started in the background, id: {}; it has already {}.\n", job.id, ended.describe()),
    };
    match read.output.is_empty() {
        true => for_model.push_str("It printed nothing yet."),
        false => {
            for_model.push_str("Output so far:\n");
            for_model.push_str(&read.output);
        }
    }
    let (running, code) = match &read.status {
        Status::Running => (true, None),
        Status::Exited { code, .. } => (false, *code),
    };
    let ok = running || code == Some(0);
    let mut raw = json!({
        "command": a.command, "background": true, "id": job.id, "running": running, "exitCode": code,
        "output": read.output,
    });
    let content = match terminal {
        Some(id) => {
            if let Some(raw) = raw.as_object_mut() {
                raw.insert("terminalId".into(), json!(id));
            }
            vec![ToolContent::Terminal(id)]
        }
        None => vec![ToolContent::Text(format!(
            "{}[id: {}: {}]",
            with_newline(&read.output),
            job.id,
            read.status.describe()
        ))],
    };
    Ok(Output { for_model, content, raw, ok, images: Vec::new() })
}

fn with_newline(text: &str) -> String {
    match text.is_empty() || text.ends_with('\n') {
        true => text.to_string(),
        false => format!("{text}\n"),
    }
}
