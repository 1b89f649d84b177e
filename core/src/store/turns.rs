//! Turns stored as running, and [`Store::claim_turn`]: holding a session for one prompt turn
//! so two processes never run turns in it at once or write over each other's ledger.

use super::ledger::COUNTERS;
use super::process::{self, Owner};
use super::{Store, StoreError, with_pool};

/// A turn stored as running.
#[derive(Debug, Clone)]
pub struct RunningTurn {
    pub turn: i64,
    pub owner: Owner,
    /// Seconds since the owner last said it is alive (PostgreSQL fleets; `None` if never).
    pub heartbeat_age: Option<i64>,
}

/// The answer to [`Store::claim_turn`].
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The turn is stored as running, owned by this process.
    Claimed,
    /// A live process (this one on another connection, or another server) runs turn `turn`.
    Busy { turn: i64, host: String },
    /// The session changed in the store since this process loaded it (another server ran a
    /// turn in it): continuing would fork its history.
    Stale,
}

type TurnRow = (i64, String, String, i64, String, Option<i64>);

/// How the session's last turn ended, as stored: its status (`finished`, `failed`,
/// `interrupted`, or `running`) and, for a finished one, its stop reason.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnding {
    pub status: String,
    pub stop_reason: Option<String>,
}

impl Store {
    /// The session's last turn's ending, or `None` if it had no turn.
    pub async fn last_turn_ending(&self, session_id: &str) -> Result<Option<TurnEnding>, StoreError> {
        const SQL: &str = "SELECT status, stop_reason FROM turns WHERE session_id = $1 ORDER BY turn DESC LIMIT 1";
        let row: Option<(String, Option<String>)> =
            with_pool!(&self.pool, |pool| sqlx::query_as(SQL).bind(session_id).fetch_optional(pool).await?);
        Ok(row.map(|(status, stop_reason)| TurnEnding { status, stop_reason }))
    }

    pub async fn running_turns(&self, session_id: &str) -> Result<Vec<RunningTurn>, StoreError> {
        let sql = self.dialect().running_turns;
        let rows: Vec<TurnRow> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).fetch_all(pool).await?);
        Ok(rows.into_iter().map(running_turn).collect())
    }

    /// Claims the session for prompt turn `turn` of this process: in one transaction that
    /// holds the session (its row lock in PostgreSQL, the write lock in SQLite), checks that
    /// no live process runs a turn in it and that nothing was stored past the counters this
    /// process holds, then stores the turn as running.
    ///
    /// `counters` gives this process's next (event seq, message seq). It is read after the
    /// stored ones, because this connection may store rows of its own meanwhile (the slash
    /// commands announced after `session/new`, a mode change): those were numbered before
    /// they were stored, so they always stay below it.
    ///
    /// A session without a row (its creation was never stored) is claimed without a check.
    pub async fn claim_turn(
        &self,
        session_id: &str,
        turn: i64,
        at: &str,
        counters: impl Fn() -> (i64, i64),
    ) -> Result<Claim, StoreError> {
        let dialect = self.dialect();
        let me = process::me();
        with_pool!(&self.pool, |pool| {
            let mut tx = pool.begin().await?;
            let held = sqlx::query("UPDATE sessions SET updated_at = updated_at WHERE id = $1")
                .bind(session_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if held == 0 {
                return Ok(Claim::Claimed);
            }
            let running: Vec<TurnRow> =
                sqlx::query_as(dialect.running_turns).bind(session_id).fetch_all(&mut *tx).await?;
            if let Some(live) = running.into_iter().map(running_turn).find(process::is_running) {
                return Ok(Claim::Busy { turn: live.turn, host: live.owner.host });
            }
            let (seq, message, last_turn): (i64, i64, i64) =
                sqlx::query_as(COUNTERS).bind(session_id).fetch_one(&mut *tx).await?;
            let (next_seq, next_message_seq) = counters();
            if seq >= next_seq || message >= next_message_seq || last_turn >= turn {
                return Ok(Claim::Stale);
            }
            sqlx::query(dialect.insert_turn)
                .bind(session_id)
                .bind(turn)
                .bind(me.pid)
                .bind(&me.start)
                .bind(&me.instance)
                .bind(&me.host)
                .bind(at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok(Claim::Claimed)
    }
}

fn running_turn((turn, instance, host, pid, start, heartbeat_age): TurnRow) -> RunningTurn {
    RunningTurn { turn, owner: Owner { instance, host, pid, start }, heartbeat_age }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Location, time};

    /// A stored session with two events and one finished turn.
    async fn seeded(store: &Store, id: &str) -> Result<(), StoreError> {
        let at = time::now_rfc3339();
        with_pool!(store.pool(), |pool| {
            sqlx::query("INSERT INTO sessions (id, cwd, created_at, updated_at) VALUES ($1, '/w', $2, $2)")
                .bind(id)
                .bind(&at)
                .execute(pool)
                .await?;
            sqlx::query(
                "INSERT INTO events (session_id, seq, turn, payload) VALUES ($1, 1, 1, '{}'), ($1, 2, 1, '{}')",
            )
            .bind(id)
            .execute(pool)
            .await?;
            sqlx::query(
                "INSERT INTO turns (session_id, turn, status, owner_pid, owner_start, started_at) \
                 VALUES ($1, 1, 'finished', 1, 'x', $2)",
            )
            .bind(id)
            .bind(&at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The claim rules, on whichever backend `store` is.
    async fn claims(store: &Store) -> Result<(), StoreError> {
        let id = uuid::Uuid::new_v4().to_string();
        seeded(store, &id).await?;
        let at = time::now_rfc3339();
        assert_eq!(store.counters(&id).await?, (3, 1, 2));
        // Behind what is stored: another process wrote since this one loaded.
        assert_eq!(store.claim_turn(&id, 2, &at, || (2, 1)).await?, Claim::Stale);
        assert_eq!(store.claim_turn(&id, 1, &at, || (3, 1)).await?, Claim::Stale);
        assert_eq!(store.claim_turn(&id, 2, &at, || (3, 1)).await?, Claim::Claimed);
        // The turn is stored as running, owned by this live process (another connection here
        // or another server would be refused the same way).
        assert_eq!(
            store.claim_turn(&id, 3, &at, || (3, 1)).await?,
            Claim::Busy { turn: 2, host: process::me().host.clone() }
        );
        let running = store.running_turns(&id).await?;
        assert_eq!(running.len(), 1);
        assert_eq!(&running[0].owner, process::me());
        assert!(running[0].heartbeat_age.is_some_and(|age| (0..5).contains(&age)));
        // An owner on another host whose heartbeat stopped is dead: its turn no longer blocks.
        with_pool!(store.pool(), |pool| {
            sqlx::query("UPDATE turns SET owner_instance = 'gone', owner_host = 'elsewhere', heartbeat_at = 0 WHERE session_id = $1")
                .bind(&id)
                .execute(pool)
                .await?;
        });
        assert!(!process::is_running(&store.running_turns(&id).await?[0]));
        assert_eq!(store.claim_turn(&id, 3, &at, || (3, 1)).await?, Claim::Claimed);
        Ok(())
    }

    #[tokio::test]
    async fn turn_claims_on_sqlite() -> Result<(), StoreError> {
        let dir = std::env::temp_dir().join(format!("corvid-claims-{}", uuid::Uuid::new_v4()));
        let store = Store::open(&Location::File(dir.join("sessions.db"))).await?;
        let outcome = claims(&store).await;
        let _ = std::fs::remove_dir_all(&dir);
        outcome
    }

    /// Against the PostgreSQL of `CORVID_TEST_PG_URL` (scripts/pg-cluster.sh); required in CI.
    #[tokio::test]
    #[allow(clippy::print_stderr)]
    async fn turn_claims_on_postgres() -> Result<(), StoreError> {
        let Ok(url) = std::env::var("CORVID_TEST_PG_URL") else {
            assert!(std::env::var_os("CI").is_none(), "CI runs the PostgreSQL tests: set CORVID_TEST_PG_URL");
            eprintln!("skipped: CORVID_TEST_PG_URL is not set (source scripts/pg-cluster.sh; pg_cluster_start)");
            return Ok(());
        };
        claims(&Store::open(&Location::Postgres(url)).await?).await
    }
}
