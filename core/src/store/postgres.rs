//! The PostgreSQL backend: one database shared by a fleet of `corvid serve` processes.

use std::str::FromStr;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::process::{self, HEARTBEAT};
use super::{Dialect, StoreError};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations-postgres");

pub(super) const DIALECT: Dialect = Dialect {
    last_usage: "SELECT payload FROM events WHERE session_id = $1 \
                 AND payload::jsonb ->> 'sessionUpdate' = 'usage_update' ORDER BY seq DESC LIMIT 1",
    set_thought_level: "UPDATE sessions SET config = jsonb_set(config::jsonb, '{thought_level}', to_jsonb($1::text))::text \
                        WHERE id = $2",
    set_system_prompt: "UPDATE sessions SET config = jsonb_set(config::jsonb, '{system_prompt}', to_jsonb($1::text))::text \
                        WHERE id = $2",
    running_turns: TURN_STATEMENTS.0,
    insert_turn: TURN_STATEMENTS.1,
    ledger_page: super::dialect::ledger_page!("string_agg(payload, chr(10) ORDER BY seq)"),
};

/// Now in Unix seconds, by the database's clock.
macro_rules! now_epoch {
    () => {
        "CAST(EXTRACT(EPOCH FROM now()) AS BIGINT)"
    };
}
const TURN_STATEMENTS: (&str, &str) = super::dialect::turn_statements!(now_epoch!());

/// Connects to `url` and migrates the database. `shown` is the URL without its password, the
/// only form that may appear in errors and logs.
pub(super) async fn open(url: &str, shown: &str) -> Result<PgPool, StoreError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(|source| StoreError::Open { location: shown.to_string(), source })?
        .application_name("corvid");
    let t0 = std::time::Instant::now();
    let pool = PgPoolOptions::new()
        // The write-behind tasks of all connections, turn claims and reads share these.
        .max_connections(8)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Open { location: shown.to_string(), source })?;
    // sqlx's PostgreSQL migrator holds an advisory lock while it runs, so servers that start
    // together against a new database migrate it once, one after the other.
    MIGRATOR.run(&pool).await.map_err(|source| StoreError::Migrate { location: shown.to_string(), source })?;
    tracing::debug!(total_us = t0.elapsed().as_micros() as u64, location = shown, "session store open");
    tokio::spawn(heartbeat(pool.clone()));
    Ok(pool)
}

/// Keeps this process's running turns visibly alive to servers on other hosts (which cannot
/// look its pid up): their `heartbeat_at` is refreshed by the database's clock.
async fn heartbeat(pool: PgPool) {
    let sql =
        concat!("UPDATE turns SET heartbeat_at = ", now_epoch!(), " WHERE owner_instance = $1 AND status = 'running'");
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = sqlx::query(sql).bind(&process::me().instance).execute(&pool).await {
            tracing::warn!(error = %e, "could not refresh the heartbeat of running turns");
        }
    }
}
