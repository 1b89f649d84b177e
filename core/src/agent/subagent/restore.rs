//! Subagents on `session/load` and `session/resume` of their parent: what a crash left
//! running in them is closed like the parent's own turns, and a load replays each child's
//! stream where the client first learned of the child.
//!
//! Replay is exact per session: the parent's stored updates in order, and right after the
//! first `subagent_update` that names a child, that child's stored updates in order (framed
//! with its id), each ledger read a page at a time so a long one is never in memory at once.
//! A child was announced only to a client with the `subagents` capability, which then
//! received the child's updates live, so the replay gives it the same frames. How the two
//! streams interleaved live is not kept (each session's ledger is ordered on its own); every
//! child frame still follows its announcement. Without the capability nothing of the child
//! was sent but its parent's card, and nothing of it is replayed.

use std::collections::HashSet;

use serde_json::Value;

use super::super::Agent;
use super::super::error::AgentError;
use super::super::outbox::{emit, update_frame};
use super::super::restore::restored_state;
use super::super::session::Session;
use crate::event::{Event, Subagent, SubagentState};
use crate::store::Store;

/// The child a stored `subagent_update` names.
fn announced_child(payload: &str) -> Option<String> {
    if !payload.contains("\"subagent_update\"") {
        return None;
    }
    let update: Value = serde_json::from_str(payload).ok()?;
    (update.get("sessionUpdate")?.as_str()? == "subagent_update")
        .then(|| update.get("sessionId")?.as_str().map(str::to_string))
        .flatten()
}

/// Whether a stored payload is a slash-command list (every v1 payload names its kind first).
fn is_commands(payload: &str) -> bool {
    payload.starts_with(COMMANDS_START)
}

const COMMANDS_START: &str = r#"{"sessionUpdate":"available_commands_update""#;

impl Agent {
    /// Closes the turns a crash left running in `parent`'s subagents (open tool calls failed,
    /// a note, the partial answer kept: as for any turn), and tells the parent's stream that
    /// each announced one failed. Stored only: a load replays it.
    pub(in crate::agent) async fn close_interrupted_children(
        &self,
        store: &Store,
        parent: &Session,
    ) -> Result<(), AgentError> {
        let children = store.children(&parent.id).await?;
        if children.is_empty() {
            return Ok(());
        }
        let mut announced = HashSet::new();
        let mut ledger = store.ledger(&parent.id);
        while let Some(page) = ledger.next().await? {
            announced.extend(page.iter().filter_map(announced_child));
        }
        for id in children {
            let Some(record) = store.session(&id).await? else { continue };
            let state = restored_state(store, &record).await?;
            let model = (parent.source.clone(), parent.agent.clone());
            let status = crate::sandbox::Status::of(&self.config);
            let child = Session::restore(id.clone(), parent.roots.clone(), model, status, state);
            let closed = self.close_interrupted_turns(store, &child).await?;
            if closed > 0 && announced.contains(&id) {
                let failed =
                    Subagent { session_id: id, title: None, description: None, state: SubagentState::Done(None) };
                emit(&self.outbox, parent, None, &Event::Subagent(failed), false).await;
            }
        }
        self.outbox.flush().await;
        Ok(())
    }

    /// Sends the stored stream of session `id` and of the children it announced. The slash
    /// commands are state, not history: the first stored list is replaced by today's
    /// (`commands`, a v1 payload) and any later one is left out, so the client gets one list.
    /// Returns whether it was sent (a ledger may hold none).
    pub(in crate::agent) async fn replay(&self, store: &Store, id: &str, commands: &str) -> Result<bool, AgentError> {
        if self.wire.is_v2() {
            return self.replay_v2(store, id, commands).await;
        }
        let mut replayed = HashSet::new();
        let mut commands_sent = false;
        let mut ledger = store.ledger(id);
        while let Some(page) = ledger.next().await? {
            for payload in page.iter() {
                if is_commands(payload) {
                    if !commands_sent {
                        self.peer.send_raw(update_frame(id, commands)).await?;
                        commands_sent = true;
                    }
                    continue;
                }
                if let Some(v1) = crate::event::v1::for_v1(payload) {
                    self.peer.send_raw(update_frame(id, &v1)).await?;
                }
                if let Some(child) = announced_child(payload)
                    && replayed.insert(child.clone())
                {
                    self.replay_child(store, &child).await?;
                }
            }
        }
        Ok(commands_sent)
    }

    /// A v2 replay: the session's own stream in v2's words (`event::v2::Replay`: messages
    /// whole), the commands as in [`Agent::replay`]. Its subagents are not replayed: v2 has no
    /// subagent sessions on the wire.
    async fn replay_v2(&self, store: &Store, id: &str, commands: &str) -> Result<bool, AgentError> {
        let mut converter = crate::event::v2::Replay::default();
        let mut commands_sent = false;
        let mut ledger = store.ledger(id);
        while let Some(page) = ledger.next().await? {
            for payload in page.iter() {
                let payload = if is_commands(payload) {
                    if commands_sent {
                        continue;
                    }
                    commands_sent = true;
                    commands
                } else {
                    payload
                };
                let Ok(v1) = serde_json::from_str::<serde_json::Value>(payload) else { continue };
                for update in converter.push(&v1) {
                    self.peer.send_raw(update_frame(id, &update.to_string())).await?;
                }
            }
        }
        if let Some(update) = converter.finish() {
            self.peer.send_raw(update_frame(id, &update.to_string())).await?;
        }
        Ok(commands_sent)
    }

    /// Sends the stored stream of subagent `child` (children do not nest).
    async fn replay_child(&self, store: &Store, child: &str) -> Result<(), AgentError> {
        let mut ledger = store.ledger(child);
        while let Some(page) = ledger.next().await? {
            for payload in page.iter() {
                if let Some(v1) = crate::event::v1::for_v1(payload) {
                    self.peer.send_raw(update_frame(child, &v1)).await?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{announced_child, is_commands};
    use crate::event::{Event, v1};

    #[test]
    fn a_stored_command_list_is_known_by_its_start() {
        let list = v1::payload(&Event::Commands(crate::agent::commands::available())).expect("rendered");
        assert!(is_commands(&list.json), "{}", list.json);
        let text =
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"available_commands_update"}}"#;
        assert!(!is_commands(text));
    }

    #[test]
    fn only_subagent_updates_announce_a_child() {
        let announce = r#"{"sessionUpdate":"subagent_update","sessionId":"c1","state":{"state":"running"}}"#;
        assert_eq!(announced_child(announce).as_deref(), Some("c1"));
        let text = r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\"subagent_update\""}}"#;
        assert_eq!(announced_child(text), None);
    }
}
