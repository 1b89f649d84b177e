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
//!
//! This module holds the pool and opening; each kind of query has its own: `sessions` (rows,
//! listing), `ledger` (events, messages, counters: what a load reads back), `turns` (running
//! turns, claims), `rules` ("always" answers), `batch` (all writes), `packed` (a payload's
//! stored form: a diff's repeated text left out). `location` resolves where the store lives;
//! `sqlite` and `postgres` open (and migrate) their backend.

pub mod batch;
mod dialect;
mod ledger;
mod location;
pub mod packed;
mod pending;
mod postgres;
pub mod process;
mod rewind;
mod rules;
mod sessions;
mod sqlite;
mod stamp;
pub mod time;
mod turns;

use std::path::PathBuf;

use sqlx::{PgPool, SqlitePool};

pub(crate) use dialect::Dialect;
pub use ledger::{Ledger, Page};
pub use location::{Location, redact_url, resolve_location};
pub use process::Owner;
pub use rules::StoredRule;
pub use sessions::{ArchiveFilter, SessionRecord};
pub use turns::{Claim, RunningTurn, TurnEnding};

pub use pending::{Outlook, PendingStore};

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
    #[error("cannot lock {path} to set the store up: {source}")]
    Lock { path: PathBuf, source: std::io::Error },
    #[error("unsupported store URL `{0}`: use a file path, sqlite://PATH or postgres://USER@HOST/DB")]
    Url(String),
    #[error("session store query failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("stored data is damaged: {0}")]
    Corrupt(String),
}

#[derive(Clone)]
pub struct Store {
    pool: Pool,
    /// SQLite's checkpoints, run beside the writes (`sqlite::Checkpoints`).
    checkpoints: Option<std::sync::Arc<sqlite::Checkpoints>>,
    /// For people: a path, or the URL without its password.
    location: String,
}

#[derive(Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl Store {
    /// Opens (creating if needed) and migrates the store.
    pub async fn open(location: &Location) -> Result<Self, StoreError> {
        Self::open_as(location, false).await
    }

    /// [`Store::open`] of a store [`Store::will_open`] promised a moment ago: what it read of
    /// the file is not read again.
    pub async fn open_promised(location: &Location) -> Result<Self, StoreError> {
        Self::open_as(location, true).await
    }

    async fn open_as(location: &Location, promised: bool) -> Result<Self, StoreError> {
        match location {
            Location::File(path) => Ok(Self {
                pool: Pool::Sqlite(sqlite::open_as(path, promised).await?),
                checkpoints: Some(Default::default()),
                location: path.display().to_string(),
            }),
            Location::Postgres(url) => {
                let shown = redact_url(url);
                Ok(Self {
                    pool: Pool::Postgres(postgres::open(url, &shown).await?),
                    checkpoints: None,
                    location: shown,
                })
            }
        }
    }

    /// Where the store at `location` is (for people), if it is sure to open: a SQLite file
    /// whose header shows this build's schema and a clean close ([`sqlite::will_open`]).
    /// `None` says nothing either way (PostgreSQL is never promised: only connecting tells).
    pub fn will_open(location: &Location) -> Option<String> {
        match location {
            Location::File(path) => sqlite::will_open(path).then(|| path.display().to_string()),
            Location::Postgres(_) => None,
        }
    }

    pub fn location(&self) -> &str {
        &self.location
    }

    /// Closes the store's connections once they are idle. For SQLite this is what checkpoints
    /// the write-ahead log into the file and removes it; a process that exits without it
    /// leaves the log behind, and the next start reads it all back before the store opens
    /// (which `initialize` waits for).
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
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
}
