//! One prompt turn: the user's message goes to the model, the streamed answer goes out as
//! `session/update`s, and the turn ends with exactly one stop reason.
//!
//! Cancellation: every await in here races the turn's token. Once it fires the turn returns
//! at once without sending anything more, so no update of a cancelled turn can follow its
//! `session/prompt` response (the response is queued after the turn's last update).

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use tokio_util::sync::CancellationToken;

use super::session::TurnClaim;
use crate::config::Config;
use crate::provider::openai::{RetryPolicy, Started, start_chat};
use crate::provider::{ChatMessage, FinishReason, ModelEvent, Role};
use crate::rpc::{Peer, RpcError};

/// Everything a turn needs besides the session itself.
pub struct TurnContext {
    pub peer: Peer,
    pub http: reqwest::Client,
    pub config: Arc<Config>,
}

/// Sends one `session/update`, giving up if the turn is cancelled while the queue is full.
/// Returns `false` when the turn must stop sending.
pub async fn send_update(
    peer: &Peer,
    session_id: &str,
    update: acp::SessionUpdate,
    cancel: &CancellationToken,
) -> bool {
    if cancel.is_cancelled() {
        return false;
    }
    let notification = acp::SessionNotification::new(session_id.to_string(), update);
    tokio::select! {
        biased;
        () = cancel.cancelled() => false,
        sent = peer.notify("session/update", &notification) => sent.is_ok(),
    }
}

fn chunk(text: String, message_id: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(acp::ContentBlock::from(text)).message_id(acp::MessageId::new(message_id.to_string()))
}

pub async fn run_turn(claim: TurnClaim, user_text: String, ctx: TurnContext) -> Result<acp::StopReason, RpcError> {
    let session = claim.session.clone();
    let cancel = claim.cancel.clone();
    let (model, messages) = {
        let mut state = session.state();
        state.history.push(ChatMessage { role: Role::User, content: user_text });
        (state.model.clone(), state.history.clone())
    };
    let retry = RetryPolicy {
        max_retries: ctx.config.max_retries,
        base_delay: Duration::from_millis(250),
        max_delay: Duration::from_secs(8),
    };

    let message_id = uuid::Uuid::new_v4().to_string();
    let thought_id = uuid::Uuid::new_v4().to_string();
    let mut answer = String::new();
    let outcome = async {
        let mut stream = match start_chat(
            &ctx.http,
            &session.source.endpoint,
            &model,
            &messages,
            &retry,
            ctx.config.stall_timeout,
            &cancel,
        )
        .await?
        {
            Started::Stream(s) => s,
            Started::Cancelled => return Ok(acp::StopReason::Cancelled),
        };
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
                    acp::SessionUpdate::AgentMessageChunk(chunk(t, &message_id))
                }
                Some(Ok(ModelEvent::Reasoning(r))) => acp::SessionUpdate::AgentThoughtChunk(chunk(r, &thought_id)),
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
            if !send_update(&ctx.peer, &session.id, update, &cancel).await {
                return Ok(acp::StopReason::Cancelled);
            }
        }
        Ok(match finish {
            Some(FinishReason::Length) => acp::StopReason::MaxTokens,
            Some(FinishReason::ContentFilter) => acp::StopReason::Refusal,
            _ => acp::StopReason::EndTurn,
        })
    }
    .await;
    // A cancel that raced the end of the stream still wins: the client was promised `cancelled`.
    let outcome = if cancel.is_cancelled() { Ok(acp::StopReason::Cancelled) } else { outcome };

    // Keep what the user saw in the context, even for a cancelled or failed turn; a refusal
    // drops the prompt too, as the protocol says the client will.
    let mut state = session.state();
    match &outcome {
        Ok(acp::StopReason::Refusal) => {
            state.history.pop();
        }
        _ if !answer.is_empty() => state.history.push(ChatMessage { role: Role::Assistant, content: answer }),
        _ => {}
    }
    drop(state);
    drop(claim);
    outcome
}
