//! One prompt turn: the user's message goes to the model, the streamed answer goes out as
//! `session/update`s through the ledger, and the turn ends with exactly one stop reason.
//!
//! Cancellation: every await in here races the turn's token. Once it fires the turn stops
//! emitting, flushes the ledger (so what was already queued reaches the client) and only then
//! answers, so no update of a cancelled turn can follow its `session/prompt` response.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use super::ledger::{emit, record_message, text_chunk};
use super::session::{Session, TurnClaim};
use crate::config::Config;
use crate::provider::openai::{RetryPolicy, Started, start_chat};
use crate::provider::{ChatMessage, FinishReason, ModelEvent, Role};
use crate::rpc::RpcError;
use crate::store::process;
use crate::store::time::now_rfc3339;
use crate::store::writer::{LedgerTx, Record};

/// Everything a turn needs besides the session itself.
pub struct TurnContext {
    pub ledger: LedgerTx,
    pub http: reqwest::Client,
    pub config: Arc<Config>,
}

/// The prompt as the turn receives it.
pub struct UserPrompt {
    /// What the model reads.
    pub text: String,
    /// The blocks as the client sent them (replayed as `user_message_chunk`s).
    pub blocks: Vec<acp::ContentBlock>,
}

/// Longest session title taken from a first prompt.
const TITLE_CHARS: usize = 80;

/// A title from the first prompt: its first non-empty line, trimmed, at most 80 characters.
pub fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    Some(title)
}

pub async fn run_turn(claim: TurnClaim, prompt: UserPrompt, ctx: TurnContext) -> Result<acp::StopReason, RpcError> {
    let session = claim.session.clone();
    let cancel = claim.cancel.clone();
    let turn = claim.number as i64;
    let ledger = &ctx.ledger;

    ledger
        .push(Record::TurnStart {
            session_id: session.id.clone(),
            turn,
            owner: process::me().clone(),
            at: now_rfc3339(),
        })
        .await;
    let user_message = ChatMessage { role: Role::User, content: prompt.text.clone() };
    record_message(ledger, &session, &user_message).await;
    let user_id = uuid::Uuid::new_v4().to_string();
    for block in prompt.blocks {
        let chunk = acp::ContentChunk::new(block).message_id(acp::MessageId::new(user_id.clone()));
        emit(ledger, &session, Some(turn), &acp::SessionUpdate::UserMessageChunk(chunk), false).await;
    }
    announce_title(ledger, &session, turn, &prompt.text).await;

    let (model, messages) = {
        let mut state = session.state();
        state.history.push(user_message);
        (state.model.clone(), state.history.clone())
    };

    let mut answer = String::new();
    let outcome = stream_answer(&session, &ctx, turn, &model, &messages, &cancel, &mut answer).await;
    // A cancel that raced the end of the stream still wins: the client was promised `cancelled`.
    let outcome = if cancel.is_cancelled() { Ok(acp::StopReason::Cancelled) } else { outcome };

    // Keep what the user saw in the context, even for a cancelled or failed turn; a refusal
    // drops the prompt too, as the protocol says the client will.
    let assistant = {
        let mut state = session.state();
        match &outcome {
            Ok(acp::StopReason::Refusal) => {
                state.history.pop();
                None
            }
            _ if !answer.is_empty() => {
                let m = ChatMessage { role: Role::Assistant, content: answer };
                state.history.push(m.clone());
                Some(m)
            }
            _ => None,
        }
    };
    if let Some(m) = assistant {
        record_message(ledger, &session, &m).await;
    }
    let stop_reason =
        outcome.as_ref().ok().map(|r| serde_json::to_value(r).ok().and_then(|v| v.as_str().map(String::from)));
    ledger
        .push(Record::TurnEnd {
            session_id: session.id.clone(),
            turn,
            status: "finished",
            stop_reason: stop_reason.flatten(),
            at: now_rfc3339(),
        })
        .await;
    // Durable, and every frame of this turn handed to the client, before the response.
    ledger.flush().await;
    drop(claim);
    outcome
}

/// The first prompt of a session names it.
async fn announce_title(ledger: &LedgerTx, session: &Session, turn: i64, text: &str) {
    let title = {
        let mut state = session.state();
        if state.title.is_some() {
            return;
        }
        let Some(title) = title_from(text) else { return };
        state.title = Some(title.clone());
        title
    };
    ledger.push(Record::Title { session_id: session.id.clone(), title: title.clone() }).await;
    let info = acp::SessionInfoUpdate::new().title(title).updated_at(now_rfc3339());
    emit(ledger, session, Some(turn), &acp::SessionUpdate::SessionInfoUpdate(info), true).await;
}

async fn stream_answer(
    session: &Session,
    ctx: &TurnContext,
    turn: i64,
    model: &str,
    messages: &[ChatMessage],
    cancel: &CancellationToken,
    answer: &mut String,
) -> Result<acp::StopReason, RpcError> {
    let retry = RetryPolicy {
        max_retries: ctx.config.max_retries,
        base_delay: Duration::from_millis(250),
        max_delay: Duration::from_secs(8),
    };
    let started =
        start_chat(&ctx.http, &session.source.endpoint, model, messages, &retry, ctx.config.stall_timeout, cancel)
            .await?;
    let mut stream = match started {
        Started::Stream(s) => s,
        Started::Cancelled => return Ok(acp::StopReason::Cancelled),
    };
    let message_id = uuid::Uuid::new_v4().to_string();
    let thought_id = uuid::Uuid::new_v4().to_string();
    let mut finish = None;
    loop {
        let event = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(acp::StopReason::Cancelled),
            e = stream.next() => e,
        };
        let update = match event {
            None => break,
            Some(Err(e)) => return Err(RpcError::from(e)),
            Some(Ok(ModelEvent::Text(t))) => {
                answer.push_str(&t);
                acp::SessionUpdate::AgentMessageChunk(text_chunk(t, &message_id))
            }
            Some(Ok(ModelEvent::Reasoning(r))) => acp::SessionUpdate::AgentThoughtChunk(text_chunk(r, &thought_id)),
            Some(Ok(ModelEvent::Finish(reason))) => {
                finish = Some(reason);
                continue;
            }
            Some(Ok(ModelEvent::Usage { input_tokens, output_tokens })) => {
                tracing::debug!(input_tokens, output_tokens, "model usage");
                continue;
            }
            Some(Ok(ModelEvent::ToolCallDelta { .. })) => {
                // No tools are offered to the model yet; a stray tool call is ignored.
                tracing::debug!("model sent a tool call delta although no tools were offered");
                continue;
            }
        };
        let sent = tokio::select! {
            biased;
            () = cancel.cancelled() => false,
            ok = emit(&ctx.ledger, session, Some(turn), &update, true) => ok,
        };
        if !sent {
            return Ok(acp::StopReason::Cancelled);
        }
    }
    Ok(match finish {
        Some(FinishReason::Length) => acp::StopReason::MaxTokens,
        Some(FinishReason::ContentFilter) => acp::StopReason::Refusal,
        _ => acp::StopReason::EndTurn,
    })
}

#[cfg(test)]
mod tests {
    use super::title_from;

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title_from("\n  Fix the parser  \nmore").as_deref(), Some("Fix the parser"));
        assert_eq!(title_from("   \n ").as_deref(), None);
        let long = "x".repeat(100);
        assert_eq!(title_from(&long).map(|t| t.chars().count()), Some(81));
    }
}
