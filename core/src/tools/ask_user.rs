//! ask_user: the model asks the user a question mid-turn.
//!
//! Through `elicitation/create` (a form with one `answer` field, an enum when there are
//! choices) when the client advertises form elicitation; otherwise through
//! `session/request_permission` with one option per choice. A free-form question without
//! elicitation fails at once (there is no honest way to ask it): the model is told to ask in its
//! answer, and the user's card says so in the user's words.

use agent_client_protocol_schema::v1 as acp;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::editor::EditorError;
use crate::event::{ToolContent, ToolKind, ToolPatch};
use crate::provider::ToolSpec;

/// Most choices offered in one question.
const MAX_CHOICES: usize = 10;

#[derive(Deserialize)]
struct Args {
    question: String,
    #[serde(default)]
    choices: Vec<String>,
}

pub struct AskUser;

/// The card's title, the same in every update and in the question.
fn title(question: &str) -> String {
    format!("Ask: {question}")
}

impl Tool for AskUser {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            "ask_user",
            "Ask the user a question and wait for the answer. Offer choices when you can; use sparingly.",
            json!({"type":"object","properties":{"question":{"type":"string"},"choices":{"type":"array","items":{"type":"string"},"maxItems":10}},"required":["question"]}),
        )
    }

    fn waits_for_user(&self) -> bool {
        true
    }

    fn announce(&self, args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        let a = parse(args)?;
        Ok(Announce { kind: ToolKind::Other, title: title(&a.question), locations: vec![], needs: Needs::Nothing })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let a = parse(args)?;
            if cx.editor.features().elicitation_form {
                return by_form(&a, cx).await;
            }
            if a.choices.is_empty() {
                return Ok(free_form_unavailable(&a.question));
            }
            by_permission(&a, cx).await
        })
    }
}

fn parse(args: &Value) -> Result<Args, ToolError> {
    let a: Args = parse_args("ask_user", args)?;
    if a.question.trim().is_empty() {
        return Err(ToolError::Arguments { tool: "ask_user".into(), reason: "question is empty".into() });
    }
    if a.choices.len() > MAX_CHOICES {
        return Err(ToolError::Arguments {
            tool: "ask_user".into(),
            reason: format!("at most {MAX_CHOICES} choices (got {})", a.choices.len()),
        });
    }
    Ok(a)
}

fn answered(question: &str, answer: &str) -> Output {
    Output::text(format!("The user answered: {answer}"), json!({ "question": question, "answer": answer }))
}

fn not_answered(question: &str, why: &str) -> Output {
    Output::text(
        format!("The user did not answer ({why})."),
        json!({ "question": question, "answer": null, "why": why }),
    )
}

/// A question without choices in an editor without forms: not asked. The model is told how to
/// ask instead; the user's card says, in the user's terms, what happened and shows the question.
fn free_form_unavailable(question: &str) -> Output {
    const WHY: &str = "this editor cannot show a question without choices";
    Output {
        for_model: "This editor cannot show free-form questions (it does not support elicitation forms): offer \
                    choices, or ask in your answer and end the turn."
            .into(),
        content: vec![ToolContent::Text(format!(
            "Not asked here ({WHY}); the agent will ask in its reply instead.\n\n> {question}"
        ))],
        raw: json!({ "question": question, "answer": null, "why": WHY }),
        ok: false,
        images: Vec::new(),
    }
}

/// What an unanswered question becomes: a timeout is an answer of sorts (the model hears the
/// user did not answer), a cancel ends the call, anything else fails it.
fn unanswered(a: &Args, error: EditorError) -> Result<Output, ToolError> {
    match error {
        EditorError::Timeout { secs, .. } => Ok(not_answered(&a.question, &format!("no answer within {secs} s"))),
        EditorError::Cancelled => Err(ToolError::Cancelled),
        e => Err(ToolError::Failed(format!("the question could not be shown: {e}"))),
    }
}

async fn by_form(a: &Args, cx: &ToolContext<'_>) -> Result<Output, ToolError> {
    let mut field = acp::StringPropertySchema::new().title("Answer".to_string());
    if !a.choices.is_empty() {
        field = field.enum_values(a.choices.clone());
    }
    let schema = acp::ElicitationSchema::new().property("answer", field, true);
    let scope = acp::ElicitationSessionScope::new(cx.editor.session_id().to_string())
        .tool_call_id(acp::ToolCallId::new(cx.call_id.to_string()));
    let request = acp::CreateElicitationRequest::new(
        acp::ElicitationMode::Form(acp::ElicitationFormMode::new(scope, schema)),
        a.question.clone(),
    );
    let action = match cx.editor.elicit(&request).await {
        Ok(action) => action,
        Err(e) => return unanswered(a, e),
    };
    Ok(match action {
        acp::ElicitationAction::Accept(accept) => {
            match accept.content.as_ref().and_then(|c| c.get("answer")).map(serde_json::to_value) {
                Some(Ok(Value::String(s))) => answered(&a.question, &s),
                Some(Ok(other)) => answered(&a.question, &other.to_string()),
                _ => not_answered(&a.question, "the form came back empty"),
            }
        }
        acp::ElicitationAction::Decline => not_answered(&a.question, "the user declined to answer"),
        _ => not_answered(&a.question, "the user dismissed the question"),
    })
}

/// Without forms, the choices become the options of a permission question.
async fn by_permission(a: &Args, cx: &ToolContext<'_>) -> Result<Output, ToolError> {
    let mut options: Vec<acp::PermissionOption> = a
        .choices
        .iter()
        .enumerate()
        .map(|(i, c)| {
            acp::PermissionOption::new(format!("choice-{i}"), c.clone(), acp::PermissionOptionKind::AllowOnce)
        })
        .collect();
    options.push(acp::PermissionOption::new("no-answer", "Don't answer", acp::PermissionOptionKind::RejectOnce));
    // The card's own title: a client that applies the question's fields to the card keeps it.
    let call = ToolPatch { title: Some(title(&a.question)), kind: Some(ToolKind::Other), ..ToolPatch::new(cx.call_id) };
    let outcome = match cx.editor.request_permission(&call, options, None).await {
        Ok(outcome) => outcome,
        Err(EditorError::Malformed { .. }) => {
            return Ok(not_answered(&a.question, "the editor's answer was not understood"));
        }
        Err(e) => return unanswered(a, e),
    };
    let chosen = match outcome.outcome {
        acp::RequestPermissionOutcome::Selected(selected) => selected.option_id.0,
        _ => {
            // The user cancelled the question: that cancels the turn, as for any permission (the
            // turn ends on this error: `Turn::tool_call`).
            return Err(ToolError::Cancelled);
        }
    };
    let choice = chosen.strip_prefix("choice-").and_then(|i| i.parse::<usize>().ok()).and_then(|i| a.choices.get(i));
    Ok(match choice {
        Some(c) => answered(&a.question, c),
        None => not_answered(&a.question, "the user chose not to answer"),
    })
}
