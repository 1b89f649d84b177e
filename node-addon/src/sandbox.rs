//! The sandbox launcher for commands the in-process agent runs: the addon has no `corvid`
//! binary to run them through, so Node itself is the launcher, running
//! `sandbox-launcher.cjs`, which calls `sandboxMain`. The agent is told how to start it with
//! `AgentOptions.sandboxLauncher` (`index.js` fills it in).

use std::collections::HashMap;
use std::ffi::OsString;

use corvid_core::config::Launcher;
use napi_derive::napi;

/// Runs the sandbox launcher in this process: `argv` is `["sandbox", "--policy", JSON, "--",
/// PROGRAM, ...ARGS]` (or `["sandbox", "--", PROGRAM, ...ARGS]`, the policy in
/// `CORVID_SANDBOX_POLICY`). Confines a thread of its own to the policy, starts the program from it,
/// supervises it until it ends and kills whatever it left running; returns the exit status
/// (the program's, 128 + a signal, or 126/127 when it could not be run, with one line on
/// stderr). Blocks the calling thread throughout: only for `sandbox-launcher.cjs`, which must
/// first replace Node's own SIGTERM and SIGINT handlers (they would end the process before the
/// command's tree is killed).
#[napi]
pub fn sandbox_main(argv: Vec<String>) -> u32 {
    let argv: Vec<OsString> = argv.into_iter().map(OsString::from).collect();
    u32::from(corvid_core::sandbox::launcher_main(&argv))
}

/// The launcher the agent's commands go through, from `sandboxLauncher` (program, then its
/// leading arguments) and `sandboxLauncherEnv`; an empty list names none.
pub(crate) fn launcher(argv: &[String], env: Option<&HashMap<String, String>>) -> Option<Launcher> {
    let (program, args) = argv.split_first()?;
    let mut env: Vec<(String, String)> = env.into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
    // The same command line whatever order the map came in.
    env.sort();
    Some(Launcher { program: program.into(), args: args.to_vec(), env })
}
