//! Reading a session back: the event ledger (replayed by `session/load`), the model context,
//! the last usage report, and the next free sequence numbers.

use tokio::sync::mpsc;

use super::{Store, StoreError, with_pool};

/// Payloads read per page of a replay.
const LEDGER_PAGE: i64 = 2_000;

/// A session's ledger read a page at a time in order, the next page fetched while the caller
/// sends the current one: a replay of 100,000 updates holds a few pages, not the whole ledger,
/// and the database's reads overlap the client's writes. Dropped early, it stops reading.
pub struct Ledger {
    pages: mpsc::Receiver<Result<Vec<String>, StoreError>>,
}

impl Ledger {
    /// The next page; `None` after the last.
    pub async fn next(&mut self) -> Result<Option<Vec<String>>, StoreError> {
        match self.pages.recv().await {
            None => Ok(None),
            Some(Ok(page)) if page.is_empty() => Ok(None),
            Some(page) => page.map(Some),
        }
    }
}

impl Store {
    /// The ledger's payloads, in order.
    pub async fn events(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT payload, repeats FROM events WHERE session_id = $1 ORDER BY seq";
        let rows: Vec<Stored> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).fetch_all(pool).await?);
        rows.into_iter().map(whole).collect()
    }

    /// Reads `session_id`'s ledger in pages (see [`Ledger`]).
    pub fn ledger(&self, session_id: &str) -> Ledger {
        let (tx, pages) = mpsc::channel(1);
        let (store, id) = (self.clone(), session_id.to_string());
        tokio::spawn(async move {
            let sql =
                "SELECT seq, payload, repeats FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";
            let mut after = i64::MIN;
            loop {
                let rows: Result<Vec<(i64, String, Option<String>)>, sqlx::Error> =
                    with_pool!(&store.pool, |pool| sqlx::query_as(sql)
                        .bind(&id)
                        .bind(after)
                        .bind(LEDGER_PAGE)
                        .fetch_all(pool)
                        .await);
                let last = rows.as_ref().map_or(None, |r| r.last().map(|(seq, ..)| *seq));
                let page = rows
                    .map_err(StoreError::from)
                    .and_then(|r| r.into_iter().map(|(_, payload, repeats)| whole((payload, repeats))).collect());
                if tx.send(page).await.is_err() {
                    return;
                }
                // The end (an empty page was sent) or an error ends the read.
                let Some(seq) = last else { return };
                after = seq;
            }
        });
        Ledger { pages }
    }

    /// The session's latest `usage_update` payload: where its spending stood.
    pub async fn last_usage(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let sql = self.dialect().last_usage;
        Ok(with_pool!(&self.pool, |pool| sqlx::query_scalar(sql).bind(session_id).fetch_optional(pool).await?))
    }

    /// Payloads emitted by one turn, in order.
    pub async fn turn_events(&self, session_id: &str, turn: i64) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT payload, repeats FROM events WHERE session_id = $1 AND turn = $2 ORDER BY seq";
        let rows: Vec<Stored> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).bind(turn).fetch_all(pool).await?);
        rows.into_iter().map(whole).collect()
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

/// A stored payload and its `repeats` (see `store::packed`).
type Stored = (String, Option<String>);

/// The payload as it was sent.
fn whole((payload, repeats): Stored) -> Result<String, StoreError> {
    super::packed::unpack(payload, repeats.as_deref())
}

/// Highest stored (event seq, message seq, turn) of session `$1` (0 when none).
pub(super) const COUNTERS: &str = "SELECT (SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = $1), \
                                          (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1), \
                                          (SELECT COALESCE(MAX(turn), 0) FROM turns WHERE session_id = $1)";
