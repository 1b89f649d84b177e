//! Both sides of a `delegate` call inside turns: the parent's (wait for a slot, start the
//! child, announce it, run its turn, make its answer the call's result) and the child's first
//! step (the task arrives as a message from the parent). What is not about a turn (the limit,
//! making the child session) is `agent::subagent`.

use agent_client_protocol_schema::v1 as acp;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Turn, UserPrompt};
use crate::agent::modes::Mode;
use crate::agent::outbox::emit;
use crate::agent::subagent::Delegation;
use crate::agent::subagent::progress::Progress;
use crate::event::{Event, SessionMessage, StopReason, Subagent, SubagentState, ToolContent};
use crate::provider::{ChatMessage, Role};
use crate::tools::delegate::{Args, SubagentMode};
use crate::tools::{Output, ToolContext, ToolError};

/// Appended to a subagent's system prompt.
pub(super) const SUBAGENT_NOTE: &str = "\n\nYou are a subagent: another agent handed you the task in the next message \
and sees nothing of your work but your final message. Work on the task on your own, then end with one message that \
is your complete answer (findings, what you changed, what is left), written for that agent.";

/// A session message's header and its one text block, as two events.
fn message(header: SessionMessage, text: &str) -> [Event; 2] {
    let message_id = header.message_id.clone();
    [
        Event::SessionMessage(header),
        Event::SessionMessageChunk { message_id, content: acp::ContentBlock::from(text.to_string()) },
    ]
}

/// The child's answer: its last assistant message with text.
fn final_answer(history: &[ChatMessage]) -> String {
    history
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

impl Turn {
    /// The child's side: the task, stored (and sent, when the client knows subagents) as a
    /// message received from the parent, where an ordinary turn stores the user's prompt.
    pub(super) async fn receive_task(&self, d: &Delegation, message_id: &str, blocks: Vec<acp::ContentBlock>) {
        let header = SessionMessage {
            message_id: message_id.to_string(),
            sender: d.parent_id.clone(),
            recipient: self.session.id.clone(),
            other_message_id: Some(d.parent_message_id.clone()),
            incoming: true,
        };
        emit(&self.outbox, &self.session, Some(self.number), &Event::SessionMessage(header), d.live).await;
        for content in blocks {
            let chunk = Event::SessionMessageChunk { message_id: message_id.to_string(), content };
            emit(&self.outbox, &self.session, Some(self.number), &chunk, d.live).await;
        }
    }

    /// The parent's side of a `delegate` call: the child's answer is the result. Boxed (as a
    /// `Send` trait object): the child's turn runs inside this one, and only a box ends the
    /// recursion of their future types.
    pub(super) fn delegate<'a>(
        &'a self,
        args: &'a Value,
        cx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(self.delegate_call(args, cx))
    }

    async fn delegate_call(&self, args: &Value, cx: &ToolContext<'_>) -> Result<Output, ToolError> {
        let args = Args::parse(args)?;
        let Some(host) = &self.host else {
            return Err(ToolError::Failed("a subagent cannot start subagents of its own".into()));
        };
        let title = args.title();
        let slot = match host.slots().try_take() {
            Some(slot) => slot,
            None => {
                let limit = host.slots().limit();
                let waiting = format!(
                    "Waiting for a free slot: {limit} subagents are running, the limit ([limits] max_subagents)."
                );
                cx.updates.show(vec![ToolContent::Text(waiting)], false).await;
                host.slots().take(&self.cancel).await.ok_or(ToolError::Cancelled)?
            }
        };
        let mode = match args.mode {
            SubagentMode::ReadOnly => Mode::ReadOnly,
            SubagentMode::Parent => self.session.state().mode,
        };
        let (child, claim) = host
            .start_child(&self.session, &title, mode, self.cancel.child_token())
            .await
            .map_err(|e| ToolError::Failed(format!("could not start the subagent: {e}")))?;
        let child_id = child.session.id.clone();
        let live = self.client.subagents;
        let task_id = uuid::Uuid::new_v4().to_string();
        if live {
            // Announced before any of its traffic, then referenced from the card.
            let announce = Subagent {
                session_id: child_id.clone(),
                title: Some(title.clone()),
                description: Some(args.description.clone()),
                state: SubagentState::Running,
            };
            self.emit(Event::Subagent(announce)).await;
            cx.updates.show(vec![ToolContent::Session(child_id.clone())], false).await;
            let header = SessionMessage {
                message_id: task_id.clone(),
                sender: self.session.id.clone(),
                recipient: child_id.clone(),
                other_message_id: None,
                incoming: false,
            };
            for event in message(header, &args.prompt) {
                self.emit(event).await;
            }
        }
        let (tap, mut tapped) = mpsc::unbounded_channel();
        let mut ctx = host.turn_context();
        ctx.delegation = Some(Delegation {
            parent_id: self.session.id.clone(),
            title: title.clone(),
            live,
            call_prefix: format!("{}/", cx.call_id),
            parent_message_id: task_id,
            tap,
        });
        let prompt = UserPrompt {
            text: args.prompt.clone(),
            images: Vec::new(),
            blocks: vec![acp::ContentBlock::from(args.prompt.clone())],
            message_id: None,
            echoed: None,
        };
        let run = Turn::new(claim, ctx).run(prompt);
        let progress = async {
            let mut progress = Progress::default();
            while let Some(event) = tapped.recv().await {
                if progress.take(&event) && !live {
                    cx.updates.show(vec![ToolContent::Text(progress.render())], false).await;
                }
            }
            progress
        };
        let (outcome, mut progress) = tokio::join!(run, progress);
        // The child's model requests are part of the parent turn's token use.
        let outcome = outcome.map(|end| {
            if let Some(t) = end.tokens {
                self.count_tokens(t.input, t.output);
            }
            end.stop
        });
        let answer = final_answer(&child.session.state().history);
        drop(child);
        let stop = outcome.as_ref().ok().copied();
        if live {
            let header = SessionMessage {
                message_id: uuid::Uuid::new_v4().to_string(),
                sender: child_id.clone(),
                recipient: self.session.id.clone(),
                other_message_id: None,
                incoming: true,
            };
            if !answer.is_empty() {
                for event in message(header, &answer) {
                    self.emit(event).await;
                }
            }
            let done = Subagent {
                session_id: child_id.clone(),
                title: None,
                description: None,
                state: SubagentState::Done(stop),
            };
            self.emit(Event::Subagent(done)).await;
        }
        // Freed once the child is over on the wire too, so a waiting call's child follows it.
        drop(slot);
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let (for_model, ok) = match &outcome {
            Ok(StopReason::EndTurn) if !answer.is_empty() => (answer.clone(), true),
            Ok(StopReason::EndTurn) => ("The subagent finished without an answer.".to_string(), true),
            Ok(StopReason::Cancelled) => {
                (format!("The user cancelled the subagent before it finished.{}", so_far(&answer)), false)
            }
            Ok(other) => (format!("The subagent stopped early ({}).{}", other.as_str(), so_far(&answer)), false),
            Err(e) => (format!("The subagent failed: {e}.{}", so_far(&answer)), false),
        };
        progress.finish(&for_model);
        let mut content = Vec::new();
        if live {
            content.push(ToolContent::Session(child_id.clone()));
        }
        content.push(ToolContent::Text(progress.render()));
        let raw = json!({
            "sessionId": child_id,
            "stopReason": stop.map(StopReason::as_str),
            "answer": answer,
        });
        Ok(Output { for_model, content, raw, ok, images: Vec::new() })
    }
}

/// What a subagent that did not finish had said, for the parent model.
fn so_far(answer: &str) -> String {
    if answer.is_empty() { String::new() } else { format!(" Its last message:\n\n{answer}") }
}
