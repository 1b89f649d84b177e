//! How one step's tool calls run: which of them run at once, and which are not run at all.
//!
//! Calls that cannot interfere run together: consecutive `delegate` calls (each subagent waits
//! for its own slot) and consecutive calls that only read (`read_file`, `list_directory`,
//! `glob`, `search`, `web_fetch`; a fetch that must ask waits for its answer, questions go one
//! at a time). Anything else runs alone, in the model's order, so an edit and the command
//! that tests it never race. [`LoopGuard`] stops a model that keeps
//! making the same failing call.

use std::collections::HashMap;

use crate::provider::ToolCallRequest;
use crate::tools::Registry;

/// What a run of calls has in common that lets them run at once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Together {
    Delegates,
    Reads,
}

fn together(call: &ToolCallRequest, registry: &Registry) -> Option<Together> {
    let name = call.function.name.as_str();
    if name == crate::tools::delegate::NAME {
        return Some(Together::Delegates);
    }
    registry.get(name).filter(|tool| tool.reads_only()).map(|_| Together::Reads)
}

/// A step's calls in the groups that run together, in order: each run of consecutive calls
/// of one [`Together`] kind is one group; any other call is a group of its own.
pub(super) fn batches<'a>(calls: &'a [ToolCallRequest], registry: &Registry) -> Vec<&'a [ToolCallRequest]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < calls.len() {
        let len = match together(&calls[i], registry) {
            None => 1,
            kind => calls[i..].iter().take_while(|c| together(c, registry) == kind).count(),
        };
        out.push(&calls[i..i + len]);
        i += len;
    }
    out
}

/// What the model reads instead of the result of a call it has already seen fail twice.
pub(super) const REPEATED: &str = "Not run: this exact call (the same tool with the same arguments) failed twice \
already in this turn, and nothing that could change its outcome has run since. Do not repeat it: read the errors \
above, then change the arguments, try another way, or tell the user what is in the way.";

/// How many times the same call may fail before its next attempt is refused.
const FAILURES_ALLOWED: u32 = 2;

/// Counts, within a turn, how often each exact call (tool and arguments) has failed. A call
/// that failed [`FAILURES_ALLOWED`] times is refused until a call that may change something
/// (anything but a read) succeeds: after an edit, rerunning the failing test is the point.
#[derive(Default)]
pub(super) struct LoopGuard {
    failures: HashMap<(String, String), u32>,
}

/// A call's identity: its tool and its arguments, parsed when they are JSON so that spacing
/// and key order do not make two equal calls differ.
fn key(call: &ToolCallRequest) -> (String, String) {
    let args = match serde_json::from_str::<serde_json::Value>(&call.function.arguments) {
        Ok(value) => value.to_string(),
        Err(_) => call.function.arguments.trim().to_string(),
    };
    (call.function.name.clone(), args)
}

impl LoopGuard {
    /// Whether the call is refused without running.
    pub(super) fn refuses(&self, call: &ToolCallRequest) -> bool {
        self.failures.get(&key(call)).is_some_and(|&n| n >= FAILURES_ALLOWED)
    }

    /// Records how a call ended.
    pub(super) fn record(&mut self, call: &ToolCallRequest, failed: bool, registry: &Registry) {
        if failed {
            *self.failures.entry(key(call)).or_default() += 1;
        } else if !registry.get(&call.function.name).is_some_and(|tool| tool.reads_only()) {
            self.failures.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::FunctionCall;

    fn call(name: &str, arguments: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: name.into(),
            kind: "function".into(),
            function: FunctionCall { name: name.into(), arguments: arguments.into() },
            extra_content: None,
        }
    }

    fn sizes(calls: &[ToolCallRequest]) -> Vec<usize> {
        let registry = Registry::new(|_| true, Vec::new());
        batches(calls, &registry).iter().map(|b| b.len()).collect()
    }

    #[test]
    fn consecutive_delegates_and_consecutive_reads_run_together_and_others_alone() {
        let calls = [
            call("delegate", "{}"),
            call("delegate", "{}"),
            call("read_file", "{}"),
            call("search", "{}"),
            call("glob", "{}"),
            call("web_fetch", "{}"),
            call("edit_file", "{}"),
            call("read_file", "{}"),
            call("delegate", "{}"),
            call("run_command", "{}"),
            call("run_command", "{}"),
            call("no_such_tool", "{}"),
            call("list_directory", "{}"),
        ];
        assert_eq!(sizes(&calls), [2, 4, 1, 1, 1, 1, 1, 1, 1]);
        assert!(sizes(&[]).is_empty());
    }

    #[test]
    fn the_third_identical_failure_is_refused_until_something_changes() {
        let registry = Registry::new(|_| true, Vec::new());
        let mut guard = LoopGuard::default();
        let test = call("run_command", r#"{"command": "cargo test"}"#);
        let same_spaced_otherwise = call("run_command", r#"{ "command":"cargo test" }"#);
        let other = call("run_command", r#"{"command": "cargo build"}"#);
        assert!(!guard.refuses(&test));
        guard.record(&test, true, &registry);
        assert!(!guard.refuses(&test));
        guard.record(&same_spaced_otherwise, true, &registry);
        assert!(guard.refuses(&test), "failed twice: the third is refused");
        assert!(!guard.refuses(&other), "another call is not");
        // A successful read changes nothing: still refused.
        guard.record(&call("read_file", r#"{"path": "a"}"#), false, &registry);
        assert!(guard.refuses(&test));
        // A successful edit may have fixed it.
        guard.record(&call("edit_file", r#"{"path": "a"}"#), false, &registry);
        assert!(!guard.refuses(&test));
    }
}
