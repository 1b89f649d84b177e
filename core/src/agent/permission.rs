//! Deciding whether a tool call may run: the session's mode, its "always" rules, and
//! otherwise the user, through `session/request_permission`.
//!
//! Reject is not cancel: a rejected call goes back to the model as declined and the turn goes
//! on; a `cancelled` outcome (or the turn's cancel while the question is open) ends the turn.
//! No answer in time counts as reject (fail closed).

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use super::modes::{Rule, rule_key};
use super::session::Session;
use crate::agent::outbox::Outbox;
use crate::editor::{EditorClient, EditorError};
use crate::event::{ToolContent, ToolPatch, ToolStatus};
use crate::store::batch::Record;
use crate::store::time::now_rfc3339;
use crate::tools::review::{self, Part};
use crate::tools::{Announce, Needs};

pub enum Decision {
    Allow,
    /// Allowed with some of the change's hunks rejected (at least one kept): only the others
    /// are written (`tools::review`).
    AllowPart(Part),
    /// Not run; the reason goes to the model and the tool card.
    Reject(String),
    /// The user cancelled: the turn ends.
    Cancelled,
}

/// What the user sees as a message when the client cannot answer permission requests.
pub const NO_PERMISSION_SUPPORT: &str = "Corvid asked for permission to run a tool, but this editor does not support \
permission requests (it answered `session/request_permission` with -32601). The tool call was rejected; switch the \
session mode to `auto-edit` or `full` to let Corvid act without asking.";

/// The call a permission is asked for.
pub struct Question<'a> {
    pub tool: &'a str,
    pub call_id: &'a str,
    pub announce: &'a Announce,
    pub args: &'a Value,
    /// What would change (an edit's diff), so the user decides on the real thing.
    pub preview: Vec<ToolContent>,
    /// The subagent that asks (its title), named in the question so the user knows who.
    pub subagent: Option<&'a str>,
    /// The preview's change with its hunks (`rejected` empty), when the tool can write some of
    /// them only: the question numbers them and the answer may reject some
    /// (`_meta.corvid.rejectedHunks`).
    pub reviewed: Option<Part>,
}

/// The decision the session's mode or one of its "always" rules makes without asking anyone,
/// if any: then no preview needs working out.
pub fn settled(session: &Session, tool: &str, needs: &Needs) -> Option<Decision> {
    if *needs == Needs::Nothing {
        return Some(Decision::Allow);
    }
    let mode = session.state().mode;
    match mode.decides(needs) {
        Some(false) => return Some(Decision::Reject(format!("the session is in {} mode", mode.id()))),
        Some(true) => return Some(Decision::Allow),
        None => {}
    }
    let state = session.state();
    let rule = state.rules.iter().find(|r| r.matches(tool, needs))?;
    Some(if rule.allow { Decision::Allow } else { Decision::Reject("the user always rejects this".into()) })
}

/// Returns the decision and, when the client could not answer at all, a note for the user.
/// "Always" answers are remembered through `outbox`.
pub async fn decide(
    session: &Session,
    q: Question<'_>,
    editor: &EditorClient,
    outbox: &Outbox,
) -> (Decision, Option<&'static str>) {
    if let Some(decision) = settled(session, q.tool, &q.announce.needs) {
        return (decision, None);
    }
    let call = ToolPatch {
        title: Some(match q.subagent {
            Some(name) => format!("Subagent “{name}”: {}", q.announce.title),
            None => q.announce.title.clone(),
        }),
        kind: Some(q.announce.kind),
        status: Some(ToolStatus::Pending),
        locations: Some(q.announce.locations.clone()),
        raw_input: Some(q.args.clone()),
        content: (!q.preview.is_empty()).then_some(q.preview),
        ..ToolPatch::new(q.call_id)
    };
    let needs = &q.announce.needs;
    let options = vec![
        acp::PermissionOption::new("allow_once", "Allow", acp::PermissionOptionKind::AllowOnce),
        acp::PermissionOption::new("allow_always", always_label(needs, true), acp::PermissionOptionKind::AllowAlways),
        acp::PermissionOption::new("reject_once", "Reject", acp::PermissionOptionKind::RejectOnce),
        acp::PermissionOption::new(
            "reject_always",
            always_label(needs, false),
            acp::PermissionOptionKind::RejectAlways,
        ),
    ];
    let hunks = q.reviewed.as_ref().map(|r| review::hunks_meta(&r.hunks));
    let answer = match editor.request_permission(&call, options, hunks).await {
        Ok(answer) => answer,
        Err(EditorError::Cancelled) => return (Decision::Cancelled, None),
        Err(EditorError::Timeout { secs, .. }) => {
            return (Decision::Reject(format!("no answer to the permission request within {secs} s")), None);
        }
        Err(e) if e.is_unsupported() => {
            return (
                Decision::Reject("the editor cannot answer permission requests".into()),
                Some(NO_PERMISSION_SUPPORT),
            );
        }
        Err(EditorError::Malformed { .. }) => {
            return (Decision::Reject("the permission answer was not understood".into()), None);
        }
        Err(e) => return (Decision::Reject(format!("the permission request failed: {e}")), None),
    };
    let option = match answer.outcome {
        acp::RequestPermissionOutcome::Selected(selected) => selected.option_id.0,
        _ => return (Decision::Cancelled, None),
    };
    let offered = q.reviewed.as_ref().map_or(0, |r| r.hunks.len());
    let allow = match (rejected_hunks(answer.meta.as_ref(), offered), q.reviewed) {
        (Ok(rejected), _) if rejected.is_empty() => Decision::Allow,
        (Ok(rejected), Some(reviewed)) => Decision::AllowPart(Part { rejected, ..reviewed }),
        (Ok(_), None) => Decision::Allow, // not reached: no hunks offered, none can be named
        (Err(Unusable::AllRejected), _) => Decision::Reject("the user rejected every part of the change".into()),
        (Err(Unusable::Malformed), _) => {
            return (Decision::Reject("the permission answer was not understood".into()), None);
        }
    };
    let scope = match needs {
        Needs::Edit(p) | Needs::Mcp(p) => p.clone(),
        Needs::Command(c) | Needs::Escalated { command: c, .. } => c.clone(),
        Needs::Fetch { host, .. } => host.clone(),
        Needs::Nothing => String::new(),
    };
    let tool = rule_key(q.tool, needs);
    match option.as_ref() {
        "allow_once" => (allow, None),
        "allow_always" => {
            remember_rule(session, outbox, Rule { tool, scope, allow: true }).await;
            (allow, None)
        }
        "reject_always" => {
            remember_rule(session, outbox, Rule { tool, scope, allow: false }).await;
            (Decision::Reject("the user declined (always)".into()), None)
        }
        _ => (Decision::Reject("the user declined".into()), None),
    }
}

/// Why an answer's rejected hunks cannot be used as they are.
enum Unusable {
    /// Every hunk rejected: nothing would be written, so the call is rejected.
    AllRejected,
    /// Not a list of `{"diff": 0, "hunk": n}` naming hunks the question offered.
    Malformed,
}

/// The hunks an answer rejects (`_meta.corvid.rejectedHunks`: `[{"diff": 0, "hunk": n}]`,
/// 0-based, the diff being the question's one reviewed change), sorted and once each. None
/// named is an ordinary answer.
fn rejected_hunks(meta: Option<&serde_json::Map<String, Value>>, offered: usize) -> Result<Vec<usize>, Unusable> {
    let Some(named) = meta.and_then(|m| m.get("corvid")).and_then(|c| c.get("rejectedHunks")) else {
        return Ok(Vec::new());
    };
    let items = named.as_array().ok_or(Unusable::Malformed)?;
    let mut rejected = Vec::with_capacity(items.len());
    for item in items {
        let diff = item.get("diff").and_then(Value::as_u64);
        let hunk = item.get("hunk").and_then(Value::as_u64).and_then(|h| usize::try_from(h).ok());
        match (diff, hunk) {
            (Some(0), Some(h)) if h < offered => rejected.push(h),
            _ => return Err(Unusable::Malformed),
        }
    }
    rejected.sort_unstable();
    rejected.dedup();
    if offered > 0 && rejected.len() == offered {
        return Err(Unusable::AllRejected);
    }
    Ok(rejected)
}

/// Keeps an "always" answer for the session, in memory and in the store.
async fn remember_rule(session: &Session, outbox: &Outbox, rule: Rule) {
    let record = Record::Rule {
        session_id: session.id.clone(),
        tool: rule.tool.clone(),
        scope: rule.scope.clone(),
        allow: rule.allow,
        at: now_rfc3339(),
    };
    session.state().rules.push(rule);
    outbox.push(record).await;
}

fn always_label(needs: &Needs, allow: bool) -> String {
    let verb = if allow { "Always allow" } else { "Always reject" };
    match needs {
        Needs::Edit(path) => format!("{verb} edits to {path}"),
        Needs::Command(cmd) => format!("{verb} `{cmd}`"),
        Needs::Escalated { command, escalation } => format!("{verb} `{command}` {}", escalation.phrase()),
        Needs::Mcp(tool) => format!("{verb} {tool}"),
        Needs::Fetch { host, private: false, .. } => format!("{verb} fetching from {host}"),
        Needs::Fetch { host, private: true, .. } => format!("{verb} fetching from {host} (a local or private address)"),
        Needs::Nothing => verb.to_string(),
    }
}
