//! Reading a session back: the event ledger (replayed by `session/load`), the model context,
//! the last usage report, and the next free sequence numbers.

use super::{Store, StoreError, with_pool};

impl Store {
    /// The ledger's payloads, in order.
    pub async fn events(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT payload FROM events WHERE session_id = $1 ORDER BY seq";
        Ok(with_pool!(&self.pool, |pool| sqlx::query_scalar(sql).bind(session_id).fetch_all(pool).await?))
    }

    /// The session's latest `usage_update` payload: where its spending stood.
    pub async fn last_usage(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let sql = self.dialect().last_usage;
        Ok(with_pool!(&self.pool, |pool| sqlx::query_scalar(sql).bind(session_id).fetch_optional(pool).await?))
    }

    /// Payloads emitted by one turn, in order.
    pub async fn turn_events(&self, session_id: &str, turn: i64) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT payload FROM events WHERE session_id = $1 AND turn = $2 ORDER BY seq";
        Ok(with_pool!(&self.pool, |pool| sqlx::query_scalar(sql).bind(session_id).bind(turn).fetch_all(pool).await?))
    }

    /// The model-context messages (JSON), in order.
    pub async fn messages(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT content FROM messages WHERE session_id = $1 ORDER BY seq";
        Ok(with_pool!(&self.pool, |pool| sqlx::query_scalar(sql).bind(session_id).fetch_all(pool).await?))
    }

    /// The next free (event seq, message seq, turn number) of a session.
    pub async fn counters(&self, session_id: &str) -> Result<(i64, i64, i64), StoreError> {
        let (seq, message, turn): (i64, i64, i64) =
            with_pool!(&self.pool, |pool| sqlx::query_as(COUNTERS).bind(session_id).fetch_one(pool).await?);
        Ok((seq + 1, message + 1, turn + 1))
    }
}

/// Highest stored (event seq, message seq, turn) of session `$1` (0 when none).
pub(super) const COUNTERS: &str = "SELECT (SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = $1), \
                                          (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1), \
                                          (SELECT COALESCE(MAX(turn), 0) FROM turns WHERE session_id = $1)";
