//! The launcher's command line after its program and leading arguments:
//! `sandbox --policy <JSON> -- PROGRAM [ARGS…]`. Written by `Launch` (for the local spawn and
//! the editor's `terminal/create`), read by the supervisor when an embedder hands it the raw
//! argv (the Node addon's launcher script); one module, so the two cannot drift apart. The
//! `corvid` binary reads the same line with clap, as its hidden `sandbox` subcommand.

use std::ffi::OsString;

/// The subcommand word every launcher argv starts with.
const SUBCOMMAND: &str = "sandbox";

/// The launcher's arguments for running `command` under the policy `policy_json`.
pub(super) fn build(policy_json: &str, command: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = [SUBCOMMAND, "--policy", policy_json, "--"].into_iter().map(OsString::from).collect();
    args.extend(command);
    args
}

/// The policy and the command of a launcher argv, as `build` writes it. (Read only by the
/// Linux supervisor: elsewhere there is no launcher.)
#[cfg(any(target_os = "linux", test))]
#[derive(Debug, PartialEq)]
pub(super) struct Parsed<'a> {
    pub policy: &'a std::ffi::OsStr,
    pub command: &'a [OsString],
}

#[cfg(any(target_os = "linux", test))]
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum ArgvError {
    #[error("usage: sandbox --policy <JSON> -- PROGRAM [ARGS…]")]
    Usage,
    #[error("no command given")]
    NoCommand,
}

#[cfg(any(target_os = "linux", test))]
pub(super) fn parse(argv: &[OsString]) -> Result<Parsed<'_>, ArgvError> {
    match argv {
        [sub, flag, policy, sep, command @ ..] if sub == SUBCOMMAND && flag == "--policy" && sep == "--" => {
            if command.is_empty() {
                return Err(ArgvError::NoCommand);
            }
            Ok(Parsed { policy, command })
        }
        _ => Err(ArgvError::Usage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn what_build_writes_parse_reads_back() {
        let argv = build(r#"{"roots":["/w -- x"]}"#, os(&["sh", "-c", "echo -- --policy"]));
        let parsed = parse(&argv).expect("parses");
        assert_eq!(parsed.policy, r#"{"roots":["/w -- x"]}"#);
        assert_eq!(parsed.command, os(&["sh", "-c", "echo -- --policy"]));
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(parse(&os(&["sandbox", "--policy", "{}", "--"])), Err(ArgvError::NoCommand));
        for bad in [&[][..], &["sandbox"], &["--policy", "{}", "--", "true"], &["sandbox", "--policy", "{}", "true"]] {
            assert_eq!(parse(&os(bad)), Err(ArgvError::Usage), "{bad:?}");
        }
    }
}
