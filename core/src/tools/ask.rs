//! ask_user: the model asks the user a question mid-turn.
//!
//! Through `elicitation/create` (a form with one `answer` field, an enum when there are
//! choices) when the client advertises form elicitation; otherwise through
//! `session/request_permission` with one option per choice. A free-form question without
//! elicitation fails at once: there is no honest way to ask it.

use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Needs, Output, ToolError, parse_args};
use crate::rpc::{Peer, RpcError};

/// Most choices offered in one question.
const MAX_CHOICES: usize = 10;

#[derive(Deserialize)]
struct Args {
    question: String,
    #[serde(default)]
    choices: Vec<String>,
}

/// The client's ways of asking, for one session.
pub struct Asking<'a> {
    pub peer: &'a Peer,
    pub session_id: &'a str,
    pub tool_call_id: &'a str,
    /// How long the user has to answer.
    pub deadline: Duration,
    /// The client advertised `elicitation.form`.
    pub form: bool,
}

/// What came of a question.
pub enum Answer {
    /// What the model reads.
    Said(Output),
    /// The user cancelled the turn while the question was open (permission fallback).
    Cancelled,
}

pub fn announce(args: &Value) -> Result<Announce, ToolError> {
    let a = parse(args)?;
    Ok(Announce {
        kind: acp::ToolKind::Other,
        title: format!("Ask: {}", a.question),
        locations: vec![],
        needs: Needs::Nothing,
    })
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

pub async fn ask(args: &Value, how: &Asking<'_>) -> Result<Answer, ToolError> {
    let a = parse(args)?;
    if how.form {
        return by_form(&a, how).await.map(Answer::Said);
    }
    if a.choices.is_empty() {
        return Err(ToolError::Failed(
            "this editor cannot show free-form questions (it does not support elicitation forms): offer choices, \
             or ask in your answer and end the turn"
                .into(),
        ));
    }
    by_permission(&a, how).await
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

async fn by_form(a: &Args, how: &Asking<'_>) -> Result<Output, ToolError> {
    let mut field = acp::StringPropertySchema::new().title("Answer".to_string());
    if !a.choices.is_empty() {
        field = field.enum_values(a.choices.clone());
    }
    let schema = acp::ElicitationSchema::new().property("answer", field, true);
    let scope = acp::ElicitationSessionScope::new(how.session_id.to_string())
        .tool_call_id(acp::ToolCallId::new(how.tool_call_id.to_string()));
    let request = acp::CreateElicitationRequest::new(
        acp::ElicitationMode::Form(acp::ElicitationFormMode::new(scope, schema)),
        a.question.clone(),
    );
    let reply = match how.peer.request("elicitation/create", &request, how.deadline).await {
        Ok(v) => v,
        Err(RpcError::Timeout { secs, .. }) => {
            return Ok(not_answered(&a.question, &format!("no answer within {secs} s")));
        }
        Err(e) => return Err(ToolError::Failed(format!("the question could not be shown: {e}"))),
    };
    match reply.get("action").and_then(Value::as_str) {
        Some("accept") => match reply.pointer("/content/answer") {
            Some(Value::String(s)) => Ok(answered(&a.question, s)),
            Some(other) => Ok(answered(&a.question, &other.to_string())),
            None => Ok(not_answered(&a.question, "the form came back empty")),
        },
        Some("decline") => Ok(not_answered(&a.question, "the user declined to answer")),
        _ => Ok(not_answered(&a.question, "the user dismissed the question")),
    }
}

async fn by_permission(a: &Args, how: &Asking<'_>) -> Result<Answer, ToolError> {
    let mut options: Vec<acp::PermissionOption> = a
        .choices
        .iter()
        .enumerate()
        .map(|(i, c)| {
            acp::PermissionOption::new(format!("choice-{i}"), c.clone(), acp::PermissionOptionKind::AllowOnce)
        })
        .collect();
    options.push(acp::PermissionOption::new("no-answer", "Don't answer", acp::PermissionOptionKind::RejectOnce));
    let fields = acp::ToolCallUpdateFields::new().title(a.question.clone()).kind(acp::ToolKind::Other);
    let request = acp::RequestPermissionRequest::new(
        how.session_id.to_string(),
        acp::ToolCallUpdate::new(how.tool_call_id.to_string(), fields),
        options,
    );
    let reply = match how.peer.request("session/request_permission", &request, how.deadline).await {
        Ok(v) => v,
        Err(RpcError::Timeout { secs, .. }) => {
            return Ok(Answer::Said(not_answered(&a.question, &format!("no answer within {secs} s"))));
        }
        Err(e) => return Err(ToolError::Failed(format!("the question could not be shown: {e}"))),
    };
    match reply.pointer("/outcome/outcome").and_then(Value::as_str) {
        Some("cancelled") => Ok(Answer::Cancelled),
        _ => {
            let chosen = reply.pointer("/outcome/optionId").and_then(Value::as_str).unwrap_or("");
            let choice =
                chosen.strip_prefix("choice-").and_then(|i| i.parse::<usize>().ok()).and_then(|i| a.choices.get(i));
            Ok(Answer::Said(match choice {
                Some(c) => answered(&a.question, c),
                None => not_answered(&a.question, "the user chose not to answer"),
            }))
        }
    }
}
