//! Writing to the store in batches: [`Record`] is one write, in the order it must happen;
//! [`Store::write_batch`] commits a run of them in one transaction (consecutive updates become
//! one multi-row INSERT). The store knows nothing of the client: sending what was stored is
//! the agent's outbox (`agent::outbox`), which calls this.

use std::collections::BTreeSet;

use sqlx::QueryBuilder;

use super::time::now_rfc3339;
use super::{Pool, Store, StoreError, with_pool};

/// A subagent's session: stored with its parent (`parent_id`), which keeps it out of
/// `session/list`. Title and mode are set at once, so the row is whole from the start.
#[derive(Debug)]
pub struct NewSubagent {
    pub id: String,
    pub parent_id: String,
    pub cwd: String,
    pub additional_directories: String,
    pub model: String,
    pub agent: Option<String>,
    pub title: String,
    pub mode: String,
    pub at: String,
}

/// One write, in the order it must happen.
#[derive(Debug)]
pub enum Record {
    /// A `session/update`'s payload, appended to the session's event ledger: whole, or packed
    /// (`store::packed`) with `repeats` saying what to copy back.
    Update {
        session_id: String,
        seq: i64,
        turn: Option<i64>,
        payload: String,
        repeats: Option<String>,
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
    /// A subagent's session (boxed: the row is the largest record, and rare).
    Subagent(Box<NewSubagent>),
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
    /// `session/delete`: the session and its subagents leave every listing and lookup.
    Delete {
        session_id: String,
        at: String,
    },
    /// The client's `systemPrompt` text, kept in the `config` JSON column.
    SystemPrompt {
        session_id: String,
        text: String,
    },
    /// `session/archive` (`at` set) or `session/unarchive` (`None`).
    Archived {
        session_id: String,
        at: Option<String>,
    },
    /// `session/fork`: a new session `to` holding everything stored of `from` so far (its
    /// settings, ledger, model context and turns), in new roots and with its own title.
    Fork(Box<Fork>),
}

#[cfg(test)]
impl Record {
    /// A session in `/w` on model `m`, made now: what the store's and the outbox's tests
    /// write first.
    pub(crate) fn test_session(id: &str) -> Record {
        Record::NewSession {
            id: id.to_string(),
            cwd: "/w".into(),
            additional_directories: "[]".into(),
            model: "m".into(),
            agent: None,
            at: crate::store::time::now_rfc3339(),
        }
    }
}

impl Record {
    /// About how many bytes of text the record writes (what grows the SQLite log; a fork's
    /// copy happens inside the database and is not counted).
    pub fn size(&self) -> u64 {
        let bytes = match self {
            Record::Update { payload, repeats, .. } => payload.len() + repeats.as_ref().map_or(0, String::len),
            Record::Message { content, .. } => content.len(),
            Record::ReplaceMessages { messages, .. } => messages.iter().map(|(_, m)| m.len()).sum(),
            Record::SystemPrompt { text, .. } => text.len(),
            _ => 0,
        };
        bytes as u64
    }
}

/// What [`Record::Fork`] writes.
#[derive(Debug)]
pub struct Fork {
    pub from: String,
    pub to: String,
    pub cwd: String,
    pub additional_directories: String,
    pub title: String,
    pub at: String,
    /// Where the copy ends (a rewind); `None` copies the whole history.
    pub end: Option<ForkEnd>,
}

/// The first event seq, message seq and turn a fork leaves out: what came before a rewind's
/// user message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForkEnd {
    pub events: i64,
    pub messages: i64,
    pub turns: i64,
}

/// A fork's new session row: (`$1` new id, `$2` source id, `$3` cwd, `$4` additional
/// directories, `$5` title, `$6` now); the settings are the source's.
const FORK_SESSION: &str = "INSERT INTO sessions (id, cwd, additional_directories, title, created_at, updated_at, agent_alias, mode, model, config) \
     SELECT $1, $3, $4, $5, $6, $6, agent_alias, mode, model, config FROM sessions WHERE id = $2";

/// A fork's copy of the source's history: (`$1` new id, `$2` source id, `$3` the first seq or
/// turn left out, see [`ForkEnd`]). Turns are copied with their state, so a turn a crash left
/// open is closed on the fork's first restore as well.
const FORK_HISTORY: [(&str, Bound); 3] = [
    (
        "INSERT INTO events (session_id, seq, turn, payload, repeats) \
         SELECT $1, seq, turn, payload, repeats FROM events WHERE session_id = $2 AND seq < $3",
        |end| end.events,
    ),
    (
        "INSERT INTO messages (session_id, seq, role, content) \
         SELECT $1, seq, role, content FROM messages WHERE session_id = $2 AND seq < $3",
        |end| end.messages,
    ),
    (
        "INSERT INTO turns (session_id, turn, status, stop_reason, owner_pid, owner_start, started_at, ended_at, \
                            owner_instance, owner_host, heartbeat_at) \
         SELECT $1, turn, status, stop_reason, owner_pid, owner_start, started_at, ended_at, owner_instance, owner_host, \
                heartbeat_at FROM turns WHERE session_id = $2 AND turn < $3",
        |end| end.turns,
    ),
];

/// Which of a [`ForkEnd`]'s bounds a statement of [`FORK_HISTORY`] binds as `$3`.
type Bound = fn(&ForkEnd) -> i64;

/// No end: the whole history.
const WHOLE: ForkEnd = ForkEnd { events: i64::MAX, messages: i64::MAX, turns: i64::MAX };

impl Store {
    /// Commits `batch` in one transaction, in order.
    pub async fn write_batch(&self, batch: &[Record]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        commit(self, batch).await?;
        if let (Pool::Sqlite(pool), Some(checkpoints)) = (self.pool(), &self.checkpoints) {
            checkpoints.committed(pool, batch.iter().map(Record::size).sum());
        }
        Ok(())
    }
}

async fn commit(store: &Store, batch: &[Record]) -> Result<(), StoreError> {
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
                let mut q = QueryBuilder::new("INSERT INTO events (session_id, seq, turn, payload, repeats) ");
                q.push_values(&batch[i..i + run_len], |mut b, r| {
                    if let Record::Update { session_id, seq, turn, payload, repeats } = r {
                        b.push_bind(session_id.as_str()).push_bind(*seq).push_bind(*turn).push_bind(payload.as_str());
                        b.push_bind(repeats.as_deref());
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
                Record::Subagent(row) => {
                    let NewSubagent { id, parent_id, cwd, additional_directories, model, agent, title, mode, at } =
                        row.as_ref();
                    sqlx::query(
                        "INSERT INTO sessions (id, cwd, additional_directories, model, agent_alias, title, mode, \
                         parent_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
                    )
                    .bind(id)
                    .bind(cwd)
                    .bind(additional_directories)
                    .bind(model)
                    .bind(agent)
                    .bind(title)
                    .bind(mode)
                    .bind(parent_id)
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
                    // Its subagents go with it (children do not nest: one level). A fork's
                    // replay still reads their events, which a delete keeps.
                    sqlx::query(
                        "UPDATE sessions SET deleted_at = $1 WHERE (id = $2 OR parent_id = $2) AND deleted_at IS NULL",
                    )
                    .bind(at)
                    .bind(session_id)
                    .execute(&mut *tx)
                    .await?;
                }
                Record::SystemPrompt { session_id, text } => {
                    sqlx::query(dialect.set_system_prompt).bind(text).bind(session_id).execute(&mut *tx).await?;
                }
                Record::Archived { session_id, at } => {
                    sqlx::query("UPDATE sessions SET archived_at = $1 WHERE id = $2")
                        .bind(at)
                        .bind(session_id)
                        .execute(&mut *tx)
                        .await?;
                }
                Record::Fork(fork) => {
                    sqlx::query(FORK_SESSION)
                        .bind(&fork.to)
                        .bind(&fork.from)
                        .bind(&fork.cwd)
                        .bind(&fork.additional_directories)
                        .bind(&fork.title)
                        .bind(&fork.at)
                        .execute(&mut *tx)
                        .await?;
                    let end = fork.end.unwrap_or(WHOLE);
                    for (sql, bound) in FORK_HISTORY {
                        sqlx::query(sql).bind(&fork.to).bind(&fork.from).bind(bound(&end)).execute(&mut *tx).await?;
                    }
                }
                Record::Update { .. } => {}
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
