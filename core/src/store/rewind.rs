//! What a rewind reads (`session/fork` with `_meta.corvid.beforeMessage`): where the user's
//! message sits in the ledger and the model context, and the tool updates after it. The rows
//! come back as stored; what they mean is the agent's business (`agent::rewind`).

use super::ledger::{Stored, whole};
use super::{Store, StoreError, with_pool};

/// A ledger row: its seq, its turn (`None` outside turns) and its payload, whole.
pub type EventRow = (i64, Option<i64>, String);

impl Store {
    /// The session's user-message chunks, in order.
    pub async fn user_chunks(&self, session_id: &str) -> Result<Vec<EventRow>, StoreError> {
        let sql = "SELECT seq, turn, payload, repeats FROM events WHERE session_id = $1 AND seq >= $2 \
                   AND payload LIKE '%\"user_message_chunk\"%' ORDER BY seq";
        self.event_rows(sql, session_id, i64::MIN).await
    }

    /// The session's tool-call updates from seq `from` on, in order.
    pub async fn tool_events_from(&self, session_id: &str, from: i64) -> Result<Vec<EventRow>, StoreError> {
        let sql = "SELECT seq, turn, payload, repeats FROM events WHERE session_id = $1 AND seq >= $2 \
                   AND payload LIKE '%\"tool_call%' ORDER BY seq";
        self.event_rows(sql, session_id, from).await
    }

    /// The first seq turn `turn` stored.
    pub async fn first_seq_of_turn(&self, session_id: &str, turn: i64) -> Result<Option<i64>, StoreError> {
        let sql = "SELECT MIN(seq) FROM events WHERE session_id = $1 AND turn = $2";
        Ok(with_pool!(&self.pool, |pool| sqlx::query_scalar(sql).bind(session_id).bind(turn).fetch_one(pool).await?))
    }

    /// The model-context messages that name the prompt they began (`prompt_id`): (seq, JSON).
    pub async fn prompt_messages(&self, session_id: &str) -> Result<Vec<(i64, String)>, StoreError> {
        let sql = "SELECT seq, content FROM messages WHERE session_id = $1 \
                   AND content LIKE '%\"prompt_id\"%' ORDER BY seq";
        Ok(with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).fetch_all(pool).await?))
    }

    async fn event_rows(&self, sql: &'static str, session_id: &str, from: i64) -> Result<Vec<EventRow>, StoreError> {
        type Row = (i64, Option<i64>, String, Option<String>);
        let rows: Vec<Row> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).bind(from).fetch_all(pool).await?);
        rows.into_iter()
            .map(|(seq, turn, payload, repeats)| Ok((seq, turn, whole((payload, repeats) as Stored)?)))
            .collect()
    }
}
