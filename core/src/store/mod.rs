//! The session store: sessions, the event ledger, model context, turns and permission rules,
//! in SQLite (a file, the default) or PostgreSQL (a fleet of `corvid serve` processes sharing
//! sessions), through sqlx with runtime queries, so building needs no database.
//!
//! Both backends have the same logical schema (`migrations/` and `migrations-postgres/`,
//! numbered alike). Queries are written once with `$N` parameters, which both accept, and
//! run on the concrete pool through [`with_pool!`]: no `sqlx::Any` conversion on the hot path.
//! The few statements that differ (JSON functions, the clock) live in [`Dialect`].
//!
//! Writes come in batches ([`batch`]: the agent's write-behind outbox collects them), committed
//! one transaction each; reads are plain queries on the pool. A prompt turn first claims the
//! session in the store ([`Store::claim_turn`]), so two processes never run turns on one
//! session at once or write over each other's ledger.

pub mod batch;
mod postgres;
pub mod process;
mod sqlite;
pub mod time;

use std::path::{Path, PathBuf};

use sqlx::{PgPool, SqlitePool};

pub use process::Owner;

/// A store being opened in the background: its result, once, to everyone who awaits it.
pub type PendingStore = futures_util::future::Shared<futures_util::future::BoxFuture<'static, Result<Store, String>>>;

/// Runs `$body` with `$pool` bound to the store's concrete pool, once per backend: the query
/// text is written once and compiled for each driver.
macro_rules! with_pool {
    ($pool:expr, |$p:ident| $body:expr) => {
        match $pool {
            $crate::store::Pool::Sqlite($p) => $body,
            $crate::store::Pool::Postgres($p) => $body,
        }
    };
}
pub(crate) use with_pool;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data directory {path}: {source}")]
    DataDir { path: PathBuf, source: std::io::Error },
    #[error("cannot open the session store {location}: {source}")]
    Open { location: String, source: sqlx::Error },
    #[error("cannot migrate the session store {location}: {source}")]
    Migrate { location: String, source: sqlx::migrate::MigrateError },
    #[error("cannot lock {path} for migrations: {source}")]
    Lock { path: PathBuf, source: std::io::Error },
    #[error("unsupported store URL `{0}`: use a file path, sqlite://PATH or postgres://USER@HOST/DB")]
    Url(String),
    #[error("session store query failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("stored data is damaged: {0}")]
    Corrupt(String),
}

/// Where the store lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    File(PathBuf),
    /// A `postgres://` / `postgresql://` URL (may carry a password: show it with [`redact_url`]).
    Postgres(String),
}

/// Where the store lives, from `--store` / config (`None` = the default file in the data dir;
/// `Ok(None)` = no store).
pub fn resolve_location(store: Option<&str>, data_dir: &Path) -> Result<Option<Location>, StoreError> {
    match store {
        None => Ok(Some(Location::File(data_dir.join("sessions.db")))),
        Some("none" | "off" | "memory") => Ok(None),
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(Some(Location::Postgres(url.to_string())))
        }
        Some(url) => {
            let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
            if path.contains("://") {
                return Err(StoreError::Url(redact_url(url)));
            }
            Ok(Some(Location::File(PathBuf::from(path))))
        }
    }
}

/// `url` with any password replaced by `***` (in the user-info part and in a `password=`
/// query parameter), for logs, errors and `initialize`'s `_meta`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let (scheme, rest) = url.split_at(scheme_end);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (userinfo, host) = authority.split_at(at);
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***{host}"),
                None => authority.to_string(),
            }
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

/// The statements whose text differs between the backends.
pub(crate) struct Dialect {
    /// The latest `usage_update` payload of session `$1`.
    pub last_usage: &'static str,
    /// Sets `thought_level` (`$1`) in the `config` JSON of session `$2`.
    pub set_thought_level: &'static str,
    /// The turns of session `$1` stored as running: turn, owner (instance, host, pid, start)
    /// and the seconds since its heartbeat, by the database's clock (one clock for every host).
    pub running_turns: &'static str,
    /// Stores turn `$2` of session `$1` as running, owned by (`$3` pid, `$4` start, `$5`
    /// instance, `$6` host), started at `$7`, its heartbeat now.
    pub insert_turn: &'static str,
}

/// The dialect-independent part of [`Dialect::running_turns`] and [`Dialect::insert_turn`],
/// around each backend's expression for "now in Unix seconds".
macro_rules! turn_statements {
    ($($now_epoch:tt)+) => {
        (
            concat!(
                "SELECT turn, owner_instance, owner_host, owner_pid, owner_start, ",
                $($now_epoch)+,
                " - heartbeat_at FROM turns WHERE session_id = $1 AND status = 'running' ORDER BY turn"
            ),
            concat!(
                "INSERT INTO turns (session_id, turn, status, owner_pid, owner_start, owner_instance, owner_host, ",
                "started_at, heartbeat_at) VALUES ($1, $2, 'running', $3, $4, $5, $6, $7, ",
                $($now_epoch)+,
                ")"
            ),
        )
    };
}
pub(crate) use turn_statements;

/// A session row.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    pub id: String,
    pub cwd: String,
    pub additional_directories: Vec<String>,
    pub title: Option<String>,
    pub updated_at: String,
    pub model: Option<String>,
    pub mode: Option<String>,
    /// From the `config` JSON column.
    pub thought_level: Option<String>,
    /// The agent alias the session was created with.
    pub agent_alias: Option<String>,
}

/// A stored "always" permission answer.
#[derive(Debug, Clone)]
pub struct StoredRule {
    pub id: i64,
    pub tool: String,
    pub scope: String,
    pub allow: bool,
    pub created_at: String,
}

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

#[derive(Clone)]
pub struct Store {
    pool: Pool,
    /// For people: a path, or the URL without its password.
    location: String,
}

#[derive(Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// `SELECT <the columns of a SessionRow> FROM sessions <rest>`, as one static string.
macro_rules! select_sessions {
    ($rest:literal) => {
        concat!(
            "SELECT id, cwd, additional_directories, title, updated_at, model, mode, config, agent_alias FROM sessions ",
            $rest
        )
    };
}

type SessionRow =
    (String, String, String, Option<String>, String, Option<String>, Option<String>, Option<String>, Option<String>);

type TurnRow = (i64, String, String, i64, String, Option<i64>);

impl Store {
    /// Opens (creating if needed) and migrates the store.
    pub async fn open(location: &Location) -> Result<Self, StoreError> {
        match location {
            Location::File(path) => {
                Ok(Self { pool: Pool::Sqlite(sqlite::open(path).await?), location: path.display().to_string() })
            }
            Location::Postgres(url) => {
                let shown = redact_url(url);
                Ok(Self { pool: Pool::Postgres(postgres::open(url, &shown).await?), location: shown })
            }
        }
    }

    pub fn location(&self) -> &str {
        &self.location
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    pub(crate) fn dialect(&self) -> &'static Dialect {
        match self.pool {
            Pool::Sqlite(_) => &sqlite::DIALECT,
            Pool::Postgres(_) => &postgres::DIALECT,
        }
    }

    /// A live (not deleted) session.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let sql = select_sessions!("WHERE id = $1 AND deleted_at IS NULL");
        let row: Option<SessionRow> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(id).fetch_optional(pool).await?);
        row.map(session_record).transpose()
    }

    /// One page of sessions, most recently updated first. `after` is the (updated_at, id) of
    /// the last row of the previous page (keyset pagination: new sessions never shift pages).
    pub async fn list(
        &self,
        cwd: Option<&str>,
        after: Option<(String, String)>,
        limit: i64,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let (after_at, after_id) = after.unzip();
        let sql = select_sessions!(
            "WHERE deleted_at IS NULL AND ($1 IS NULL OR cwd = $1) \
               AND ($2 IS NULL OR (updated_at, id) < ($2, $3)) \
             ORDER BY updated_at DESC, id DESC LIMIT $4"
        );
        let rows: Vec<SessionRow> = with_pool!(&self.pool, |pool| sqlx::query_as(sql)
            .bind(cwd)
            .bind(after_at.as_deref())
            .bind(after_id.as_deref())
            .bind(limit)
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(session_record).collect()
    }

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

    /// The session's "always" answers that are still in force, oldest first.
    pub async fn rules(&self, session_id: &str) -> Result<Vec<StoredRule>, StoreError> {
        let sql = "SELECT id, tool, scope, decision, created_at FROM permission_rules \
                   WHERE (session_id = $1 OR session_id IS NULL) AND revoked_at IS NULL ORDER BY id";
        let rows: Vec<(i64, String, String, String, String)> =
            with_pool!(&self.pool, |pool| sqlx::query_as(sql).bind(session_id).fetch_all(pool).await?);
        Ok(rows
            .into_iter()
            .map(|(id, tool, scope, decision, created_at)| StoredRule {
                id,
                tool,
                scope,
                allow: decision == "allow",
                created_at,
            })
            .collect())
    }

    /// Revokes a rule of the session; returns it if it existed and was in force.
    pub async fn revoke_rule(&self, session_id: &str, id: i64) -> Result<Option<StoredRule>, StoreError> {
        let rule = self.rules(session_id).await?.into_iter().find(|r| r.id == id);
        if rule.is_some() {
            let sql = "UPDATE permission_rules SET revoked_at = $1 WHERE id = $2";
            let now = time::now_rfc3339();
            with_pool!(&self.pool, |pool| sqlx::query(sql).bind(&now).bind(id).execute(pool).await.map(drop)?);
        }
        Ok(rule)
    }
}

/// Highest stored (event seq, message seq, turn) of session `$1` (0 when none).
const COUNTERS: &str = "SELECT (SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = $1), \
                               (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = $1), \
                               (SELECT COALESCE(MAX(turn), 0) FROM turns WHERE session_id = $1)";

fn running_turn((turn, instance, host, pid, start, heartbeat_age): TurnRow) -> RunningTurn {
    RunningTurn { turn, owner: Owner { instance, host, pid, start }, heartbeat_age }
}

fn session_record(
    (id, cwd, dirs, title, updated_at, model, mode, config, agent_alias): SessionRow,
) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        id,
        cwd,
        additional_directories: serde_json::from_str(&dirs)
            .map_err(|e| StoreError::Corrupt(format!("additional_directories of a session: {e}")))?,
        title,
        updated_at,
        model,
        mode,
        thought_level: config
            .and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok())
            .and_then(|c| c.get("thought_level").and_then(|v| v.as_str()).map(str::to_string)),
        agent_alias,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(redact_url("postgres://corvid:s3cret@db:5432/corvid"), "postgres://corvid:***@db:5432/corvid");
        assert_eq!(redact_url("postgres://corvid@127.0.0.1:5/x"), "postgres://corvid@127.0.0.1:5/x");
        assert_eq!(
            redact_url("postgresql://u:p@h/d?sslmode=require&password=x"),
            "postgresql://u:***@h/d?sslmode=require&password=***"
        );
        assert_eq!(redact_url("postgres://u:p%40ss@h"), "postgres://u:***@h");
        assert_eq!(redact_url("/var/lib/sessions.db"), "/var/lib/sessions.db");
    }

    #[test]
    fn locations() {
        let data = Path::new("/data");
        assert_eq!(resolve_location(None, data).ok().flatten(), Some(Location::File(data.join("sessions.db"))));
        assert_eq!(resolve_location(Some("none"), data).ok().flatten(), None);
        assert_eq!(
            resolve_location(Some("sqlite:///tmp/s.db"), data).ok().flatten(),
            Some(Location::File(PathBuf::from("/tmp/s.db")))
        );
        assert_eq!(
            resolve_location(Some("postgres://u@h/d"), data).ok().flatten(),
            Some(Location::Postgres("postgres://u@h/d".into()))
        );
        let refused = resolve_location(Some("mysql://u:pw@h/d"), data).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("mysql://u:***@h/d"), "{refused}");
    }

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
