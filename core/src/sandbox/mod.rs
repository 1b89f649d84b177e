//! Commands in an OS sandbox (Linux: Landlock + seccomp).
//!
//! The file tools cannot leave the session's folders (`tools::Jail`); this holds commands to
//! the same line. A command runs through a launcher: `corvid sandbox --policy <JSON> -- sh -c
//! CMD` for the binary, `node sandbox-launcher.cjs sandbox --policy <JSON> -- sh -c CMD` for
//! the Node addon (in-process in `corvid-acp` and the VS Code extension, where the host is
//! Node or Electron). Either way the launcher runs `supervisor`: it starts the shell confined
//! and supervises it, and everything the command starts inherits the confinement. Here:
//! `policy` (what a command may read, write and reach, built from the session and the config),
//! `cover` (the Landlock rules that leave the forbidden subtrees out), `apply` (what the
//! thread that starts the command does to itself), `network` (the seccomp filter), `netns`
//! (the launcher's private network namespace: a loopback of the commands' own), `probe`
//! (what the kernel supports, and the report of what is in force), `launcher` (the argv that
//! runs a command through it, from `config::Launcher`), `reads` (the file tools' walks, held
//! beneath the directory they walk), `argv` (that argv's shape, written by
//! `launcher` and read by `supervisor`), `supervisor` (the launcher's run: signals, the
//! spawn, waiting) and `tree` (reaping and killing what is below the launcher).
//!
//! Where there is no launcher (an embedder that names none) or the sandbox is off, commands
//! run as before. On other systems than Linux there is no sandbox (`unsupported`): the report
//! says so, commands run unconfined, and `[sandbox] required = true` refuses them. Where the
//! kernel has no Landlock, the launcher still runs (the network filter and the parent-death
//! signal still apply) unless `[sandbox] required = true`, which makes it refuse the command.

#[cfg(target_os = "linux")]
mod apply;
mod argv;
mod confinement;
#[cfg(target_os = "linux")]
mod cover;
mod launcher;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod network;
mod policy;
mod probe;
#[cfg(target_os = "linux")]
mod reads;
#[cfg(target_os = "linux")]
mod supervisor;
#[cfg(target_os = "linux")]
mod tree;
#[cfg(not(target_os = "linux"))]
mod unsupported;

#[cfg(target_os = "linux")]
pub use apply::{Applied, apply};
pub use confinement::{Confinement, Escalation};
pub use launcher::Launch;
pub use policy::Policy;
pub use probe::{Status, landlock_abi, prewarm};
#[cfg(target_os = "linux")]
pub use reads::confine_reads;
#[cfg(target_os = "linux")]
pub use supervisor::{launcher_main, supervise};
#[cfg(not(target_os = "linux"))]
pub use unsupported::{launcher_main, supervise};

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[cfg(target_os = "linux")]
    #[error("prctl: {0}")]
    Prctl(nix::Error),
    #[cfg(target_os = "linux")]
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("seccomp: {0}")]
    Seccomp(String),
    #[error("the kernel cannot enforce the sandbox (no Landlock) and [sandbox] required = true; command refused")]
    Unavailable,
}
