//! run_command in a terminal of the client (`terminal/*`), used when the client advertises
//! `terminal`: the user watches the command live in their editor, which keeps the output
//! visible after the call ends.
//!
//! The same limits as the local path apply: the timeout, the output cap (the client truncates
//! from the start), a kill on cancel, provider keys blanked in the command's environment
//! (the client starts it from its own environment, which we cannot strip, only override), and
//! the sandbox: the client is asked to run the launcher (`corvid sandbox -- sh -c CMD`, or the
//! addon's `node sandbox-launcher.cjs sandbox -- …`) with the variables it needs, the policy
//! among them (out of the command line its user reads).

use std::path::PathBuf;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};

use super::shell::{Args, Ended, outcome, secret_vars, temp_dir_failed};
use super::{Output, ToolContext, ToolError, parse_args};
use crate::editor::{EditorClient, EditorError};
use crate::event::ToolContent;
use crate::sandbox::Launch;

/// Runs the command in a client terminal, embedded in the call's card as soon as it exists.
/// `sandbox`: the launch of this call (its escalation applied), `None` to run unconfined.
pub async fn run(args: &Value, cx: &ToolContext<'_>, sandbox: Option<&Launch>) -> Result<Output, ToolError> {
    let a: Args = parse_args("run_command", args)?;
    let timeout = a.timeout();
    let mut env: Vec<acp::EnvVariable> = secret_vars().into_iter().map(|v| acp::EnvVariable::new(v, "")).collect();
    // Under the sandbox the editor runs the launcher, which confines itself and then the
    // command: the terminal shows the live command while the confinement holds. The
    // launcher's own variables (Electron's switch to Node, for the addon's) go with it.
    let (program, argv) = match sandbox {
        Some(launch) => {
            let launch = launch.argv(&a.command).await.map_err(temp_dir_failed)?;
            env.extend(launch.env.iter().map(|(name, value)| acp::EnvVariable::new(name, value)));
            (launch.program, launch.args)
        }
        None => crate::process::shell_argv(&a.command),
    };
    let request = acp::CreateTerminalRequest::new(cx.editor.session_id().to_string(), program)
        .args(argv)
        .env(env)
        .cwd(PathBuf::from(cx.jail.cwd()))
        .output_byte_limit(super::shell::TERMINAL_OUTPUT_LIMIT as u64);
    let terminal_id = match cx.editor.create_terminal(&request).await {
        Ok(id) => id,
        Err(EditorError::Cancelled) => return Err(ToolError::Cancelled),
        Err(e) => return Err(ToolError::Failed(format!("the editor could not start a terminal: {e}"))),
    };
    // On screen before the command can finish and the terminal be released.
    cx.updates.show(vec![ToolContent::Terminal(terminal_id.clone())], true).await;

    let ended = tokio::select! {
        biased;
        () = cx.cancel.cancelled() => Ended::Cancelled,
        () = tokio::time::sleep(timeout) => Ended::TimedOut,
        exit = cx.editor.wait_for_exit(&terminal_id, timeout) => match exit {
            Ok(status) => Ended::Exited(status.exit_code.map(|c| c as i32)),
            Err(EditorError::Cancelled) => Ended::Cancelled,
            Err(e) => return Err(ToolError::Failed(format!("waiting for the command failed: {e}"))),
        },
    };
    // Clean-up goes through the editor without the turn's token: a cancel must not leave the
    // terminal running or unreleased. The turn itself does not wait for it once cancelled.
    let cleanup = cx.editor.detached();
    if matches!(ended, Ended::Cancelled) {
        release_later(cleanup, terminal_id, true);
        return Err(ToolError::Cancelled);
    }
    let finish = async {
        if matches!(ended, Ended::TimedOut) {
            let _ = cleanup.kill_terminal(&terminal_id).await;
        }
        let output = cleanup.terminal_output(&terminal_id).await;
        // The card already embeds the terminal (above), as the spec requires before release;
        // the client keeps showing its output afterwards.
        let _ = cleanup.release_terminal(&terminal_id).await;
        output
    };
    let output = tokio::select! {
        biased;
        () = cx.cancel.cancelled() => {
            release_later(cleanup.clone(), terminal_id.clone(), false);
            return Err(ToolError::Cancelled);
        }
        output = finish => output,
    };
    let (text, truncated) = match output {
        Ok(o) => (o.output, o.truncated),
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
    // The output too, for clients that do not draw terminals (already capped: the client
    // keeps at most `outputByteLimit` bytes).
    let raw = json!({
        "command": a.command, "exitCode": code, "outcome": summary, "terminalId": terminal_id,
        "truncated": truncated, "output": text,
    });
    let content = vec![ToolContent::Terminal(terminal_id)];
    Ok(Output { for_model, content, raw, ok, images: Vec::new() })
}

/// Kills (if `kill`) and releases the terminal in the background, after the turn has answered.
fn release_later(editor: EditorClient, terminal_id: String, kill: bool) {
    tokio::spawn(async move {
        if kill {
            let _ = editor.kill_terminal(&terminal_id).await;
        }
        let _ = editor.release_terminal(&terminal_id).await;
    });
}
