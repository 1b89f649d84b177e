//! `/compact`: the model summarizes the conversation, and the summary replaces it.

use super::Turn;
use super::model_step::{ModelRequest, TextAs};
use crate::agent::commands::COMPACT_PROMPT;
use crate::agent::error::AgentError;
use crate::event::{Compaction, CompactionStatus, Event, StopReason};
use crate::provider::ChatMessage;
use crate::store::batch::Record;

impl Turn {
    pub(super) async fn compact(&self) -> Result<StopReason, AgentError> {
        let (model, history) = {
            let state = self.session.state();
            (state.model.clone(), state.history.clone())
        };
        if history.is_empty() {
            self.say("Nothing to compact yet.".into()).await;
            return Ok(StopReason::EndTurn);
        }
        let mut messages = vec![ChatMessage::system(self.session.system_prompt())];
        messages.extend(history.iter().cloned());
        messages.push(ChatMessage::user(COMPACT_PROMPT));
        let mut summary = String::new();
        // Clients that know compaction get it as such; others see the summary as an answer.
        let compaction_id = uuid::Uuid::new_v4().to_string();
        let text_as = if self.client.compaction { TextAs::Compaction(&compaction_id) } else { TextAs::Message };
        let report = async |status: CompactionStatus, error: Option<String>, summary: Option<&str>| {
            if !self.client.compaction {
                return;
            }
            let summary = summary.map(str::to_string);
            self.emit(Event::Compaction(Compaction { id: compaction_id.clone(), status, error, summary })).await;
        };
        report(CompactionStatus::Running, None, None).await;
        let request = ModelRequest { model: &model, messages: &messages, specs: &[], text_as };
        let step = self.model_step(request, &mut summary).await;
        match &step {
            Ok(Some(_)) => {}
            Ok(None) => {
                // Still before the prompt's response, so the client can close the compaction.
                report(CompactionStatus::Cancelled, None, None).await;
                return Ok(StopReason::Cancelled);
            }
            Err(e) => {
                report(CompactionStatus::Failed, Some(e.to_string()), None).await;
                step?;
            }
        }
        let kept = ChatMessage::user(format!("Summary of the conversation so far:\n\n{summary}"));
        let stored = vec![("user", serde_json::to_string(&kept).unwrap_or_default())];
        {
            let mut state = self.session.state();
            state.history = vec![kept];
            state.next_message_seq = 2;
        }
        self.outbox.push(Record::ReplaceMessages { session_id: self.session.id.clone(), messages: stored }).await;
        if self.client.compaction {
            report(CompactionStatus::Completed, None, Some(&summary)).await;
        } else {
            self.say(format!("\n\n_Compacted {} messages into this summary._", history.len())).await;
        }
        Ok(StopReason::EndTurn)
    }
}
