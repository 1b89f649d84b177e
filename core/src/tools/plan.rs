//! update_plan: the model's checklist, shown to the user as a `plan` update.

use agent_client_protocol_schema::v1 as acp;
use serde::Deserialize;
use serde_json::Value;

use super::{ToolError, parse_args};

#[derive(Deserialize)]
struct Entry {
    content: String,
    #[serde(default)]
    priority: Option<String>,
    status: String,
}

#[derive(Deserialize)]
struct PlanArgs {
    entries: Vec<Entry>,
}

/// The full plan to send.
pub fn plan(args: &Value) -> Result<acp::Plan, ToolError> {
    let a: PlanArgs = parse_args("update_plan", args)?;
    let mut entries = Vec::with_capacity(a.entries.len());
    for e in a.entries {
        let priority = match e.priority.as_deref().unwrap_or("medium") {
            "high" => acp::PlanEntryPriority::High,
            "low" => acp::PlanEntryPriority::Low,
            _ => acp::PlanEntryPriority::Medium,
        };
        let status = match e.status.as_str() {
            "pending" => acp::PlanEntryStatus::Pending,
            "in_progress" => acp::PlanEntryStatus::InProgress,
            "completed" => acp::PlanEntryStatus::Completed,
            other => {
                return Err(ToolError::Failed(format!(
                    "unknown plan status `{other}` (pending, in_progress, completed)"
                )));
            }
        };
        entries.push(acp::PlanEntry::new(e.content, priority, status));
    }
    Ok(acp::Plan::new(entries))
}
