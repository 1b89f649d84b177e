//! `corvid sandbox --policy <JSON> -- PROGRAM [ARGS…]` (hidden): the launcher Corvid runs
//! commands through. It applies the policy to itself (`corvid_core::sandbox::apply`) and
//! execs the program in place, so the program and all it starts stay confined.
//!
//! It prints nothing on success, not even where Landlock is missing (the caller knows that
//! from its own probe): its stdout and stderr are the command's. A failure is one line on
//! stderr and exit status 126 (the policy could not be applied) or 127 (the program could not
//! be started), as a shell reports them.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use corvid_core::sandbox::{Policy, apply};

pub fn run(policy: &str, command: &[OsString]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        return fail(126, "no command given");
    };
    let policy = match Policy::from_json(policy) {
        Ok(p) => p,
        Err(e) => return fail(126, &format!("invalid policy: {e}")),
    };
    if let Err(e) = apply(&policy) {
        return fail(126, &e.to_string());
    }
    // Only returns on failure.
    let e = std::process::Command::new(program).args(args).env("TMPDIR", &policy.tmp).exec();
    fail(127, &format!("cannot run {}: {e}", program.to_string_lossy()))
}

fn fail(code: u8, message: &str) -> ExitCode {
    crate::write_stderr(&format!("corvid sandbox: {message}\n"));
    ExitCode::from(code)
}
