//! Who owns a running turn: this process's pid plus its start time, so a recycled pid is
//! never mistaken for the process that died mid-turn.

use std::sync::OnceLock;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: i64,
    pub start: String,
}

/// This process.
pub fn me() -> &'static Owner {
    static ME: OnceLock<Owner> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = i64::from(std::process::id());
        Owner { pid, start: start_time(pid).unwrap_or_else(|| "unknown".into()) }
    })
}

/// Whether the process that wrote `owner` is still running.
pub fn is_alive(owner: &Owner) -> bool {
    if owner == me() {
        return true;
    }
    // Without /proc (non-Linux) we cannot tell; a dead owner is the safe assumption, since a
    // turn wrongly left "running" would never be closed.
    start_time(owner.pid).is_some_and(|s| s == owner.start)
}

/// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot).
fn start_time(pid: i64) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses; fields after it are plain.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_recycled_pid_is_not() {
        assert!(is_alive(me()));
        assert!(!is_alive(&Owner { pid: me().pid, start: "0".into() }) || me().start == "0");
        assert!(!is_alive(&Owner { pid: i64::from(i32::MAX), start: "1".into() }));
    }
}
