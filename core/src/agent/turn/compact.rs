//! Compaction in a turn: `/compact` (the whole conversation becomes the model's summary of
//! it), and the automatic kind before a request that would not fit the window, or after the
//! provider said one did not (`agent::compaction` has the policy: what is kept, what the
//! summary request holds). The summary request carries the same system prompt and tools as
//! the turn's other requests.

use super::Turn;
use super::model_step::{ModelRequest, TextAs};
use crate::agent::compaction::{self, Window};
use crate::agent::error::AgentError;
use crate::catalog::ModelInfo;
use crate::event::{Compaction, CompactionStatus, Event, StopReason};
use crate::provider::{ChatMessage, ProviderError, ToolSpec};
use crate::store::batch::Record;

/// Most tokens asked for a summary.
const SUMMARY_TOKENS: u32 = 8192;

/// Why the context is compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// `/compact`: everything is summarized, and the summary is the turn's answer.
    Asked,
    /// The next request would pass the window's threshold.
    Threshold,
    /// The provider answered that the request did not fit.
    Overflow,
}

/// The model a compaction's summary request goes to.
#[derive(Clone, Copy)]
pub(super) struct Model<'a> {
    pub id: &'a str,
    pub info: &'a ModelInfo,
}

/// How a compaction ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Compacted {
    Done,
    /// Nothing older than what is kept: there was nothing to summarize.
    Nothing,
    Cancelled,
}

impl Turn {
    /// `/compact`.
    pub(super) async fn compact(&self, model: &str, info: &ModelInfo) -> Result<StopReason, AgentError> {
        let history = self.session.state().history.clone();
        if history.is_empty() {
            self.say("Nothing to compact yet.".into()).await;
            return Ok(StopReason::EndTurn);
        }
        let mut messages = vec![self.system_message(info).await];
        messages.extend(history);
        let specs = self.registry(info).specs();
        match self.compact_context(Why::Asked, Model { id: model, info }, &mut messages, &specs).await? {
            Compacted::Cancelled => Ok(StopReason::Cancelled),
            Compacted::Done | Compacted::Nothing => Ok(StopReason::EndTurn),
        }
    }

    /// The window compaction works with for `model`: the catalog's, or a smaller one the
    /// provider revealed, with the session's calibrated bytes-to-tokens ratio.
    pub(super) fn window(&self, model: &ModelInfo) -> Window {
        let fit = self.session.state().fit;
        Window::of(model, fit.learned_window, fit.tokens_per_byte)
    }

    /// Replaces the older part of `messages` (after the system prompt at `[0]`) with the
    /// model's summary of it, in the session's history and the store too.
    pub(super) async fn compact_context(
        &self,
        why: Why,
        model: Model<'_>,
        messages: &mut Vec<ChatMessage>,
        specs: &[ToolSpec],
    ) -> Result<Compacted, AgentError> {
        let Model { id: model, info } = model;
        let window = self.window(info);
        let history = &messages[1..];
        let at = match why {
            Why::Asked => history.len(),
            Why::Threshold | Why::Overflow => compaction::split(history, &window, window.keep()),
        };
        let (part, kept) = history.split_at(at);
        if part.is_empty() {
            return Ok(Compacted::Nothing);
        }
        tracing::info!(session_id = %self.session.id, ?why, summarized = part.len(), kept = kept.len(), "compacting the context");
        let id = uuid::Uuid::new_v4().to_string();
        // Clients that know compaction see it as such; `/compact` is an answer to the others,
        // and the automatic kind a short note.
        let text_as = match (self.client.compaction, why) {
            (true, _) => TextAs::Compaction(&id),
            (false, Why::Asked) => TextAs::Message,
            (false, _) => TextAs::Silent,
        };
        self.report_compaction(&id, CompactionStatus::Running, None, None).await;

        let system = messages[0].clone();
        let prefix = window.tokens_of(compaction::message_bytes(&system) + compaction::specs_bytes(specs));
        let budget = window.trigger().saturating_sub(prefix + u64::from(SUMMARY_TOKENS));
        let request_messages = compaction::summary_request(system.clone(), part, &window, budget);
        let request_tokens = compaction::estimate(&window, &request_messages, compaction::specs_bytes(specs));
        let max_output_tokens = window.answer_room(info.max_output_tokens.min(SUMMARY_TOKENS), request_tokens);
        let request = ModelRequest { model, info, max_output_tokens, messages: &request_messages, specs, text_as };
        let mut summary = String::new();
        match self.model_step(request, &mut summary).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                // Still before the prompt's response, so the client can close the compaction.
                self.report_compaction(&id, CompactionStatus::Cancelled, None, None).await;
                return Ok(Compacted::Cancelled);
            }
            // Even the shortened part did not fit: the record below stands in for a summary.
            Err(AgentError::Provider(ProviderError::ContextTooLong { .. })) if why != Why::Asked => summary.clear(),
            Err(e) => {
                self.report_compaction(&id, CompactionStatus::Failed, Some(e.to_string()), None).await;
                return Err(e);
            }
        }
        if summary.trim().is_empty() {
            summary = compaction::basic_summary(part, (window.keep() as usize) * 2);
        }
        let replaced = part.len();
        let carry_request = why != Why::Asked;
        let mut history = vec![compaction::summary_message(&summary, part, kept, carry_request)];
        history.extend(kept.iter().cloned());
        self.replace_history(&history).await;
        messages.truncate(1);
        messages.extend(history);
        if self.client.compaction {
            self.report_compaction(&id, CompactionStatus::Completed, None, Some(&summary)).await;
        } else if why == Why::Asked {
            self.say(format!("\n\n_Compacted {replaced} messages into this summary._")).await;
        } else if self.client.notices {
            let description = format!(
                "The conversation neared the model's context window: {replaced} earlier messages were summarized \
                 and the latest kept as they are."
            );
            self.emit(Event::Notice { title: "Context compacted".into(), description }).await;
        } else {
            self.say(format!(
                "\n\n_(Context compacted: {replaced} earlier messages were summarized to fit the model's window.)_\n\n"
            ))
            .await;
        }
        Ok(Compacted::Done)
    }

    /// Tells a client that knows compaction how one goes.
    async fn report_compaction(
        &self,
        id: &str,
        status: CompactionStatus,
        error: Option<String>,
        summary: Option<&str>,
    ) {
        if !self.client.compaction {
            return;
        }
        let summary = summary.map(str::to_string);
        self.emit(Event::Compaction(Compaction { id: id.to_string(), status, error, summary })).await;
    }

    /// The session's context becomes `history`, in memory and in the store.
    async fn replace_history(&self, history: &[ChatMessage]) {
        let stored = history.iter().map(|m| (m.role.as_str(), serde_json::to_string(m).unwrap_or_default())).collect();
        {
            let mut state = self.session.state();
            state.history = history.to_vec();
            state.next_message_seq = history.len() as i64 + 1;
        }
        self.outbox.push(Record::ReplaceMessages { session_id: self.session.id.clone(), messages: stored }).await;
    }
}
