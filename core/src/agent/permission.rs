//! Deciding whether a tool call may run: the session's mode, its "always" rules, and
//! otherwise the user, through `session/request_permission`.
//!
//! Reject is not cancel: a rejected call goes back to the model as declined and the turn goes
//! on; a `cancelled` outcome ends the turn. No answer in time counts as reject (fail closed).

use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::session::Session;
use crate::rpc::{Peer, RpcError};
use crate::store::time::now_rfc3339;
use crate::store::writer::{LedgerTx, Record};
use crate::tools::{Announce, Needs};

/// The session modes, in the order offered.
pub const MODES: &[(&str, &str, &str)] = &[
    ("read-only", "Read only", "Reads and searches; no edits, no commands"),
    ("ask", "Ask", "Asks before every edit and command"),
    ("auto-edit", "Auto edit", "Edits files in the workspace without asking; asks before commands"),
    ("full", "Full access", "Never asks; the workspace jail still holds"),
];
pub const DEFAULT_MODE: &str = "ask";

/// A remembered "always" answer, scoped to one tool and an exact path or a command prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub tool: String,
    pub scope: String,
    pub allow: bool,
}

impl Rule {
    fn matches(&self, tool: &str, needs: &Needs) -> bool {
        self.tool == tool
            && match needs {
                Needs::Edit(path) | Needs::Mcp(path) => *path == self.scope,
                Needs::Command(cmd) => cmd == &self.scope || cmd.starts_with(&format!("{} ", self.scope)),
                Needs::Nothing => false,
            }
    }
}

pub enum Decision {
    Allow,
    /// Not run; the reason goes to the model and the tool card.
    Reject(String),
    /// The user cancelled: the turn ends.
    Cancelled,
}

/// What the user sees as a message when the client cannot answer permission requests.
pub const NO_PERMISSION_SUPPORT: &str = "Corvid asked for permission to run a tool, but this editor does not support \
permission requests (it answered `session/request_permission` with -32601). The tool call was rejected; switch the \
session mode to `auto-edit` or `full` to let Corvid act without asking.";

pub struct Asker<'a> {
    pub peer: &'a Peer,
    /// Where "always" answers are made durable.
    pub ledger: &'a LedgerTx,
    pub deadline: Duration,
    pub cancel: &'a CancellationToken,
}

/// Returns the decision and, when the client could not answer at all, a note for the user.
pub async fn decide(
    session: &Session,
    tool: &str,
    call_id: &str,
    announce: &Announce,
    args: &Value,
    preview: Vec<acp::ToolCallContent>,
    asker: &Asker<'_>,
) -> (Decision, Option<&'static str>) {
    if announce.needs == Needs::Nothing {
        return (Decision::Allow, None);
    }
    let mode = session.state().mode.clone();
    match (mode.as_str(), &announce.needs) {
        ("read-only", _) => return (Decision::Reject("the session is in read-only mode".into()), None),
        ("full", _) | ("auto-edit", Needs::Edit(_)) => return (Decision::Allow, None),
        _ => {}
    }
    if let Some(rule) = session.state().rules.iter().find(|r| r.matches(tool, &announce.needs)) {
        return if rule.allow {
            (Decision::Allow, None)
        } else {
            (Decision::Reject("the user always rejects this".into()), None)
        };
    }
    let fields = acp::ToolCallUpdateFields::new()
        .title(announce.title.clone())
        .kind(announce.kind)
        .status(acp::ToolCallStatus::Pending)
        .locations(announce.locations.clone())
        .raw_input(args.clone());
    // What would change (an edit's diff), so the user decides on the real thing.
    let fields = if preview.is_empty() { fields } else { fields.content(preview) };
    let options = vec![
        acp::PermissionOption::new("allow_once", "Allow", acp::PermissionOptionKind::AllowOnce),
        acp::PermissionOption::new(
            "allow_always",
            always_label(&announce.needs, true),
            acp::PermissionOptionKind::AllowAlways,
        ),
        acp::PermissionOption::new("reject_once", "Reject", acp::PermissionOptionKind::RejectOnce),
        acp::PermissionOption::new(
            "reject_always",
            always_label(&announce.needs, false),
            acp::PermissionOptionKind::RejectAlways,
        ),
    ];
    let request = acp::RequestPermissionRequest::new(
        session.id.clone(),
        acp::ToolCallUpdate::new(call_id.to_string(), fields),
        options,
    );
    let answer = tokio::select! {
        biased;
        () = asker.cancel.cancelled() => return (Decision::Cancelled, None),
        a = asker.peer.request("session/request_permission", &request, asker.deadline) => a,
    };
    let outcome = match answer {
        Ok(v) => v,
        Err(RpcError::Timeout { secs, .. }) => {
            return (Decision::Reject(format!("no answer to the permission request within {secs} s")), None);
        }
        Err(RpcError::Remote { error, .. }) if i32::from(error.code) == -32601 => {
            return (
                Decision::Reject("the editor cannot answer permission requests".into()),
                Some(NO_PERMISSION_SUPPORT),
            );
        }
        Err(e) => return (Decision::Reject(format!("the permission request failed: {e}")), None),
    };
    match outcome.pointer("/outcome/outcome").and_then(Value::as_str) {
        Some("cancelled") => (Decision::Cancelled, None),
        Some("selected") => {
            let option = outcome.pointer("/outcome/optionId").and_then(Value::as_str).unwrap_or("");
            let scope = match &announce.needs {
                Needs::Edit(p) | Needs::Mcp(p) => p.clone(),
                Needs::Command(c) => c.clone(),
                Needs::Nothing => String::new(),
            };
            match option {
                "allow_once" => (Decision::Allow, None),
                "allow_always" => {
                    remember_rule(session, asker.ledger, Rule { tool: tool.into(), scope, allow: true }).await;
                    (Decision::Allow, None)
                }
                "reject_always" => {
                    remember_rule(session, asker.ledger, Rule { tool: tool.into(), scope, allow: false }).await;
                    (Decision::Reject("the user declined (always)".into()), None)
                }
                _ => (Decision::Reject("the user declined".into()), None),
            }
        }
        _ => (Decision::Reject("the permission answer was not understood".into()), None),
    }
}

/// Keeps an "always" answer for the session, in memory and in the store.
async fn remember_rule(session: &Session, ledger: &LedgerTx, rule: Rule) {
    let record = Record::Rule {
        session_id: session.id.clone(),
        tool: rule.tool.clone(),
        scope: rule.scope.clone(),
        allow: rule.allow,
        at: now_rfc3339(),
    };
    session.state().rules.push(rule);
    ledger.push(record).await;
}

fn always_label(needs: &Needs, allow: bool) -> String {
    let verb = if allow { "Always allow" } else { "Always reject" };
    match needs {
        Needs::Edit(path) => format!("{verb} edits to {path}"),
        Needs::Command(cmd) => format!("{verb} `{cmd}`"),
        Needs::Mcp(tool) => format!("{verb} {tool}"),
        Needs::Nothing => verb.to_string(),
    }
}
