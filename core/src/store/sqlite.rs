//! The SQLite backend: one file, opened in WAL mode; several processes on one host may share it.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::{Dialect, StoreError};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

pub(super) const DIALECT: Dialect = Dialect {
    last_usage: "SELECT payload FROM events WHERE session_id = $1 \
                 AND json_extract(payload, '$.sessionUpdate') = 'usage_update' ORDER BY seq DESC LIMIT 1",
    set_thought_level: "UPDATE sessions SET config = json_set(config, '$.thought_level', $1) WHERE id = $2",
    set_system_prompt: "UPDATE sessions SET config = json_set(config, '$.system_prompt', $1) WHERE id = $2",
    running_turns: TURN_STATEMENTS.0,
    insert_turn: TURN_STATEMENTS.1,
};

/// Now in Unix seconds, by the database's clock.
macro_rules! now_epoch {
    () => {
        "unixepoch()"
    };
}
const TURN_STATEMENTS: (&str, &str) = super::dialect::turn_statements!(now_epoch!());

/// Opens (creating if needed) and migrates the file at `path`.
pub(super) async fn open(path: &Path) -> Result<SqlitePool, StoreError> {
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
    if !up_to_date(&pool).await {
        // sqlx cannot lock an SQLite database around its migrations, so two processes
        // starting on a new file would both try to create the tables. A lock file serializes
        // them.
        let lock = migration_lock(path).await?;
        MIGRATOR.run(&pool).await.map_err(|source| StoreError::Migrate { location: location.clone(), source })?;
        drop(lock);
    }
    tracing::debug!(
        connect_us = connected.as_micros() as u64,
        total_us = t0.elapsed().as_micros() as u64,
        "session store open"
    );
    Ok(pool)
}

/// Whether the file already has exactly our migrations, applied (every start after the first).
/// One read instead of the lock file and sqlx's migrator, which writes (it creates its table
/// if missing) before it looks; `initialize` waits for the store, so this is start-up time.
/// Anything else (a new file, a newer or different schema, a failed migration) takes the full
/// path, which applies what is missing or reports the mismatch.
async fn up_to_date(pool: &SqlitePool) -> bool {
    let applied: Result<Vec<(i64, Vec<u8>)>, _> =
        sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(pool)
            .await;
    let Ok(applied) = applied else { return false };
    let ours = MIGRATOR.iter().filter(|m| m.migration_type.is_up_migration());
    let ours: Vec<(i64, Vec<u8>)> = ours.map(|m| (m.version, m.checksum.to_vec())).collect();
    applied == ours
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_a_file_with_exactly_our_migrations_skips_the_migrator() -> Result<(), StoreError> {
        let dir = std::env::temp_dir().join(format!("corvid-migrate-{}", uuid::Uuid::new_v4()));
        let path = dir.join("sessions.db");
        let fresh = open(&path).await?;
        assert!(up_to_date(&fresh).await, "open migrated the new file");
        fresh.close().await;

        // A schema this build does not know (a newer Corvid's, or a changed migration) is not
        // up to date: the migrator runs and reports it.
        let pool = open(&path).await?;
        sqlx::query("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 1")
            .execute(&pool)
            .await
            .map_err(|source| StoreError::Open { location: path.display().to_string(), source })?;
        assert!(!up_to_date(&pool).await);
        pool.close().await;
        assert!(matches!(open(&path).await, Err(StoreError::Migrate { .. })));

        let empty = dir.join("empty.db");
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", empty.display()))
            .map_err(|source| StoreError::Open { location: String::new(), source })?
            .create_if_missing(true);
        let pool = SqlitePoolOptions::new()
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open { location: String::new(), source })?;
        assert!(!up_to_date(&pool).await, "no migrations table at all");
        pool.close().await;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
