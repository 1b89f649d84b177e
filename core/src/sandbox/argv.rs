//! The launcher's command line after its program and leading arguments:
//! `sandbox --policy <JSON> -- PROGRAM [ARGS…]` (Corvid's own spawns), or `sandbox -- PROGRAM
//! [ARGS…]` with the policy in [`POLICY_ENV`] (an editor's `terminal/create`: the editor shows
//! the command line to its user, who should read their command there, not the policy).
//! Written by `Launch`, read by the supervisor when an embedder hands it the raw argv (the
//! Node addon's launcher script); one module, so the two cannot drift apart. The `corvid`
//! binary reads the same line with clap, as its hidden `sandbox` subcommand.

use std::ffi::OsString;

/// The subcommand word every launcher argv starts with.
const SUBCOMMAND: &str = "sandbox";

/// Where the launcher finds its policy when the command line does not carry it (removed from
/// the command's environment before it starts).
pub const POLICY_ENV: &str = "CORVID_SANDBOX_POLICY";

/// The launcher's arguments for running `command` with its policy in [`POLICY_ENV`].
pub(super) fn build_bare(command: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = [SUBCOMMAND, "--"].into_iter().map(OsString::from).collect();
    args.extend(command);
    args
}

/// The launcher's arguments for running `command` under the policy `policy_json`.
pub(super) fn build(policy_json: &str, command: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = [SUBCOMMAND, "--policy", policy_json, "--"].into_iter().map(OsString::from).collect();
    args.extend(command);
    args
}

/// The policy (`None`: in [`POLICY_ENV`]) and the command of a launcher argv, as `build` or
/// `build_bare` writes it. (Read only by the Linux supervisor: elsewhere there is no launcher.)
#[cfg(any(target_os = "linux", test))]
#[derive(Debug, PartialEq)]
pub(super) struct Parsed<'a> {
    pub policy: Option<&'a std::ffi::OsStr>,
    pub command: &'a [OsString],
}

#[cfg(any(target_os = "linux", test))]
#[derive(Debug, PartialEq, thiserror::Error)]
pub(super) enum ArgvError {
    #[error("usage: sandbox [--policy <JSON>] -- PROGRAM [ARGS…]")]
    Usage,
    #[error("no command given")]
    NoCommand,
}

#[cfg(any(target_os = "linux", test))]
pub(super) fn parse(argv: &[OsString]) -> Result<Parsed<'_>, ArgvError> {
    let (policy, command) = match argv {
        [sub, flag, policy, sep, command @ ..] if sub == SUBCOMMAND && flag == "--policy" && sep == "--" => {
            (Some(policy.as_os_str()), command)
        }
        [sub, sep, command @ ..] if sub == SUBCOMMAND && sep == "--" => (None, command),
        _ => return Err(ArgvError::Usage),
    };
    if command.is_empty() {
        return Err(ArgvError::NoCommand);
    }
    Ok(Parsed { policy, command })
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
        assert_eq!(parsed.policy, Some(std::ffi::OsStr::new(r#"{"roots":["/w -- x"]}"#)));
        assert_eq!(parsed.command, os(&["sh", "-c", "echo -- --policy"]));
        let bare = build_bare(os(&["sh", "-c", "echo --policy {}"]));
        assert_eq!(bare, os(&["sandbox", "--", "sh", "-c", "echo --policy {}"]));
        let parsed = parse(&bare).expect("parses");
        assert_eq!(parsed.policy, None);
        assert_eq!(parsed.command, os(&["sh", "-c", "echo --policy {}"]));
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(parse(&os(&["sandbox", "--policy", "{}", "--"])), Err(ArgvError::NoCommand));
        assert_eq!(parse(&os(&["sandbox", "--"])), Err(ArgvError::NoCommand));
        for bad in [&[][..], &["sandbox"], &["--policy", "{}", "--", "true"], &["sandbox", "--policy", "{}", "true"]] {
            assert_eq!(parse(&os(bad)), Err(ArgvError::Usage), "{bad:?}");
        }
    }
}
