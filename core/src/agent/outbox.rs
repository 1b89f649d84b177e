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
//! Each event is rendered once (as ACP v1, `event::v1`) and stored exactly as v1 clients are
//! sent it; live sends and `session/load` replay frame it the same way ([`update_frame`]). On a
//! v2 connection the stored payload is converted (`event::v2`) for the frame, live and on
//! replay alike; v2's prompt-lifecycle signals ([`send_live`]) are sent, never stored.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::session::Session;
use crate::event::json_text::Spliced;
use crate::event::v2::Live;
use crate::event::{self, Event, Wire};
use crate::provider::ChatMessage;
use crate::rpc::Peer;
use crate::store::batch::Record;
use crate::store::{PendingStore, Store, StoreError, packed};

/// Bounded so a slow disk or client slows the turn instead of growing memory.
const QUEUE: usize = 512;
/// Most entries committed in one transaction.
const MAX_BATCH: usize = 256;
/// Pause before the one retry of a failed commit (a busy database, a full disk being cleared).
const RETRY_AFTER: Duration = Duration::from_millis(50);

enum Entry {
    /// A write, and the frame to send once it is committed (for `session/update`s).
    Write { record: Record, frame: Option<String> },
    /// A frame that is not stored (see [`send_unstored`]), sent in queue order.
    Send(String),
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
    wire: Wire,
}

impl Outbox {
    /// Starts the outbox task of a connection. Without a store nothing is written and frames
    /// go straight through (same ordering, no durability).
    pub fn spawn(store: PendingStore, peer: Peer, wire: Wire) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(store.into_future(), peer, rx));
        Self { tx, wire }
    }

    /// Queues a write. Fails only when the connection is gone.
    pub async fn push(&self, record: Record) -> bool {
        self.tx.send(Entry::Write { record, frame: None }).await.is_ok()
    }

    /// The frame of a stored payload in the connection's version: the payload itself for v1
    /// (but for v2's agent-owned terminals, `event::v1::for_v1`), its conversion for v2 (none,
    /// when v2 has no word for it).
    pub fn frame(&self, session_id: &str, payload: &str) -> Option<String> {
        if !self.wire.is_v2() {
            return event::v1::for_v1(payload).map(|p| update_frame(session_id, &p));
        }
        let v1 = serde_json::from_str::<serde_json::Value>(payload).ok()?;
        event::v2::convert(&v1).map(|update| update_frame(session_id, &update.to_string()))
    }

    /// [`Outbox::frame`], made around `payload` itself when it is sent as it is.
    pub fn frame_of(&self, session_id: &str, payload: String) -> Option<String> {
        if !self.wire.is_v2() && matches!(event::v1::for_v1(&payload), Some(std::borrow::Cow::Borrowed(_))) {
            return Some(update_frame_around(session_id, payload));
        }
        self.frame(session_id, &payload)
    }

    pub fn is_v2(&self) -> bool {
        self.wire.is_v2()
    }

    /// Waits until every entry queued so far is committed and its frame handed to the client.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Entry::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }
}

/// The outbox task. `store` resolves to the connection's store ([`PendingStore`]; an error
/// means none); generic over what it resolves to only so tests can commit to a failing one.
async fn run<S: Persist>(store: impl Future<Output = Result<S, String>>, peer: Peer, mut rx: mpsc::Receiver<Entry>) {
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
                Entry::Send(frame) => after.push(After::Send(frame)),
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

/// Where [`commit`] writes: the [`Store`]. A trait only so the retry rule can be tested
/// against a store whose writes fail on cue (see the tests).
trait Persist: Send + Sync {
    fn write_batch(&self, batch: &[Record]) -> impl Future<Output = Result<(), StoreError>> + Send;
}

impl Persist for Store {
    fn write_batch(&self, batch: &[Record]) -> impl Future<Output = Result<(), StoreError>> + Send {
        // The inherent method: one transaction (`store::batch`).
        Store::write_batch(self, batch)
    }
}

/// Commits a batch, trying once more after a failure (see the module comment for what
/// happens when that fails too).
async fn commit(store: &impl Persist, records: &[Record]) {
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
    // Sized up front: a diff's payload is megabytes, which `format!` would copy again at each
    // doubling of its buffer. One allocation: replay frames 100,000 updates in a row.
    let mut frame = String::with_capacity(
        FRAME_HEAD.len() + session_id.len() + 2 + FRAME_UPDATE.len() + payload.len() + FRAME_TAIL.len(),
    );
    push_head(&mut frame, session_id);
    frame.push_str(payload);
    frame.push_str(FRAME_TAIL);
    frame
}

/// [`update_frame`] in `payload`'s own buffer: the bytes move up by the head's length, which
/// costs no new memory to fault in (megabytes, for a diff).
fn update_frame_around(session_id: &str, mut payload: String) -> String {
    let mut head = String::with_capacity(FRAME_HEAD.len() + session_id.len() + 2 + FRAME_UPDATE.len());
    push_head(&mut head, session_id);
    payload.reserve(head.len() + FRAME_TAIL.len());
    payload.insert_str(0, &head);
    payload.push_str(FRAME_TAIL);
    payload
}

/// What comes before the update in a `session/update` frame, and after it.
const FRAME_HEAD: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"#;
const FRAME_UPDATE: &str = r#","update":"#;
const FRAME_TAIL: &str = "}}";

fn push_head(frame: &mut String, session_id: &str) {
    frame.push_str(FRAME_HEAD);
    event::json_text::write_str(frame, session_id);
    frame.push_str(FRAME_UPDATE);
}

/// Stores an event in the session's ledger and, if `send`, sends it to the client once it is
/// committed. `send = false` is for what the client already has (the user's own prompt)
/// or will get by replay (recovery notes). Returns `false` when the connection is gone.
pub async fn emit(outbox: &Outbox, session: &Session, turn: Option<i64>, event: &Event, send: bool) -> bool {
    let Some(rendered) = render(event) else { return true };
    let repeats = event::repeats::find(&rendered);
    // A packed payload (a diff: megabytes) is stored as its own, smaller copy, and the whole
    // one becomes the frame where it lies instead of being copied into one.
    let (payload, repeats, frame) = match packed::pack(&rendered.json, &repeats) {
        Some((payload, spelled)) => {
            let frame = if send { outbox.frame_of(&session.id, rendered.json) } else { None };
            (payload, Some(spelled), frame)
        }
        None => {
            let frame = if send { outbox.frame(&session.id, &rendered.json) } else { None };
            (rendered.json, None, frame)
        }
    };
    let record = Record::Update { session_id: session.id.clone(), seq: session.take_seq(), turn, payload, repeats };
    outbox.tx.send(Entry::Write { record, frame }).await.is_ok()
}

/// Sends an event without storing it, in queue order with the stored ones: state a client
/// needs afresh on every `session/load` and `session/resume` (today's slash commands), not
/// history. Stored, it would grow the ledger by one update per load and make every later
/// replay differ from what a client saw live. Returns `false` when the connection is gone.
pub async fn send_unstored(outbox: &Outbox, session_id: &str, event: &Event) -> bool {
    let Some(rendered) = render(event) else { return true };
    let Some(frame) = outbox.frame(session_id, &rendered.json) else { return true };
    outbox.tx.send(Entry::Send(frame)).await.is_ok()
}

/// Sends a v2 prompt-lifecycle signal (the user message echo, the turn's state) in queue order,
/// unstored: it is the turn's live state, not history. A v1 connection is sent nothing.
pub async fn send_live(outbox: &Outbox, session_id: &str, signal: &Live) -> bool {
    if !outbox.wire.is_v2() {
        return true;
    }
    let frame = update_frame(session_id, &event::v2::live(signal).to_string());
    outbox.tx.send(Entry::Send(frame)).await.is_ok()
}

/// The v1 payload of an event; `None` (logged) if it cannot be serialized, which drops it.
fn render(event: &Event) -> Option<Spliced> {
    event::v1::payload(event).map_err(|e| tracing::error!(error = %e, "could not serialize a session update")).ok()
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use super::*;
    use crate::store::Location;

    /// A real SQLite store whose first `failures` writes fail before reaching it, as writes to
    /// a busy or full disk do. Clones share the counters.
    #[derive(Clone)]
    struct Flaky {
        store: Store,
        failures: Arc<AtomicUsize>,
        attempts: Arc<Mutex<Vec<Attempt>>>,
        /// The client's queue, to see what was sent before each attempt.
        client: Option<mpsc::Sender<String>>,
    }

    struct Attempt {
        at: Instant,
        frames_already_sent: usize,
    }

    impl Persist for Flaky {
        async fn write_batch(&self, batch: &[Record]) -> Result<(), StoreError> {
            let frames_already_sent = self.client.as_ref().map_or(0, |c| c.max_capacity() - c.capacity());
            self.attempts.lock().expect("attempts").push(Attempt { at: Instant::now(), frames_already_sent });
            if self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
                return Err(StoreError::Query(sqlx::Error::PoolTimedOut));
            }
            self.store.write_batch(batch).await
        }
    }

    /// What one outbox run did: the frames the client got, in order, and the payloads of the
    /// updates it was sent.
    struct Delivered {
        frames: Vec<String>,
        sent: Vec<String>,
    }

    /// Queues a new session, two updates for the client and a flush, and runs the outbox task
    /// over them (one batch) with `store`, until the queue closes.
    async fn deliver(store: Flaky, session_id: &str) -> Delivered {
        let (out_tx, mut out_rx) = mpsc::channel(16);
        let store = Flaky { client: Some(out_tx.clone()), ..store };
        let (tx, rx) = mpsc::channel(QUEUE);
        let new_session = Record::test_session(session_id);
        tx.send(Entry::Write { record: new_session, frame: None }).await.expect("queued");
        let mut sent = Vec::new();
        for seq in 1..=2 {
            let payload =
                format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{seq}"}}}}"#);
            let frame = Some(update_frame(session_id, &payload));
            let record = Record::Update {
                session_id: session_id.to_string(),
                seq,
                turn: None,
                payload: payload.clone(),
                repeats: None,
            };
            tx.send(Entry::Write { record, frame }).await.expect("queued");
            sent.push(payload);
        }
        let (flushed, flush_done) = oneshot::channel();
        tx.send(Entry::Flush(flushed)).await.expect("queued");
        drop(tx);
        run(async { Ok::<_, String>(store) }, Peer::new(out_tx), rx).await;
        flush_done.await.expect("the flush resolves once the batch is handled");
        let mut frames = Vec::new();
        while let Ok(frame) = out_rx.try_recv() {
            frames.push(frame);
        }
        Delivered { frames, sent }
    }

    async fn flaky(dir: &std::path::Path, failures: usize) -> Flaky {
        let store = Store::open(&Location::File(dir.join("sessions.db"))).await.expect("open the store");
        Flaky { store, failures: Arc::new(AtomicUsize::new(failures)), attempts: Arc::default(), client: None }
    }

    #[tokio::test]
    async fn a_commit_that_fails_once_is_retried_and_persisted_before_the_frames_go_out() {
        let dir = std::env::temp_dir().join(format!("corvid-outbox-{}", uuid::Uuid::new_v4()));
        let store = flaky(&dir, 1).await;
        let id = uuid::Uuid::new_v4().to_string();
        let delivered = deliver(store.clone(), &id).await;
        let attempts = std::mem::take(&mut *store.attempts.lock().expect("attempts"));
        let [failed, retried] = attempts.as_slice() else {
            panic!("{} attempts, not one failure and one retry", attempts.len())
        };
        assert!(retried.at - failed.at >= RETRY_AFTER, "the retry waits {RETRY_AFTER:?}");
        assert_eq!(
            (failed.frames_already_sent, retried.frames_already_sent),
            (0, 0),
            "nothing is sent before the commit"
        );
        assert_eq!(store.store.events(&id).await.expect("events"), delivered.sent, "the retry stored the updates");
        let expected: Vec<String> = delivered.sent.iter().map(|p| update_frame(&id, p)).collect();
        assert_eq!(delivered.frames, expected, "frames are sent, in order");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_commit_that_keeps_failing_still_sends_the_frames() {
        let dir = std::env::temp_dir().join(format!("corvid-outbox-{}", uuid::Uuid::new_v4()));
        let store = flaky(&dir, usize::MAX).await;
        let id = uuid::Uuid::new_v4().to_string();
        let delivered = deliver(store.clone(), &id).await;
        let attempts = std::mem::take(&mut *store.attempts.lock().expect("attempts"));
        assert_eq!(attempts.len(), 2, "tried once more, then given up");
        assert!(attempts.iter().all(|a| a.frames_already_sent == 0), "the frames wait for both attempts");
        assert!(store.store.session(&id).await.expect("read").is_none(), "nothing was stored");
        assert!(store.store.events(&id).await.expect("events").is_empty());
        let expected: Vec<String> = delivered.sent.iter().map(|p| update_frame(&id, p)).collect();
        assert_eq!(delivered.frames, expected, "the client is not held hostage to the disk");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A frame is the JSON-RPC notification around the payload as it is, with the session id
    /// escaped, whether it is built around the payload's own buffer or copied.
    #[test]
    fn a_frame_is_the_notification_around_the_payload() {
        let payload = r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi \"there\""}}"#;
        for id in ["s-1", "odd \"id\"\n"] {
            let frame = update_frame(id, payload);
            assert_eq!(update_frame_around(id, payload.to_string()), frame);
            let v: serde_json::Value = serde_json::from_str(&frame).expect("JSON");
            assert_eq!(v["jsonrpc"], "2.0");
            assert_eq!(v["method"], "session/update");
            assert_eq!(v["params"]["sessionId"], id);
            assert_eq!(v["params"]["update"], serde_json::from_str::<serde_json::Value>(payload).expect("JSON"));
            assert!(
                frame.ends_with(&format!(r#","update":{payload}}}}}"#)),
                "the payload's bytes as they are: {frame}"
            );
        }
    }
}
