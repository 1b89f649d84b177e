//! Who owns a running turn, and whether that owner still lives.
//!
//! An owner is this process: a random instance id, the host name, and the pid plus the
//! process start time (so a recycled pid is never mistaken for the process that died
//! mid-turn). Pid and start time only mean something on their own host; for an owner on
//! another host (a PostgreSQL fleet) the database keeps a heartbeat instead (see
//! `postgres::heartbeat`).

use std::sync::OnceLock;

/// How long an owner on another host stays alive without a heartbeat. Its process refreshes
/// the heartbeat every [`HEARTBEAT`]; three missed beats mean it is gone.
pub const LEASE_SECS: i64 = 30;
/// How often a process refreshes the heartbeat of its running turns.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Random per process; empty in rows written before owners had one.
    pub instance: String,
    /// Empty in rows written before owners had one (those came from a file store, one host).
    pub host: String,
    pub pid: i64,
    pub start: String,
}

/// This process.
pub fn me() -> &'static Owner {
    static ME: OnceLock<Owner> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = i64::from(std::process::id());
        Owner {
            instance: uuid::Uuid::new_v4().to_string(),
            host: hostname(),
            pid,
            start: start_time(pid).unwrap_or_else(|| "unknown".into()),
        }
    })
}

/// Whether the owner of a turn stored as running still lives.
pub fn is_running(turn: &super::RunningTurn) -> bool {
    is_alive(&turn.owner, turn.heartbeat_age)
}

/// Whether the process that wrote `owner` is still running. `heartbeat_age` is the seconds
/// since it last refreshed its heartbeat (`None`: never).
pub fn is_alive(owner: &Owner, heartbeat_age: Option<i64>) -> bool {
    let me = me();
    if owner.instance == me.instance {
        return true;
    }
    if owner.host.is_empty() || owner.host == me.host {
        // A process whose start time cannot be read is taken for dead: a turn wrongly left
        // "running" would never be closed.
        return start_time(owner.pid).is_some_and(|s| s == owner.start);
    }
    heartbeat_age.is_some_and(|age| age < LEASE_SECS)
}

fn hostname() -> String {
    #[cfg(target_os = "linux")]
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    #[cfg(not(target_os = "linux"))]
    let name = sysinfo::System::host_name();
    name.or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".into())
}

/// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot).
#[cfg(target_os = "linux")]
fn start_time(pid: i64) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses; fields after it are plain.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// The process's start time in seconds since the epoch, as the system reports it
/// (`proc_pidinfo` on macOS, `GetProcessTimes` on Windows, through `sysinfo`).
#[cfg(not(target_os = "linux"))]
fn start_time(pid: i64) -> Option<String> {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};
    let pid = Pid::from_u32(u32::try_from(pid).ok()?);
    let mut system = System::new();
    system.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), false, ProcessRefreshKind::nothing());
    system.process(pid).map(|p| format!("t{}", p.start_time()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(host: &str, pid: i64, start: &str) -> Owner {
        Owner { instance: "another".into(), host: host.into(), pid, start: start.into() }
    }

    #[test]
    fn this_process_is_alive_and_a_recycled_pid_is_not() {
        let me = me();
        assert!(is_alive(me, None));
        assert!(!is_alive(&other(&me.host, me.pid, "0"), None) || me.start == "0");
        assert!(!is_alive(&other(&me.host, i64::from(i32::MAX), "1"), None));
        // Rows from before owners had an instance and host: judged by pid and start time.
        assert!(is_alive(&other("", me.pid, &me.start), None));
    }

    #[test]
    fn an_owner_on_another_host_lives_as_long_as_its_heartbeat() {
        // Its pid means nothing here, even if it matches a live process of this host.
        let remote = other("elsewhere", me().pid, &me().start);
        assert!(is_alive(&remote, Some(0)));
        assert!(is_alive(&remote, Some(LEASE_SECS - 1)));
        assert!(!is_alive(&remote, Some(LEASE_SECS)));
        assert!(!is_alive(&remote, None));
    }
}
