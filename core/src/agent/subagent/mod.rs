//! Subagents: the `delegate` tool's child sessions.
//!
//! A child is an ordinary [`Session`] (its own id, ledger and model context; the parent's
//! roots, model source and agent alias; read-only or the parent's mode; the parent's "always"
//! rules) stored with its parent (`sessions.parent_id`, which keeps it out of `session/list`)
//! and run as an ordinary [`Turn`](super::turn) whose token is a child of the parent turn's,
//! so cancelling the parent cancels it. It is registered in the connection's [`Sessions`]
//! only while it runs, so `session/cancel` reaches it; `session/prompt` to it is refused.
//! Children get no `delegate` tool themselves (no nesting) and no MCP servers.
//!
//! How the child reaches the client is the turn's [`Delegation`]: with the `subagents`
//! capability its updates go out under its own id (announced first by the parent's
//! `subagent_update`); without it they are stored only, and a copy of its tool events (the
//! tap) feeds the parent's card ([`progress`]). This module holds what is not the turn's:
//! the limit ([`Slots`]) and making the child ([`Host::start_child`]).

pub mod progress;
mod restore;

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::Agent;
use super::error::AgentError;
use super::modes::Mode;
use super::session::{Session, TurnClaim};
use crate::event::Event;
use crate::store::batch::{NewSubagent, Record};
use crate::store::time::now_rfc3339;

/// How many subagents may run at once on a connection (`[limits] max_subagents`). A call
/// beyond the limit waits for a slot (racing the turn's cancel) rather than failing: the model
/// asked for the work, and the wait is shown on its card.
#[derive(Clone)]
pub struct Slots {
    free: Arc<Semaphore>,
    limit: usize,
}

/// A running subagent's slot; dropping it frees the slot.
pub struct Slot(#[allow(dead_code)] OwnedSemaphorePermit);

impl Slots {
    pub fn new(limit: usize) -> Self {
        Self { free: Arc::new(Semaphore::new(limit)), limit }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A slot now, if one is free.
    pub fn try_take(&self) -> Option<Slot> {
        self.free.clone().try_acquire_owned().ok().map(Slot)
    }

    /// Waits for a slot; `None` if `cancel` fires first (or there are no slots at all).
    pub async fn take(&self, cancel: &CancellationToken) -> Option<Slot> {
        if self.limit == 0 {
            return None;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            permit = self.free.clone().acquire_owned() => permit.ok().map(Slot),
        }
    }
}

/// What a child turn knows about being one: whose it is and how its updates reach the client.
pub struct Delegation {
    pub parent_id: String,
    /// The subagent's title (named in its permission questions).
    pub title: String,
    /// The client advertised `subagents`: the child's updates are sent under its own id and
    /// its editor requests name it. Otherwise they are stored only and its requests name the
    /// parent (the one session the client knows).
    pub live: bool,
    /// Put before the child's tool call ids, so they are unique in the parent's stream too
    /// (the parent's card id).
    pub call_prefix: String,
    /// The message that hands the task over, as the parent's transcript calls it.
    pub parent_message_id: String,
    /// A copy of the child's tool events, for the parent's card.
    pub tap: mpsc::UnboundedSender<Event>,
}

impl Delegation {
    /// The session id the child's editor requests carry.
    pub fn editor_session<'a>(&'a self, own: &'a str) -> &'a str {
        if self.live { own } else { &self.parent_id }
    }

    /// Hands the child's event to the parent's card, if it is one the card shows.
    pub fn tap(&self, event: &Event) {
        if matches!(event, Event::ToolStarted(_) | Event::ToolChanged(_)) {
            let _ = self.tap.send(event.clone());
        }
    }
}

/// A parent turn's way into the engine: what starting a child takes beyond the turn itself.
#[derive(Clone)]
pub struct Host {
    agent: Arc<Agent>,
}

/// A child session, registered in the connection until dropped.
pub struct Child {
    pub session: Arc<Session>,
    agent: Arc<Agent>,
}

impl Drop for Child {
    fn drop(&mut self) {
        // Only while it runs can a client address it (session/cancel).
        self.agent.sessions.remove(&self.session.id);
    }
}

impl Host {
    pub(super) fn new(agent: Arc<Agent>) -> Self {
        Self { agent }
    }

    pub fn slots(&self) -> &Slots {
        &self.agent.subagent_slots
    }

    /// Makes the child of `parent` (stored before anything of it is sent), registers it and
    /// claims its first turn under `cancel` (a child of the parent turn's token).
    pub async fn start_child(
        &self,
        parent: &Session,
        title: &str,
        mode: Mode,
        cancel: CancellationToken,
    ) -> Result<(Child, TurnClaim), AgentError> {
        let mut session = Session::new(
            uuid::Uuid::new_v4().to_string(),
            parent.roots.clone(),
            parent.source.clone(),
            parent.agent.clone(),
            crate::sandbox::Status::of(&self.agent.config),
        );
        session.parent = Some(parent.id.clone());
        {
            let from = parent.state();
            let mut state = session.state();
            state.model = from.model.clone();
            state.thought_level = from.thought_level.clone();
            state.rules = from.rules.clone();
            state.mode = mode;
            state.title = Some(title.to_string());
        }
        let session = Arc::new(session);
        let dirs: Vec<String> = session.roots.additional().iter().map(|p| p.display().to_string()).collect();
        let model = session.state().model.clone();
        self.agent
            .outbox
            .push(Record::Subagent(Box::new(NewSubagent {
                id: session.id.clone(),
                parent_id: parent.id.clone(),
                cwd: session.roots.cwd().display().to_string(),
                additional_directories: serde_json::to_string(&dirs).unwrap_or_else(|_| "[]".into()),
                model,
                agent: session.agent.as_ref().map(|(alias, _)| alias.clone()),
                title: title.to_string(),
                mode: mode.id().to_string(),
                at: now_rfc3339(),
            })))
            .await;
        self.agent.sessions.insert(session.clone());
        let child = Child { session: session.clone(), agent: self.agent.clone() };
        let claim = session.begin_turn(cancel)?;
        // Flushes what was queued (the row above) and stores the turn as running.
        self.agent.claim_in_store(&claim).await?;
        Ok((child, claim))
    }

    /// What a child turn runs with: the parent's connection, no `delegate` of its own.
    pub fn turn_context(&self) -> super::turn::TurnContext {
        super::turn::TurnContext {
            outbox: self.agent.outbox.clone(),
            peer: self.agent.peer.clone(),
            http: self.agent.http().clone(),
            config: self.agent.config.clone(),
            client: self.agent.client_features(),
            host: None,
            delegation: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_beyond_the_limit_waits_for_a_free_slot_and_gives_way_to_cancel() {
        let slots = Slots::new(3);
        let cancel = CancellationToken::new();
        let held: Vec<Slot> = (0..3).map(|_| slots.try_take().expect("a free slot")).collect();
        assert!(slots.try_take().is_none(), "the fourth is over the limit");

        let waiting = tokio::spawn({
            let slots = slots.clone();
            let cancel = cancel.clone();
            async move { slots.take(&cancel).await.is_some() }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "it waits while three run");
        drop(held);
        assert!(waiting.await.expect("joined"), "a freed slot goes to the waiting call");

        let _all: Vec<Slot> = (0..3).map(|_| slots.try_take().expect("free again")).collect();
        let stopped = CancellationToken::new();
        let wait = slots.take(&stopped);
        stopped.cancel();
        assert!(wait.await.is_none(), "a cancel ends the wait");
        assert!(Slots::new(0).take(&cancel).await.is_none(), "no slots: no subagents");
    }
}
