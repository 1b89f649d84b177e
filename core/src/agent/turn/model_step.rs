//! One model request of a turn: streamed to the client as it arrives, tool calls assembled
//! from their fragments.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Turn;
use crate::agent::accounting;
use crate::agent::error::AgentError;
use crate::event::Event;
use crate::provider::{
    Call, ChatMessage, ChatParams, ChatStream, FinishReason, FunctionCall, ModelEvent, ProviderError, RetryPolicy,
    RetryWait, Started, ToolCallRequest, ToolSpec, start_chat,
};

/// A wait before a retry from which on the client is told (shorter ones pass unremarked).
const LONG_WAIT: Duration = Duration::from_secs(5);

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
        let effort = self.session.reasoning_effort(request.model);
        let params = ChatParams {
            model: request.model,
            messages: request.messages,
            tools: request.specs,
            thinking_budget: self.session.thinking_budget(request.model),
            max_output_tokens: request.max_output_tokens,
            images: request.info.images,
            cache_key: Some(&self.session.id),
            claude: request.info.family == crate::catalog::Family::Claude,
            send_reasoning: request.info.send_reasoning,
            effort: effort.as_deref(),
            responses_only: request.info.responses_only,
        };
        let Some(mut stream) = self.start_stream(&params).await? else { return Ok(None) };
        let message_id = uuid::Uuid::new_v4().to_string();
        let thought_id = uuid::Uuid::new_v4().to_string();
        let mut step = Step { tool_calls: Vec::new(), finish: None, thinking: Vec::new(), input_tokens: None };
        let mut fragments = Fragments::new();
        let mut extras = BTreeMap::new();
        // What reached the client (text or thoughts): a stream that fails before any is
        // started again (the answer is simply asked once more); one that fails after cannot be.
        let mut shown = 0usize;
        let text_before = text.len();
        let mut restarts = 0;
        loop {
            let event = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Ok(None),
                e = stream.next() => e,
            };
            let update = match event {
                None => break,
                Some(Err(e)) if shown == 0 && restarts < self.config.max_retries && e.worth_restarting() => {
                    restarts += 1;
                    tracing::warn!(error = %e, restarts, "the model's stream failed before anything was shown; asking again");
                    text.truncate(text_before);
                    (step.thinking, fragments, extras) = (Vec::new(), Fragments::new(), BTreeMap::new());
                    let pause = tokio::time::sleep(Duration::from_millis(250 * u64::from(restarts)));
                    tokio::select! {
                        biased;
                        () = self.cancel.cancelled() => return Ok(None),
                        () = pause => {}
                    }
                    let Some(again) = self.start_stream(&params).await? else { return Ok(None) };
                    stream = again;
                    continue;
                }
                Some(Err(e)) if shown > 0 => {
                    return Err(AgentError::from(ProviderError::BrokeOff { shown, source: Box::new(e) }));
                }
                Some(Err(e)) => return Err(AgentError::from(e)),
                Some(Ok(ModelEvent::Text(t))) => {
                    shown += t.chars().count();
                    text.push_str(&t);
                    match request.text_as {
                        TextAs::Message => Event::MessageChunk { message_id: message_id.clone(), text: t },
                        TextAs::Compaction(id) => Event::CompactionChunk { compaction_id: id.to_string(), text: t },
                        TextAs::Silent => continue,
                    }
                }
                Some(Ok(ModelEvent::Reasoning(r))) => {
                    shown += r.chars().count();
                    Event::ThoughtChunk { message_id: thought_id.clone(), text: r }
                }
                Some(Ok(ModelEvent::Finish(reason))) => {
                    step.finish = Some(reason);
                    continue;
                }
                Some(Ok(ModelEvent::ReasoningBlock(block))) => {
                    // Chat Completions reasoning text is kept only for the models that want
                    // it back (it can be long, and it is stored with the session).
                    let plain = block.get("type").and_then(serde_json::Value::as_str) == Some("reasoning_content");
                    if !plain || request.info.send_reasoning {
                        step.thinking.push(block);
                    }
                    continue;
                }
                Some(Ok(ModelEvent::ToolCallExtra { index, extra })) => {
                    extras.insert(index, extra);
                    continue;
                }
                Some(Ok(ModelEvent::Usage(used))) => {
                    self.count_tokens(used.input_tokens, used.output_tokens);
                    step.input_tokens = Some(used.input_tokens);
                    Event::Usage(accounting::record(&self.session, request.info, &used))
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
        step.tool_calls = self.assemble(fragments, extras);
        Ok(Some(step))
    }

    /// Starts the request, retried as the config says; a long wait before a retry is told to
    /// the client as a notice while it lasts. `None` when the turn was cancelled.
    async fn start_stream(&self, params: &ChatParams<'_>) -> Result<Option<ChatStream>, AgentError> {
        let retry = RetryPolicy {
            max_retries: self.config.max_retries,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(60),
            max_total: self.config.max_retry_wait,
        };
        let (waits, mut waiting) = tokio::sync::mpsc::unbounded_channel();
        let call = Call {
            http: &self.http,
            endpoint: &self.session.source.endpoint,
            retry,
            stall_timeout: self.config.stall_timeout,
            waits: Some(&waits),
        };
        let start = start_chat(&call, params, &self.cancel);
        tokio::pin!(start);
        let started = loop {
            tokio::select! {
                started = &mut start => break started?,
                Some(wait) = waiting.recv() => self.tell_wait(&wait).await,
            }
        };
        Ok(match started {
            Started::Stream(s) => Some(s),
            Started::Cancelled => None,
        })
    }

    /// A wait the user would notice (a few seconds or more), with why and how long.
    async fn tell_wait(&self, wait: &RetryWait) {
        if wait.delay < LONG_WAIT {
            return;
        }
        let description = format!(
            "{}. Trying again in {} s (attempt {} of {}).",
            wait.error,
            wait.delay.as_secs_f64().round(),
            wait.attempt + 1,
            self.config.max_retries + 1
        );
        self.emit(Event::Notice { title: "Waiting for the model provider".into(), description }).await;
    }

    /// The tool calls of a finished stream, with ids for those the model left without one.
    fn assemble(&self, fragments: Fragments, mut extras: BTreeMap<u32, serde_json::Value>) -> Vec<ToolCallRequest> {
        fragments
            .into_iter()
            .map(|(index, (id, name, arguments))| ToolCallRequest {
                extra_content: extras.remove(&index),
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
