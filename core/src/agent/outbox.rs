//! The outbox: every write a connection's sessions make, and every `session/update` they
//! send, goes through here, in order. One task per connection commits what is queued in
//! batches (one transaction, see `store::batch`) and only then hands the updates' frames to
//! the client: a frame the client has seen is already durable, so a `kill -9` loses at most
//! updates that were still queued and that the client never received. Batching keeps the cost
//! per update in microseconds while a model streams.
//!
//! A failed commit is tried once more; if that fails too, the frames are sent anyway and the
//! error is logged: the client's live view is never held hostage to the disk, at the price of
//! a replay that lacks those updates (ARCHITECTURE.md, invariant 8).
//!
//! Each event is rendered once (as ACP v1, `event::v1`) and stored exactly as sent; live
//! sends and `session/load` replay frame it the same way ([`update_frame`]).

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::session::Session;
use crate::event::{self, Event};
use crate::provider::ChatMessage;
use crate::rpc::Peer;
use crate::store::batch::Record;
use crate::store::{PendingStore, Store};

/// Bounded so a slow disk or client slows the turn instead of growing memory.
const QUEUE: usize = 512;
/// Most entries committed in one transaction.
const MAX_BATCH: usize = 256;
/// Pause before the one retry of a failed commit (a busy database, a full disk being cleared).
const RETRY_AFTER: Duration = Duration::from_millis(50);

enum Entry {
    /// A write, and the frame to send once it is committed (for `session/update`s).
    Write { record: Record, frame: Option<String> },
    /// Resolves once everything queued before it is committed and sent.
    Flush(oneshot::Sender<()>),
}

/// What happens after a batch commits, in queue order.
enum After {
    Send(String),
    Resolve(oneshot::Sender<()>),
}

/// The queue into the connection's outbox task. Cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Entry>,
}

impl Outbox {
    /// Starts the outbox task of a connection. Without a store nothing is written and frames
    /// go straight through (same ordering, no durability).
    pub fn spawn(store: PendingStore, peer: Peer) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(store, peer, rx));
        Self { tx }
    }

    /// Queues a write. Fails only when the connection is gone.
    pub async fn push(&self, record: Record) -> bool {
        self.tx.send(Entry::Write { record, frame: None }).await.is_ok()
    }

    /// Waits until every entry queued so far is committed and its frame handed to the client.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Entry::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }
}

async fn run(store: PendingStore, peer: Peer, mut rx: mpsc::Receiver<Entry>) {
    let store = store.await.ok();
    let mut records = Vec::with_capacity(64);
    let mut after = Vec::with_capacity(64);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut entries = 0;
        while let Some(entry) = next.take() {
            match entry {
                Entry::Write { record, frame } => {
                    records.push(record);
                    after.extend(frame.map(After::Send));
                }
                Entry::Flush(done) => after.push(After::Resolve(done)),
            }
            entries += 1;
            if entries < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if let Some(store) = &store {
            commit(store, &records).await;
        }
        records.clear();
        for step in after.drain(..) {
            match step {
                After::Send(frame) => {
                    let _ = peer.send_raw(frame).await;
                }
                After::Resolve(done) => {
                    let _ = done.send(());
                }
            }
        }
    }
}

/// Commits a batch, trying once more after a failure (see the module comment for what
/// happens when that fails too).
async fn commit(store: &Store, records: &[Record]) {
    let Err(first) = store.write_batch(records).await else { return };
    tracing::warn!(error = %first, items = records.len(), "could not persist session updates; retrying once");
    tokio::time::sleep(RETRY_AFTER).await;
    if let Err(e) = store.write_batch(records).await {
        // Never hold the client's stream hostage to the disk: log and go on.
        tracing::error!(error = %e, items = records.len(), "could not persist session updates; sent unsaved");
    }
}

/// The `session/update` frame for a stored payload. Live sends and `session/load` replay both
/// use this, so a replayed frame is byte-for-byte the live one.
pub fn update_frame(session_id: &str, payload: &str) -> String {
    let id = serde_json::Value::String(session_id.to_string());
    format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":{id},"update":{payload}}}}}"#)
}

/// Stores an event in the session's ledger and, if `send`, sends it to the client once it is
/// committed. `send = false` is for what the client already has (the user's own prompt)
/// or will get by replay (recovery notes). Returns `false` when the connection is gone.
pub async fn emit(outbox: &Outbox, session: &Session, turn: Option<i64>, event: &Event, send: bool) -> bool {
    let payload = match event::v1::payload(event) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "could not serialize a session update");
            return true;
        }
    };
    let frame = send.then(|| update_frame(&session.id, &payload));
    let record = Record::Update { session_id: session.id.clone(), seq: session.take_seq(), turn, payload };
    outbox.tx.send(Entry::Write { record, frame }).await.is_ok()
}

/// Appends a message to the session's stored model context.
pub async fn record_message(outbox: &Outbox, session: &Session, message: &ChatMessage) {
    let seq = {
        let mut state = session.state();
        let seq = state.next_message_seq;
        state.next_message_seq += 1;
        seq
    };
    let content = serde_json::to_string(message).unwrap_or_default();
    outbox.push(Record::Message { session_id: session.id.clone(), seq, role: message.role.as_str(), content }).await;
}

/// A message to the user in the agent's voice, as its own message.
pub fn agent_note(text: String) -> Event {
    Event::MessageChunk { message_id: uuid::Uuid::new_v4().to_string(), text }
}
