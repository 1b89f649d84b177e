//! Reading a session back: the event ledger (replayed by `session/load`), the model context,
//! the last usage report, and the next free sequence numbers.

use tokio::sync::mpsc;

use super::{Store, StoreError, with_pool};

/// Payloads read per page of a replay. Measured on 2026-12-04 (`npm run bench:scale`): a
/// replay of 100,000 took 120–125 ms with pages of 1,000, 118–134 ms with 2,000 and 139–153 ms
/// with 500, its peak RSS 19, 22 and 17.5 MB.
const LEDGER_PAGE: i64 = 1_000;

/// A session's ledger read a page at a time in order, the next page fetched while the caller
/// sends the current one: a replay of 100,000 updates holds a few pages, not the whole ledger,
/// and the database's reads overlap the client's writes. Dropped early, it stops reading.
pub struct Ledger {
    pages: mpsc::Receiver<Result<Page, StoreError>>,
}

/// One page of a ledger: its payloads, in order.
pub enum Page {
    /// Joined by newlines (no payload holds one), as the database gave them: no copy each.
    Joined(String),
    /// One by one (a page holding packed payloads, unpacked).
    Rows(Vec<String>),
}

impl Page {
    /// Whether it holds no payload (the page after the last; a joined page holds one at least).
    fn is_empty(&self) -> bool {
        matches!(self, Page::Rows(rows) if rows.is_empty())
    }

    /// The payloads, in order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = &str> + Send + '_> {
        match self {
            Page::Joined(text) => Box::new(text.split('\n')),
            Page::Rows(rows) => Box::new(rows.iter().map(String::as_str)),
        }
    }
}

impl Ledger {
    /// The next page; `None` after the last.
    pub async fn next(&mut self) -> Result<Option<Page>, StoreError> {
        match self.pages.recv().await {
            None => Ok(None),
            Some(Ok(page)) => Ok((!page.is_empty()).then_some(page)),
            Some(Err(e)) => Err(e),
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
            let mut after = i64::MIN;
            loop {
                let read = store.ledger_page(&id, after).await;
                let last = read.as_ref().map_or(None, |(_, last)| *last);
                if tx.send(read.map(|(page, _)| page)).await.is_err() {
                    return;
                }
                // The end (an empty page was sent) or an error ends the read.
                let Some(seq) = last else { return };
                after = seq;
            }
        });
        Ledger { pages }
    }

    /// The payloads after seq `after` (at most [`LEDGER_PAGE`]) and the last one's seq.
    ///
    /// The page comes as one row, its payloads joined by newlines: SQLite's driver hands each
    /// row from its own thread to the caller, and one hand-off (a thread woken) per update
    /// cost more than the rest of a replay. A payload is one JSON text with no raw newline
    /// (it goes out as one line of the wire), so the join splits back exactly; a page holding
    /// packed payloads (`repeats` set, rare: large diffs) or that does not split into as many
    /// payloads as it holds is read row by row instead.
    async fn ledger_page(&self, id: &str, after: i64) -> Result<(Page, Option<i64>), StoreError> {
        let sql = self.dialect().ledger_page;
        let (last, count, packed, joined): (Option<i64>, i64, i64, Option<String>) =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql)
                .bind(id)
                .bind(after)
                .bind(LEDGER_PAGE)
                .fetch_one(pool)
                .await?);
        let Some(last) = last else { return Ok((Page::Rows(Vec::new()), None)) };
        let joined = joined.unwrap_or_default();
        if packed == 0 && i64::try_from(joined.split('\n').count()).is_ok_and(|n| n == count) {
            return Ok((Page::Joined(joined), Some(last)));
        }
        let sql = "SELECT payload, repeats FROM events WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq";
        let rows: Vec<Stored> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(id).bind(after).bind(last).fetch_all(pool).await?);
        Ok((Page::Rows(rows.into_iter().map(whole).collect::<Result<_, _>>()?), Some(last)))
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

    /// The session's terminal updates (a background command's start is stored with the turn
    /// that started it, its output and end outside any turn), in order.
    pub async fn terminal_events(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT payload, repeats FROM events WHERE session_id = $1 \
                   AND payload LIKE '%\"terminal_update\"%' ORDER BY seq";
        let rows: Vec<Stored> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).fetch_all(pool).await?);
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
pub(super) type Stored = (String, Option<String>);

/// The payload as it was sent.
pub(super) fn whole((payload, repeats): Stored) -> Result<String, StoreError> {
    super::packed::unpack(payload, repeats.as_deref())
}

/// Highest stored (event seq, message seq, turn) of session `$1` (0 when none).
pub(super) const COUNTERS: &str = "SELECT (SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = $1), \
                                          (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1), \
                                          (SELECT COALESCE(MAX(turn), 0) FROM turns WHERE session_id = $1)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Location;
    use crate::store::batch::Record;

    /// Pages of the ledger, read as one row each or row by row where one is packed, are the
    /// whole ledger in order: past a page's end, across a packed payload, with escapes.
    #[tokio::test]
    async fn the_ledger_reads_back_every_payload_in_order() -> Result<(), StoreError> {
        let dir = std::env::temp_dir().join(format!("corvid-ledger-{}", uuid::Uuid::new_v4()));
        let store = Store::open(&Location::File(dir.join("sessions.db"))).await?;
        let id = "s".to_string();
        let session = Record::test_session(&id);
        let n = LEDGER_PAGE as usize * 2 + 7;
        let payload = |i: usize| {
            format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{i}\n\"é\""}}}}"#)
        };
        // One packed payload, in the second page: its second string copies the first.
        let packed_at = LEDGER_PAGE as usize + 3;
        let packed = r#"["ab","ab"]"#;
        let (text, repeats) =
            crate::store::packed::pack(packed, &[crate::store::packed::Repeat { at: 6, from: 1, len: 4 }])
                .expect("packs");
        let mut records = vec![session];
        for i in 1..=n {
            let (payload, repeats) =
                if i == packed_at { (text.clone(), Some(repeats.clone())) } else { (payload(i), None) };
            records.push(Record::Update { session_id: id.clone(), seq: i as i64, turn: None, payload, repeats });
        }
        store.write_batch(&records).await?;
        let mut read = Vec::new();
        let mut ledger = store.ledger(&id);
        while let Some(page) = ledger.next().await? {
            let before = read.len();
            read.extend(page.iter().map(str::to_string));
            assert!(read.len() - before <= LEDGER_PAGE as usize);
        }
        let expected: Vec<String> =
            (1..=n).map(|i| if i == packed_at { packed.to_string() } else { payload(i) }).collect();
        assert_eq!(read.len(), expected.len());
        assert!(read == expected, "the ledger reads back as written");
        assert_eq!(store.events(&id).await?, expected);
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
