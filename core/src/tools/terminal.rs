//! run_command in a terminal of the client (`terminal/*`), used when the client advertises
//! `terminal`: the user watches the command live in their editor, which keeps the output
//! visible after the call ends.
//!
//! The same limits as the local path apply: the timeout, the output cap (the client truncates
//! from the start), a kill on cancel, and provider keys blanked in the command's environment
//! (the client starts it from its own environment, which we cannot strip, only override).

use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::shell::{Args, Ended, outcome, secret_vars};
use super::{Jail, Output, ToolError, parse_args};
use crate::rpc::Peer;

/// The client's terminals, for one session.
#[derive(Clone)]
pub struct ClientTerminal {
    pub peer: Peer,
    pub session_id: String,
    /// Deadline of the short requests (create, output, kill, release).
    pub deadline: Duration,
}

/// Runs the command in a client terminal. `created` is called with the terminal id as soon as
/// it exists, so the tool card can embed the live terminal.
pub async fn run(
    args: &Value,
    jail: &Jail,
    client: &ClientTerminal,
    created: impl AsyncFnOnce(&str),
    cancel: &CancellationToken,
) -> Result<(Output, bool), ToolError> {
    let a: Args = parse_args("run_command", args)?;
    let timeout = a.timeout();
    let env = secret_vars().into_iter().map(|v| acp::EnvVariable::new(v, "")).collect();
    let request = acp::CreateTerminalRequest::new(client.session_id.clone(), "sh")
        .args(vec!["-c".to_string(), a.command.clone()])
        .env(env)
        .cwd(PathBuf::from(jail.cwd()))
        .output_byte_limit(super::shell::OUTPUT_CAP as u64);
    let answer = client
        .peer
        .request("terminal/create", &request, client.deadline)
        .await
        .map_err(|e| ToolError::Failed(format!("the editor could not start a terminal: {e}")))?;
    let Some(terminal_id) = answer.get("terminalId").and_then(Value::as_str).map(str::to_string) else {
        return Err(ToolError::Failed("the editor's terminal/create answer had no terminalId".into()));
    };
    created(&terminal_id).await;

    let ids = json!({ "sessionId": client.session_id, "terminalId": terminal_id });
    // The wait itself may take as long as the command is allowed to run.
    let wait = client.peer.request("terminal/wait_for_exit", &ids, timeout + client.deadline);
    let ended = tokio::select! {
        biased;
        () = cancel.cancelled() => Ended::Cancelled,
        () = tokio::time::sleep(timeout) => Ended::TimedOut,
        exit = wait => match exit {
            Ok(v) => Ended::Exited(v.get("exitCode").and_then(Value::as_i64).map(|c| c as i32)),
            Err(e) => return Err(ToolError::Failed(format!("waiting for the command failed: {e}"))),
        },
    };
    if matches!(ended, Ended::Cancelled) {
        // The turn is over; kill and release without holding up its response.
        let (peer, deadline) = (client.peer.clone(), client.deadline);
        tokio::spawn(async move {
            let _ = peer.request("terminal/kill", &ids, deadline).await;
            let _ = peer.request("terminal/release", &ids, deadline).await;
        });
        return Err(ToolError::Failed("cancelled".into()));
    }
    if matches!(ended, Ended::TimedOut) {
        let _ = client.peer.request("terminal/kill", &ids, client.deadline).await;
    }
    let output = client.peer.request("terminal/output", &ids, client.deadline).await;
    // The card already embeds the terminal (sent in `created`), as the spec requires before
    // release; the client keeps showing its output afterwards.
    let _ = client.peer.request("terminal/release", &ids, client.deadline).await;
    let (text, truncated) = match &output {
        Ok(v) => (
            v.get("output").and_then(Value::as_str).unwrap_or("").to_string(),
            v.get("truncated").and_then(Value::as_bool).unwrap_or(false),
        ),
        Err(e) => (format!("[the output could not be read: {e}]"), false),
    };
    let (summary, ok, code) = outcome(&ended, timeout);
    let mut for_model = String::new();
    if truncated {
        for_model.push_str("[the start of the output was cut off]\n");
    }
    for_model.push_str(&text);
    if !for_model.is_empty() && !for_model.ends_with('\n') {
        for_model.push('\n');
    }
    for_model.push_str(&format!("[{summary}]"));
    let raw = json!({ "command": a.command, "exitCode": code, "outcome": summary, "terminalId": terminal_id, "truncated": truncated });
    let content = vec![acp::ToolCallContent::Terminal(acp::Terminal::new(terminal_id))];
    Ok((Output { for_model, content, raw }, ok))
}
