//! update_plan: the model's checklist, shown to the user as a `plan` update.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::{PlanItem, PlanPriority, PlanStatus, ToolKind};
use crate::provider::ToolSpec;

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

pub struct UpdatePlan;

impl Tool for UpdatePlan {
    fn name(&self) -> &str {
        "update_plan"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "update_plan",
            "Show the user your plan as a checklist. Send the full list every time.",
            json!({"type":"object","properties":{"entries":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"priority":{"type":"string","enum":["high","medium","low"]},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["entries"]}),
        )
    }

    fn announce(&self, _args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        Ok(Announce { kind: ToolKind::Think, title: "Update plan".into(), locations: vec![], needs: Needs::Nothing })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let plan = plan(args)?;
            let count = plan.len();
            cx.updates.plan(plan).await;
            Ok(Output::text(format!("Plan updated ({count} entries)"), json!({ "entries": count })))
        })
    }
}

/// The full plan to send.
fn plan(args: &Value) -> Result<Vec<PlanItem>, ToolError> {
    let a: PlanArgs = parse_args("update_plan", args)?;
    let mut entries = Vec::with_capacity(a.entries.len());
    for e in a.entries {
        let priority = match e.priority.as_deref().unwrap_or("medium") {
            "high" => PlanPriority::High,
            "low" => PlanPriority::Low,
            _ => PlanPriority::Medium,
        };
        let status = match e.status.as_str() {
            "pending" => PlanStatus::Pending,
            "in_progress" => PlanStatus::InProgress,
            "completed" => PlanStatus::Completed,
            other => {
                return Err(ToolError::Failed(format!(
                    "unknown plan status `{other}` (pending, in_progress, completed)"
                )));
            }
        };
        entries.push(PlanItem { content: e.content, priority, status });
    }
    Ok(entries)
}
