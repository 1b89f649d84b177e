//! The SQLite backend: one file, opened in WAL mode; several processes on one host may share it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::stamp::{Header, fingerprint};
use super::{Dialect, StoreError};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

pub(super) const DIALECT: Dialect = Dialect {
    last_usage: "SELECT payload FROM events WHERE session_id = $1 \
                 AND json_extract(payload, '$.sessionUpdate') = 'usage_update' ORDER BY seq DESC LIMIT 1",
    set_thought_level: "UPDATE sessions SET config = json_set(config, '$.thought_level', $1) WHERE id = $2",
    set_system_prompt: "UPDATE sessions SET config = json_set(config, '$.system_prompt', $1) WHERE id = $2",
    running_turns: TURN_STATEMENTS.0,
    insert_turn: TURN_STATEMENTS.1,
    ledger_page: super::dialect::ledger_page!("group_concat(payload, char(10) ORDER BY seq)"),
};

/// Now in Unix seconds, by the database's clock.
macro_rules! now_epoch {
    () => {
        "unixepoch()"
    };
}
const TURN_STATEMENTS: (&str, &str) = super::dialect::turn_statements!(now_epoch!());

/// [`open_as`] without a promise (the tests').
#[cfg(test)]
pub(super) async fn open(path: &Path) -> Result<SqlitePool, StoreError> {
    open_as(path, false).await
}

/// Opens (creating if needed) and migrates the file at `path`. `promised`: [`will_open`] said
/// yes for this file a moment ago, and its reading of the header and the log (up to 2,048
/// frames) is not done a second time.
pub(super) async fn open_as(path: &Path, promised: bool) -> Result<SqlitePool, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::DataDir { path: dir.to_path_buf(), source })?;
    }
    let location = path.display().to_string();
    // The path as it is, not in a URL: there `?` would start parameters and `%41` be read as
    // `A`, and another file would be opened than the one `will_open` looked at.
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        // WAL + NORMAL: a committed transaction survives the process being killed; only
        // a power loss can take the last few back. Several processes may share the file.
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true)
        // 1 MiB of page cache per connection (SQLite's default is 2 MiB): the hot pages are
        // the tail of the ledger, and memory is a product target.
        .pragma("cache_size", "-1024")
        // No checkpoint inside a commit: `Checkpoints` runs them beside the writes.
        .pragma("wal_autocheckpoint", "0");
    let t0 = std::time::Instant::now();
    // Two openers of a file that is not yet in WAL mode (processes starting together on a
    // fresh data directory) both switch it to WAL, which takes an exclusive lock, and SQLite
    // answers one of them "database is locked" at once, busy timeout or not (seen: 2 of 300
    // processes started three at a time). That process would run without a store. Until the
    // file is in WAL mode, opening is serialized by the lock file, as migrating is.
    let header = if promised { None } else { Header::read(path) };
    let mut lock = if promised || header.is_some_and(|h| h.wal) { None } else { Some(setup_lock(path).await?) };
    // A file that a start of this build (or of one with the same migrations) has migrated or
    // checked says so in its header and the log's copies of it: no query needed.
    let current = promised || header.is_some_and(|h| h.is_current(path, ours()));
    let pool = SqlitePoolOptions::new()
        // A writer, a reader, and the background checkpoint.
        .max_connections(3)
        // No ping before each use: a connection to a local file does not go stale, and the
        // ping is a round trip to the connection's worker thread on every write batch and
        // every read, the first of them on `initialize`'s path (measured there: 320 → 240 µs
        // for the schema check).
        .test_before_acquire(false)
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Open { location: location.clone(), source })?;
    let connected = t0.elapsed();
    if !current {
        if !up_to_date(&pool).await {
            // sqlx cannot lock an SQLite database around its migrations, so two processes
            // starting on a new file would both try to create the tables. A lock file
            // serializes them.
            if lock.is_none() {
                lock = Some(setup_lock(path).await?);
            }
            // No stamp while migrating: a migration cut short (a killed process) leaves a
            // header in the log that no build vouches for (`Header::is_current`).
            sqlx::query("PRAGMA user_version = 0").execute(&pool).await?;
            MIGRATOR.run(&pool).await.map_err(|source| StoreError::Migrate { location: location.clone(), source })?;
        }
        stamp(&pool).await;
        fold_log(&pool).await;
    }
    drop(lock);
    tracing::debug!(
        connect_us = connected.as_micros() as u64,
        total_us = t0.elapsed().as_micros() as u64,
        checked = !current,
        "session store open"
    );
    Ok(pool)
}

/// Whether opening `path` is sure to succeed (as sure as it can be without opening it): the
/// file's header, and every copy of it in the log, show this build's schema stamp
/// ([`Header::is_current`]: nothing to migrate or check), and the file and its directory (where
/// SQLite puts the log and its index) are writable. A file that is not a database, is another
/// build's, or was left mid-migration says no.
pub(super) fn will_open(path: &Path) -> bool {
    let writable =
        std::fs::OpenOptions::new().read(true).write(true).open(path).is_ok() && path.parent().is_none_or(dir_writable);
    writable && Header::read(path).is_some_and(|h| h.is_current(path, ours()))
}

#[cfg(unix)]
fn dir_writable(dir: &Path) -> bool {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

#[cfg(not(unix))]
fn dir_writable(dir: &Path) -> bool {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    std::fs::metadata(dir).is_ok_and(|m| !m.permissions().readonly())
}

/// About how many pages SQLite's own auto-checkpoint lets the log reach (its default, 1,000).
const CHECKPOINT_PAGES: u64 = 1000;
const PAGE: u64 = 4096;
/// Pages a commit is counted for besides its bytes: the b-tree and index pages it touches.
const PAGES_PER_COMMIT: u64 = 3;

/// Checkpoints of the write-ahead log, off the commit path.
///
/// SQLite's auto-checkpoint runs inside the commit that grows the log past 1,000 pages: it
/// copies the log into the file and syncs both (about four fsyncs), and that commit's frames
/// wait for it. An edit's diff update (the whole old and new text, megabytes) crossed that
/// line on every edit. Here auto-checkpoints are off (`wal_autocheckpoint = 0`) and a commit
/// only counts about how many pages it appended; past the same size, a PASSIVE checkpoint
/// (which never blocks writers or readers) runs on a task of its own, one at a time, while the
/// next commits go on. Closing the store checkpoints what is left and removes the log.
#[derive(Default)]
pub(super) struct Checkpoints {
    /// Pages appended since the last checkpoint started (estimated).
    pages: AtomicU64,
    running: AtomicBool,
}

impl Checkpoints {
    /// Counts a committed batch of about `bytes`; starts a checkpoint once the log is big enough.
    pub(super) fn committed(self: &Arc<Self>, pool: &SqlitePool, bytes: u64) {
        let pages = bytes.div_ceil(PAGE) + PAGES_PER_COMMIT;
        if self.pages.fetch_add(pages, Ordering::Relaxed) + pages < CHECKPOINT_PAGES
            || self.running.swap(true, Ordering::AcqRel)
        {
            return;
        }
        self.pages.store(0, Ordering::Relaxed);
        let (this, pool) = (self.clone(), pool.clone());
        tokio::spawn(async move {
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(&pool).await {
                // The log stays until the next try (or the close): nothing is lost.
                tracing::debug!(error = %e, "background WAL checkpoint failed");
            }
            this.running.store(false, Ordering::Release);
        });
    }
}

/// Whether the file already has exactly our migrations, applied: asked when its header's stamp
/// cannot say (the first start of this build on it, or with frames in the log). One read
/// instead of the lock file and sqlx's migrator, which writes (it creates its table if
/// missing) before it looks; `initialize` waits for the store, so this is start-up time.
/// Anything else (a new file, a newer or different schema, a failed migration) takes the full
/// path, which applies what is missing or reports the mismatch.
async fn up_to_date(pool: &SqlitePool) -> bool {
    let applied: Result<Vec<(i64, Vec<u8>)>, _> =
        sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(pool)
            .await;
    let Ok(applied) = applied else { return false };
    let ours: Vec<(i64, Vec<u8>)> = our_migrations().map(|m| (m.version, m.checksum.to_vec())).collect();
    applied == ours
}

/// This build's migrations, in order (the ones applied: no down migrations).
fn our_migrations() -> impl Iterator<Item = &'static sqlx::migrate::Migration> {
    MIGRATOR.iter().filter(|m| m.migration_type.is_up_migration())
}

/// This build's stamp ([`super::stamp`]): the fingerprint of its migrations.
fn ours() -> u32 {
    static STAMP: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *STAMP.get_or_init(|| fingerprint(our_migrations().map(|m| (m.version, &*m.checksum))))
}

/// Writes this build's stamp into the file's header, once its migrations are known to be
/// exactly ours. A failure costs only speed: the next start checks again.
async fn stamp(pool: &SqlitePool) {
    let sql = format!("PRAGMA user_version = {}", ours());
    if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(pool).await {
        tracing::debug!(error = %e, "cannot stamp the session store's schema; the next start checks it again");
    }
}

/// Folds the log into the file and empties it, in the background, after a start that had to
/// check the file: the headers from before the stamp stay in the log until then, and a process
/// killed before any checkpoint (editors that drop their agent kill it) would leave them for
/// every later start to find, and check again. The connection is taken before the task
/// starts, so a pool closed at once still waits for the fold (a task that had not yet asked
/// for one found the pool closed, and the log kept its old headers).
async fn fold_log(pool: &SqlitePool) {
    let mut conn = match pool.acquire().await {
        Ok(conn) => conn,
        Err(e) => {
            tracing::debug!(error = %e, "cannot fold the log in after the schema check; a later start checks again");
            return;
        }
    };
    tokio::spawn(async move {
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&mut *conn).await {
            tracing::debug!(error = %e, "cannot fold the log in after the schema check; a later start checks again");
        }
    });
}

/// An exclusive advisory lock on `<db>.lock`, held while a new file is set up or migrated.
async fn setup_lock(db: &Path) -> Result<std::fs::File, StoreError> {
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
    use std::str::FromStr;

    use super::*;

    /// With SQLite's own auto-checkpoint off, only `Checkpoints` copies the log into the file
    /// before the store closes: the file grows past the log's threshold while the store is open.
    #[tokio::test]
    async fn a_big_log_is_checkpointed_in_the_background() -> Result<(), StoreError> {
        use crate::store::batch::Record;
        use crate::store::{Location, Store};
        let dir = std::env::temp_dir().join(format!("corvid-checkpoint-{}", uuid::Uuid::new_v4()));
        let path = dir.join("sessions.db");
        let store = Store::open(&Location::File(path.clone())).await?;
        let id = "s".to_string();
        let session = Record::test_session(&id);
        store.write_batch(&[session]).await?;
        let before = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        // Six updates of 1 MiB: past the threshold (about 4 MiB of log).
        let payload = format!(
            r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}"}}}}"#,
            "x".repeat(1 << 20)
        );
        for seq in 1..=6 {
            let update =
                Record::Update { session_id: id.clone(), seq, turn: None, payload: payload.clone(), repeats: None };
            store.write_batch(&[update]).await?;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let grown = loop {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if size >= 4 << 20 || std::time::Instant::now() > deadline {
                break size;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(grown >= 4 << 20, "the file grew from {before} to only {grown} bytes: no checkpoint ran");
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    /// Several openers of one new file at once (processes starting together on a fresh data
    /// directory) all get the store: none is told "database is locked" and left without one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn openers_of_a_new_file_at_once_all_open_it() {
        let dir = std::env::temp_dir().join(format!("corvid-race-{}", uuid::Uuid::new_v4()));
        for round in 0..30 {
            let path = dir.join(format!("{round}.db"));
            let opens = (0..6).map(|_| {
                let path = path.clone();
                tokio::spawn(async move { open(&path).await })
            });
            for (k, opened) in futures_util::future::join_all(opens).await.into_iter().enumerate() {
                match opened.expect("the opener's task ran") {
                    Ok(pool) => pool.close().await,
                    Err(e) => panic!("round {round}, opener {k}: {e}"),
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The header's stamp stands in for the check of the migrations table only where it can:
    /// it is written by a start that checked (or migrated), and trusted only where the log agrees.
    #[tokio::test]
    async fn the_stamp_is_written_once_checked_and_not_trusted_beside_a_bad_log() -> Result<(), StoreError> {
        let dir = std::env::temp_dir().join(format!("corvid-stamp-{}", uuid::Uuid::new_v4()));
        let path = dir.join("sessions.db");
        let stamped = |path: &Path| Header::read(path).is_some_and(|h| h.is_current(path, ours()));
        open(&path).await?.close().await;
        assert!(stamped(&path), "a new file is stamped once migrated");

        // A file from before stamps: the check runs, finds our migrations, and stamps it.
        let pool = open(&path).await?;
        sqlx::query("PRAGMA user_version = 0")
            .execute(&pool)
            .await
            .map_err(|source| StoreError::Open { location: path.display().to_string(), source })?;
        pool.close().await;
        assert!(!stamped(&path));
        open(&path).await?.close().await;
        assert!(stamped(&path), "the check stamped it");

        // A log that cannot be read as one: what it holds is unknown, so the header is not
        // trusted (a log's copies of the header: `stamp`'s tests).
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        std::fs::write(&wal, b"frames").map_err(|source| StoreError::DataDir { path: dir.clone(), source })?;
        assert!(!stamped(&path));
        std::fs::write(&wal, b"").map_err(|source| StoreError::DataDir { path: dir.clone(), source })?;
        assert!(stamped(&path), "an empty log holds nothing the header could miss");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    /// `will_open` promises only what the open will find: a database of this build's schema,
    /// closed cleanly, or left with a log (a process at work, or killed) whose copies of the
    /// header all carry this build's stamp.
    #[tokio::test]
    async fn only_a_file_of_this_build_promises_to_open() -> Result<(), StoreError> {
        let dir = std::env::temp_dir().join(format!("corvid-promise-{}", uuid::Uuid::new_v4()));
        let io = |source| StoreError::DataDir { path: dir.clone(), source };
        let path = dir.join("sessions.db");
        assert!(!will_open(&path), "no file yet");
        let pool = open(&path).await?;
        // Just migrated: the log holds headers from before the stamp until it is folded in.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !will_open(&path) {
            assert!(std::time::Instant::now() < deadline, "the log of the migration was not folded in");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        pool.close().await;
        assert!(will_open(&path), "closed cleanly");

        // What a killed process leaves: the file and its log as they are while it runs.
        let killed = |name: &str| -> Result<PathBuf, StoreError> {
            let copy = dir.join(name);
            std::fs::copy(&path, &copy).map_err(io)?;
            let mut log = copy.as_os_str().to_owned();
            log.push("-wal");
            std::fs::copy(dir.join("sessions.db-wal"), log).map_err(io)?;
            Ok(copy)
        };
        let pool = open(&path).await?;
        assert!(will_open(&path), "open elsewhere, nothing in its log");
        sqlx::query("CREATE TABLE scratch (x)").execute(&pool).await?;
        for _ in 0..50 {
            sqlx::query("INSERT INTO scratch VALUES (randomblob(2000))").execute(&pool).await?;
        }
        let copy = killed("killed.db")?;
        assert!(will_open(&copy), "a log whose headers all carry our stamp");
        let reopened = open(&copy).await?;
        let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM scratch").fetch_one(&reopened).await?;
        assert_eq!(rows, 50, "the copy is what a kill leaves: the log is read back");
        reopened.close().await;

        sqlx::query("PRAGMA user_version = 7").execute(&pool).await?;
        sqlx::query("INSERT INTO scratch VALUES (1)").execute(&pool).await?;
        assert!(!will_open(&killed("other-stamp.db")?), "a header in the log with another stamp");
        pool.close().await;
        assert!(!will_open(&path), "another build's stamp (or none)");

        let other = dir.join("other.db");
        std::fs::write(&other, "not a database, a shopping list ".repeat(10)).map_err(io)?;
        assert!(!will_open(&other));
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    /// The file opened is the one at the path, whatever its name holds.
    #[tokio::test]
    async fn a_path_is_opened_as_it_is_not_as_a_url() -> Result<(), StoreError> {
        let dir = std::env::temp_dir().join(format!("corvid-odd-{}", uuid::Uuid::new_v4())).join("a?b=c#d %41");
        let path = dir.join("sessions.db");
        open(&path).await?.close().await;
        assert!(will_open(&path), "the store is at {}", path.display());
        let _ = std::fs::remove_dir_all(dir.parent().unwrap_or(&dir));
        Ok(())
    }

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
        // What a build with other migrations leaves behind: its migrations, and its own stamp
        // (or, before stamps, none).
        for sql in ["UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 1", "PRAGMA user_version = 0"] {
            sqlx::query(sql)
                .execute(&pool)
                .await
                .map_err(|source| StoreError::Open { location: path.display().to_string(), source })?;
        }
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
