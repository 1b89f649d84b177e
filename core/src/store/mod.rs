//! The session store: sessions, the event ledger, model context, turns and permission rules,
//! in SQLite through sqlx (runtime queries, so building needs no database).
//!
//! Writes go through one write-behind task per connection ([`writer`]), which batches them
//! into transactions; reads are plain queries on the pool.

pub mod process;
pub mod time;
pub mod writer;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};

pub use process::Owner;

/// A store being opened in the background: its result, once, to everyone who awaits it.
pub type PendingStore = futures_util::future::Shared<futures_util::future::BoxFuture<'static, Result<Store, String>>>;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

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
    #[error("unsupported store URL `{0}`: use a file path or sqlite://PATH")]
    Url(String),
    #[error("session store query failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("stored data is damaged: {0}")]
    Corrupt(String),
}

/// Where the store lives, from `--store` / config (`None` = the default file in the data dir).
pub fn resolve_location(store: Option<&str>, data_dir: &Path) -> Result<Option<PathBuf>, StoreError> {
    match store {
        None => Ok(Some(data_dir.join("sessions.db"))),
        Some("none" | "off" | "memory") => Ok(None),
        Some(url) => {
            let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
            if path.contains("://") {
                return Err(StoreError::Url(url.to_string()));
            }
            Ok(Some(PathBuf::from(path)))
        }
    }
}

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

/// A turn that was running when its process stopped.
#[derive(Debug, Clone)]
pub struct RunningTurn {
    pub turn: i64,
    pub owner: Owner,
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    location: String,
}

impl Store {
    /// Opens (creating if needed) and migrates the store at `path`.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::DataDir { path: dir.to_path_buf(), source })?;
        }
        let location = path.display().to_string();
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{location}"))
            .map_err(|source| StoreError::Open { location: location.clone(), source })?
            .create_if_missing(true)
            // WAL + NORMAL: a committed transaction survives the process being killed; only
            // a power loss can take the last few back. Several processes may share the file.
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            // 1 MiB of page cache per connection (SQLite's default is 2 MiB): the hot pages are
            // the tail of the ledger, and memory is a product target.
            .pragma("cache_size", "-1024");
        let t0 = std::time::Instant::now();
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open { location: location.clone(), source })?;
        let connected = t0.elapsed();
        // sqlx cannot lock an SQLite database around its migrations, so two processes starting
        // on a new file would both try to create the tables. A lock file serializes them.
        let lock = migration_lock(path).await?;
        MIGRATOR.run(&pool).await.map_err(|source| StoreError::Migrate { location: location.clone(), source })?;
        drop(lock);
        tracing::debug!(
            connect_us = connected.as_micros() as u64,
            total_us = t0.elapsed().as_micros() as u64,
            "session store open"
        );
        Ok(Self { pool, location })
    }

    pub fn location(&self) -> &str {
        &self.location
    }

    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// A live (not deleted) session.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT id, cwd, additional_directories, title, updated_at, model, mode, config, agent_alias FROM sessions \
             WHERE id = ? AND deleted_at IS NULL",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| session_record(&r)).transpose()
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
        let rows = sqlx::query(
            "SELECT id, cwd, additional_directories, title, updated_at, model, mode, config, agent_alias FROM sessions \
             WHERE deleted_at IS NULL AND (?1 IS NULL OR cwd = ?1) \
               AND (?2 IS NULL OR (updated_at, id) < (?2, ?3)) \
             ORDER BY updated_at DESC, id DESC LIMIT ?4",
        )
        .bind(cwd)
        .bind(after_at)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(session_record).collect()
    }

    /// The ledger's payloads, in order.
    pub async fn events(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let query = sqlx::query("SELECT payload FROM events WHERE session_id = ? ORDER BY seq").bind(session_id);
        self.texts(query).await
    }

    /// The session's latest `usage_update` payload: where its spending stood.
    pub async fn last_usage(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let query = sqlx::query(
            "SELECT payload FROM events WHERE session_id = ? \
             AND json_extract(payload, '$.sessionUpdate') = 'usage_update' ORDER BY seq DESC LIMIT 1",
        )
        .bind(session_id);
        Ok(self.texts(query).await?.pop())
    }

    /// Payloads emitted by one turn, in order.
    pub async fn turn_events(&self, session_id: &str, turn: i64) -> Result<Vec<String>, StoreError> {
        let query = sqlx::query("SELECT payload FROM events WHERE session_id = ? AND turn = ? ORDER BY seq")
            .bind(session_id)
            .bind(turn);
        self.texts(query).await
    }

    /// The model-context messages (JSON), in order.
    pub async fn messages(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let query = sqlx::query("SELECT content FROM messages WHERE session_id = ? ORDER BY seq").bind(session_id);
        self.texts(query).await
    }

    /// The first (text) column of every row of `query`.
    async fn texts<'q>(
        &self,
        query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    ) -> Result<Vec<String>, StoreError> {
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(|r| r.try_get::<String, _>(0).map_err(StoreError::from)).collect()
    }

    /// The next free (event seq, message seq, turn number) of a session.
    pub async fn counters(&self, session_id: &str) -> Result<(i64, i64, i64), StoreError> {
        let row = sqlx::query(
            "SELECT (SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?1), \
                    (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?1), \
                    (SELECT COALESCE(MAX(turn), 0) FROM turns WHERE session_id = ?1)",
        )
        .bind(session_id)
        .fetch_one(&self.pool)
        .await?;
        Ok((row.try_get::<i64, _>(0)? + 1, row.try_get::<i64, _>(1)? + 1, row.try_get::<i64, _>(2)? + 1))
    }

    pub async fn running_turns(&self, session_id: &str) -> Result<Vec<RunningTurn>, StoreError> {
        let rows = sqlx::query(
            "SELECT turn, owner_pid, owner_start FROM turns WHERE session_id = ? AND status = 'running' ORDER BY turn",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok(RunningTurn { turn: r.try_get(0)?, owner: Owner { pid: r.try_get(1)?, start: r.try_get(2)? } }))
            .collect()
    }

    /// The session's "always" answers that are still in force, oldest first.
    pub async fn rules(&self, session_id: &str) -> Result<Vec<StoredRule>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, tool, scope, decision, created_at FROM permission_rules \
             WHERE (session_id = ? OR session_id IS NULL) AND revoked_at IS NULL ORDER BY id",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(StoredRule {
                    id: r.try_get(0)?,
                    tool: r.try_get(1)?,
                    scope: r.try_get(2)?,
                    allow: r.try_get::<String, _>(3)? == "allow",
                    created_at: r.try_get(4)?,
                })
            })
            .collect()
    }

    /// Revokes a rule of the session; returns it if it existed and was in force.
    pub async fn revoke_rule(&self, session_id: &str, id: i64) -> Result<Option<StoredRule>, StoreError> {
        let rule = self.rules(session_id).await?.into_iter().find(|r| r.id == id);
        if rule.is_some() {
            sqlx::query("UPDATE permission_rules SET revoked_at = ? WHERE id = ?")
                .bind(time::now_rfc3339())
                .bind(id)
                .execute(&self.pool)
                .await?;
        }
        Ok(rule)
    }

    /// SQLite's own consistency check (`ok` when healthy).
    pub async fn integrity_check(&self) -> Result<String, StoreError> {
        let row = sqlx::query("PRAGMA integrity_check").fetch_one(&self.pool).await?;
        Ok(row.try_get::<String, _>(0)?)
    }
}

/// An exclusive advisory lock on `<db>.lock`, held while migrating.
async fn migration_lock(db: &Path) -> Result<std::fs::File, StoreError> {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    let path = PathBuf::from(name);
    let shown = path.clone();
    tokio::task::spawn_blocking(move || {
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
        file.lock()?;
        Ok(file)
    })
    .await
    .map_err(|e| StoreError::Lock { path: shown.clone(), source: std::io::Error::other(e) })?
    .map_err(|source| StoreError::Lock { path: shown, source })
}

fn session_record(r: &sqlx::sqlite::SqliteRow) -> Result<SessionRecord, StoreError> {
    let dirs: String = r.try_get(2)?;
    Ok(SessionRecord {
        id: r.try_get(0)?,
        cwd: r.try_get(1)?,
        additional_directories: serde_json::from_str(&dirs)
            .map_err(|e| StoreError::Corrupt(format!("additional_directories of a session: {e}")))?,
        title: r.try_get(3)?,
        updated_at: r.try_get(4)?,
        model: r.try_get(5)?,
        mode: r.try_get(6)?,
        thought_level: r
            .try_get::<Option<String>, _>(7)?
            .and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok())
            .and_then(|c| c.get("thought_level").and_then(|v| v.as_str()).map(str::to_string)),
        agent_alias: r.try_get(8)?,
    })
}
