//! The few statements whose text differs between SQLite and PostgreSQL; everything else is
//! written once and run on either pool (`with_pool!`).

/// The statements whose text differs between the backends.
pub(crate) struct Dialect {
    /// The latest `usage_update` payload of session `$1`.
    pub last_usage: &'static str,
    /// Sets `thought_level` (`$1`) in the `config` JSON of session `$2`.
    pub set_thought_level: &'static str,
    /// Sets `system_prompt` (`$1`, the client's `systemPrompt` text) in the `config` JSON of
    /// session `$2`.
    pub set_system_prompt: &'static str,
    /// The turns of session `$1` stored as running: turn, owner (instance, host, pid, start)
    /// and the seconds since its heartbeat, by the database's clock (one clock for every host).
    pub running_turns: &'static str,
    /// Stores turn `$2` of session `$1` as running, owned by (`$3` pid, `$4` start, `$5`
    /// instance, `$6` host), started at `$7`, its heartbeat now.
    pub insert_turn: &'static str,
    /// A page of session `$1`'s ledger as one row: the events after seq `$2`, at most `$3`,
    /// as their last seq, their count, how many are packed (`repeats` set), and their payloads
    /// joined by newlines in order (see `Store::ledger`).
    pub ledger_page: &'static str,
}

/// The dialect-independent part of [`Dialect::ledger_page`], around each backend's ordered
/// join of the payloads.
macro_rules! ledger_page {
    ($($joined:tt)+) => {
        concat!(
            "SELECT MAX(seq), COUNT(*), COUNT(repeats), ",
            $($joined)+,
            " FROM (SELECT seq, payload, repeats FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) AS page"
        )
    };
}
pub(crate) use ledger_page;

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
