//! One model request of a turn: streamed to the client as it arrives, tool calls assembled
//! from their fragments.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Turn;
use crate::agent::accounting;
use crate::agent::error::AgentError;
use crate::event::Event;
use crate::provider::{
    Call, ChatMessage, ChatParams, FinishReason, FunctionCall, ModelEvent, RetryPolicy, Started, ToolCallRequest,
    ToolSpec, start_chat,
};

/// How a streamed answer's text is shown.
#[derive(Clone, Copy)]
pub(super) enum TextAs<'a> {
    Message,
    /// The summary of the compaction with this id (`compaction_summary_chunk`).
    Compaction(&'a str),
    /// Not shown (an automatic compaction's summary, for a client that does not know them).
    Silent,
}

/// What one model request asks.
pub(super) struct ModelRequest<'a> {
    pub model: &'a str,
    /// What the model is (images, prices, window), per the catalog and the config.
    pub info: &'a crate::catalog::ModelInfo,
    /// The longest answer to ask for (Anthropic's `max_tokens`).
    pub max_output_tokens: u32,
    pub messages: &'a [ChatMessage],
    pub specs: &'a [ToolSpec],
    pub text_as: TextAs<'a>,
}

/// One model request's outcome (its text is accumulated in the caller's buffer).
pub(super) struct Step {
    pub tool_calls: Vec<ToolCallRequest>,
    pub finish: Option<FinishReason>,
    /// Provider reasoning blocks to send back with the assistant message.
    pub thinking: Vec<serde_json::Value>,
    /// The input tokens the provider reported for this request, if it did.
    pub input_tokens: Option<u64>,
}

/// Tool-call fragments by index, as the stream delivers them: (id, name, arguments).
type Fragments = BTreeMap<u32, (String, String, String)>;

impl Turn {
    /// Streams one model response to the client; `text` collects what it said. `None` when
    /// the turn was cancelled.
    pub(super) async fn model_step(
        &self,
        request: ModelRequest<'_>,
        text: &mut String,
    ) -> Result<Option<Step>, AgentError> {
        let retry = RetryPolicy {
            max_retries: self.config.max_retries,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(8),
        };
        let source = &self.session.source;
        let params = ChatParams {
            model: request.model,
            messages: request.messages,
            tools: request.specs,
            thinking_budget: self.session.thinking_budget(request.model),
            max_output_tokens: request.max_output_tokens,
            images: request.info.images,
        };
        let call =
            Call { http: &self.http, endpoint: &source.endpoint, retry, stall_timeout: self.config.stall_timeout };
        let started = start_chat(&call, &params, &self.cancel).await?;
        let mut stream = match started {
            Started::Stream(s) => s,
            Started::Cancelled => return Ok(None),
        };
        let message_id = uuid::Uuid::new_v4().to_string();
        let thought_id = uuid::Uuid::new_v4().to_string();
        let mut step = Step { tool_calls: Vec::new(), finish: None, thinking: Vec::new(), input_tokens: None };
        let mut fragments = Fragments::new();
        loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Ok(None),
                e = stream.next() => e,
            };
            let update = match event {
                None => break,
                Some(Err(e)) => return Err(AgentError::from(e)),
                Some(Ok(ModelEvent::Text(t))) => {
                    text.push_str(&t);
                    match request.text_as {
                        TextAs::Message => Event::MessageChunk { message_id: message_id.clone(), text: t },
                        TextAs::Compaction(id) => Event::CompactionChunk { compaction_id: id.to_string(), text: t },
                        TextAs::Silent => continue,
                    }
                }
                Some(Ok(ModelEvent::Reasoning(r))) => Event::ThoughtChunk { message_id: thought_id.clone(), text: r },
                Some(Ok(ModelEvent::Finish(reason))) => {
                    step.finish = Some(reason);
                    continue;
                }
                Some(Ok(ModelEvent::ReasoningBlock(block))) => {
                    step.thinking.push(block);
                    continue;
                }
                Some(Ok(ModelEvent::Usage { input_tokens, output_tokens })) => {
                    self.count_tokens(input_tokens, output_tokens);
                    step.input_tokens = Some(input_tokens);
                    Event::Usage(accounting::record(&self.session, request.info, input_tokens, output_tokens))
                }
                Some(Ok(ModelEvent::ToolCallDelta { index, id, name, arguments })) => {
                    let entry = fragments.entry(index).or_default();
                    if let Some(id) = id.filter(|i| !i.is_empty()) {
                        entry.0 = id;
                    }
                    if let Some(name) = name {
                        entry.1.push_str(&name);
                    }
                    entry.2.push_str(&arguments);
                    continue;
                }
            };
            let sent = tokio::select! {
                biased;
                () = self.cancel.cancelled() => false,
                ok = self.emit(update) => ok,
            };
            if !sent {
                return Ok(None);
            }
        }
        step.tool_calls = self.assemble(fragments);
        Ok(Some(step))
    }

    /// The tool calls of a finished stream, with ids for those the model left without one.
    fn assemble(&self, fragments: Fragments) -> Vec<ToolCallRequest> {
        fragments
            .into_iter()
            .map(|(index, (id, name, arguments))| ToolCallRequest {
                id: if id.is_empty() { format!("call_{}_{index}", self.number) } else { id },
                kind: "function".into(),
                function: FunctionCall {
                    name,
                    arguments: if arguments.trim().is_empty() { "{}".into() } else { arguments },
                },
            })
            .collect()
    }
}
