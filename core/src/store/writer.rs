//! The write-behind ledger: one task per connection that commits writes in batches and only
//! then forwards `session/update` frames to the client.
//!
//! Commit-then-send means a frame the client has seen is already durable: a `kill -9` loses
//! at most updates that were still queued and that the client never received. Batching keeps
//! the cost per update in microseconds while a model streams.

use std::collections::BTreeSet;

use sqlx::QueryBuilder;
use tokio::sync::{mpsc, oneshot};

use super::time::now_rfc3339;
use super::{Store, StoreError, with_pool};
use crate::rpc::Peer;

/// Bounded so a slow disk or client slows the turn instead of growing memory.
const QUEUE: usize = 512;
/// Most items committed in one transaction.
const MAX_BATCH: usize = 256;

/// One write, in the order it must happen.
#[derive(Debug)]
pub enum Record {
    /// A `session/update`: stored in the ledger, then (if `send`) forwarded as `frame`.
    Update {
        session_id: String,
        seq: i64,
        turn: Option<i64>,
        payload: String,
        frame: Option<String>,
    },
    NewSession {
        id: String,
        cwd: String,
        additional_directories: String,
        model: String,
        /// The agent alias the session runs as.
        agent: Option<String>,
        at: String,
    },
    Title {
        session_id: String,
        title: String,
    },
    Model {
        session_id: String,
        model: String,
    },
    Mode {
        session_id: String,
        mode: String,
    },
    /// Kept in the session's `config` JSON column (no schema change needed).
    ThoughtLevel {
        session_id: String,
        level: String,
    },
    Message {
        session_id: String,
        seq: i64,
        role: &'static str,
        content: String,
    },
    /// An "always" permission answer.
    Rule {
        session_id: String,
        tool: String,
        scope: String,
        allow: bool,
        at: String,
    },
    /// Replaces the whole stored model context (after `/compact`).
    ReplaceMessages {
        session_id: String,
        messages: Vec<(&'static str, String)>,
    },
    TurnEnd {
        session_id: String,
        turn: i64,
        status: &'static str,
        stop_reason: Option<String>,
        at: String,
    },
    Delete {
        session_id: String,
        at: String,
    },
    /// Resolves once everything queued before it is committed and forwarded.
    Flush(oneshot::Sender<()>),
}

/// Sending side of the ledger. Cheap to clone.
#[derive(Clone)]
pub struct LedgerTx {
    tx: mpsc::Sender<Record>,
}

impl LedgerTx {
    /// Queues a write. Fails only when the connection is gone.
    pub async fn push(&self, record: Record) -> bool {
        self.tx.send(record).await.is_ok()
    }

    /// Waits until every write queued so far is committed and its frames handed to the client.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Record::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }
}

/// Starts the ledger task. With `store` = `None` nothing is written and frames go straight
/// through (same ordering guarantees, no durability).
pub fn spawn(store: super::PendingStore, peer: Peer) -> LedgerTx {
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(run(store, peer, rx));
    LedgerTx { tx }
}

async fn run(store: super::PendingStore, peer: Peer, mut rx: mpsc::Receiver<Record>) {
    let store = store.await.ok();
    let mut batch = Vec::with_capacity(64);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        if let Some(store) = &store
            && let Err(e) = commit(store, &batch).await
        {
            // Never hold the client's stream hostage to the disk: log and go on.
            tracing::error!(error = %e, items = batch.len(), "could not persist session updates");
        }
        for record in batch.drain(..) {
            match record {
                Record::Update { frame: Some(frame), .. } => {
                    let _ = peer.send_raw(frame).await;
                }
                Record::Flush(done) => {
                    let _ = done.send(());
                }
                _ => {}
            }
        }
    }
}

async fn commit(store: &Store, batch: &[Record]) -> Result<(), StoreError> {
    if batch.iter().all(|r| matches!(r, Record::Flush(_))) {
        return Ok(());
    }
    let dialect = store.dialect();
    // The same statements on either backend's transaction (see `with_pool!`).
    with_pool!(store.pool(), |pool| {
        let mut tx = pool.begin().await?;
        let mut touched = BTreeSet::new();
        let mut i = 0;
        while i < batch.len() {
            // Consecutive updates become one multi-row INSERT.
            let run_len = batch[i..].iter().take_while(|r| matches!(r, Record::Update { .. })).count().min(500);
            if run_len > 0 {
                let mut q = QueryBuilder::new("INSERT INTO events (session_id, seq, turn, payload) ");
                q.push_values(&batch[i..i + run_len], |mut b, r| {
                    if let Record::Update { session_id, seq, turn, payload, .. } = r {
                        b.push_bind(session_id.as_str()).push_bind(*seq).push_bind(*turn).push_bind(payload.as_str());
                    }
                });
                // A sequence number already taken means another process wrote to this session after
                // this one loaded it (outside a turn: turns claim the session first, see
                // `Store::claim_turn`). The rows stored first win; failing the batch would lose
                // the other sessions' updates in it too.
                q.push(" ON CONFLICT DO NOTHING");
                let stored = q.build().execute(&mut *tx).await?.rows_affected();
                if stored < run_len as u64 {
                    tracing::warn!(
                        dropped = run_len as u64 - stored,
                        "session updates not stored: another process had taken their sequence numbers"
                    );
                }
                for r in &batch[i..i + run_len] {
                    if let Record::Update { session_id, .. } = r {
                        touched.insert(session_id.as_str());
                    }
                }
                i += run_len;
                continue;
            }
            match &batch[i] {
                Record::NewSession { id, cwd, additional_directories, model, agent, at } => {
                    sqlx::query(
                    "INSERT INTO sessions (id, cwd, additional_directories, model, agent_alias, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(id)
                .bind(cwd)
                .bind(additional_directories)
                .bind(model)
                .bind(agent)
                .bind(at)
                .bind(at)
                .execute(&mut *tx)
                .await?;
                }
                Record::Title { session_id, title } => {
                    sqlx::query("UPDATE sessions SET title = $1 WHERE id = $2")
                        .bind(title)
                        .bind(session_id)
                        .execute(&mut *tx)
                        .await?;
                }
                Record::Model { session_id, model } => {
                    sqlx::query("UPDATE sessions SET model = $1 WHERE id = $2")
                        .bind(model)
                        .bind(session_id)
                        .execute(&mut *tx)
                        .await?;
                }
                Record::Mode { session_id, mode } => {
                    sqlx::query("UPDATE sessions SET mode = $1 WHERE id = $2")
                        .bind(mode)
                        .bind(session_id)
                        .execute(&mut *tx)
                        .await?;
                }
                Record::ThoughtLevel { session_id, level } => {
                    sqlx::query(dialect.set_thought_level).bind(level).bind(session_id).execute(&mut *tx).await?;
                }
                Record::Message { session_id, seq, role, content } => {
                    sqlx::query("INSERT INTO messages (session_id, seq, role, content) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING")
                    .bind(session_id)
                    .bind(seq)
                    .bind(*role)
                    .bind(content)
                    .execute(&mut *tx)
                    .await?;
                    touched.insert(session_id.as_str());
                }
                Record::Rule { session_id, tool, scope, allow, at } => {
                    sqlx::query(
                    "INSERT INTO permission_rules (session_id, tool, scope, decision, created_at) VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(session_id)
                .bind(tool)
                .bind(scope)
                .bind(if *allow { "allow" } else { "reject" })
                .bind(at)
                .execute(&mut *tx)
                .await?;
                }
                Record::ReplaceMessages { session_id, messages } => {
                    sqlx::query("DELETE FROM messages WHERE session_id = $1")
                        .bind(session_id)
                        .execute(&mut *tx)
                        .await?;
                    for (seq, (role, content)) in messages.iter().enumerate() {
                        sqlx::query("INSERT INTO messages (session_id, seq, role, content) VALUES ($1, $2, $3, $4)")
                            .bind(session_id)
                            .bind(seq as i64 + 1)
                            .bind(*role)
                            .bind(content)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
                Record::TurnEnd { session_id, turn, status, stop_reason, at } => {
                    sqlx::query(
                    "UPDATE turns SET status = $1, stop_reason = $2, ended_at = $3 WHERE session_id = $4 AND turn = $5",
                )
                .bind(*status)
                .bind(stop_reason)
                .bind(at)
                .bind(session_id)
                .bind(turn)
                .execute(&mut *tx)
                .await?;
                }
                Record::Delete { session_id, at } => {
                    sqlx::query("UPDATE sessions SET deleted_at = $1 WHERE id = $2 AND deleted_at IS NULL")
                        .bind(at)
                        .bind(session_id)
                        .execute(&mut *tx)
                        .await?;
                }
                Record::Update { .. } | Record::Flush(_) => {}
            }
            i += 1;
        }
        if !touched.is_empty() {
            let now = now_rfc3339();
            for id in touched {
                sqlx::query("UPDATE sessions SET updated_at = $1 WHERE id = $2")
                    .bind(&now)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
    });
    Ok(())
}
