//! The launcher where there is no sandbox (every system but Linux). Corvid never routes a
//! command through it there (`Launch::for_session` makes no launch), so it is reached only
//! when someone runs `corvid sandbox …` by hand: it refuses, as a shell reports a command that
//! could not be run.

use std::ffi::OsString;
use std::io::Write;

const REFUSED: u8 = 126;

/// `corvid sandbox --policy <JSON> -- PROGRAM [ARGS…]`: refused here.
pub fn launcher_main(_args: &[OsString]) -> u8 {
    refuse()
}

/// The launcher's run with the policy and the command already parsed: refused here.
pub fn supervise(_policy: Option<&str>, _command: &[OsString]) -> u8 {
    refuse()
}

fn refuse() -> u8 {
    let _ = writeln!(
        std::io::stderr(),
        "corvid sandbox: the command sandbox is Linux-only (Landlock); nothing was run on {}",
        std::env::consts::OS
    );
    REFUSED
}
