//! `/compact`: the model summarizes the conversation, and the summary replaces it.

use agent_client_protocol_schema::v1 as acp;

use super::Turn;
use super::model_step::{ModelRequest, TextAs};
use crate::agent::commands::COMPACT_PROMPT;
use crate::agent::error::AgentError;
use crate::provider::ChatMessage;
use crate::store::batch::Record;

impl Turn {
    pub(super) async fn compact(&self) -> Result<acp::StopReason, AgentError> {
        let (model, history) = {
            let state = self.session.state();
            (state.model.clone(), state.history.clone())
        };
        if history.is_empty() {
            self.say("Nothing to compact yet.".into()).await;
            return Ok(acp::StopReason::EndTurn);
        }
        let mut messages = vec![ChatMessage::system(self.session.system_prompt())];
        messages.extend(history.iter().cloned());
        messages.push(ChatMessage::user(COMPACT_PROMPT));
        let mut summary = String::new();
        // Clients that know compaction get it as such; others see the summary as an answer.
        let compaction_id = uuid::Uuid::new_v4().to_string();
        let text_as = if self.client.compaction { TextAs::Compaction(&compaction_id) } else { TextAs::Message };
        let report = async |status: acp::CompactionStatus, error: Option<String>, text: Option<&str>| {
            if !self.client.compaction {
                return;
            }
            let mut update = acp::CompactionUpdate::new(compaction_id.clone(), status);
            if let Some(error) = error {
                update = update.error(error);
            }
            if let Some(text) = text {
                update = update.summary(vec![acp::ContentBlock::from(text.to_string())]);
            }
            self.emit(acp::SessionUpdate::CompactionUpdate(update)).await;
        };
        report(acp::CompactionStatus::InProgress, None, None).await;
        let request = ModelRequest { model: &model, messages: &messages, specs: &[], text_as };
        let step = self.model_step(request, &mut summary).await;
        match &step {
            Ok(Some(_)) => {}
            Ok(None) => {
                // Still before the prompt's response, so the client can close the compaction.
                report(acp::CompactionStatus::Cancelled, None, None).await;
                return Ok(acp::StopReason::Cancelled);
            }
            Err(e) => {
                report(acp::CompactionStatus::Failed, Some(e.to_string()), None).await;
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
            report(acp::CompactionStatus::Completed, None, Some(&summary)).await;
        } else {
            self.say(format!("\n\n_Compacted {} messages into this summary._", history.len())).await;
        }
        Ok(acp::StopReason::EndTurn)
    }
}
