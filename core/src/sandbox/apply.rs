//! What the thread that starts the command does to itself first (`supervisor` runs it on a
//! thread of its own, which spawns the command and ends). It confines that thread for good,
//! and the command, spawned from it, inherits all of it.
//!
//! In this order:
//! 1. **`no_new_privs`**: nothing it execs can gain privileges (set-user-id binaries, file
//!    capabilities), so nothing inside can lift the confinement; Landlock and seccomp need it.
//! 2. **Landlock**: every file-system right of [`ABI_USED`] is handled, so only what the rules
//!    grant is allowed: read and execute everywhere but the forbidden subtrees (`cover` works
//!    out the rules that leave them out), every right beneath the writable roots (their
//!    forbidden and read-only subtrees left out too) and the session's temp dir, reading and
//!    writing the few device files commands need. Signals to processes outside the sandbox
//!    are refused (the signal scope). Without network, abstract Unix sockets made outside the
//!    sandbox are out of reach, and unless the thread is in a private network namespace
//!    (`netns`, where TCP reaches only its own loopback) TCP bind/connect are handled too (no
//!    rule grants them: Landlock's network rights know ports, not namespaces).
//! 3. **seccomp** (`network`), unless the policy allows the network: only Unix sockets, or
//!    Unix and IP ones in a private network namespace.
//!
//! The namespace itself is entered before all of this, by the launcher's process (`netns`).
//!
//! All three are inherited by every descendant (`setsid`, double forks, `nohup` included).
//! They bind a thread, not a process: the launcher's other threads (the supervisor's, and a
//! Node host's own) stay outside the sandbox, where Landlock keeps the command from tracing
//! them or writing their memory. The parent-death signal and the subreaper, which are about
//! the whole launcher, are the supervisor's.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetStatus, Scope,
};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::cover::{Disk, cover, overlaps};
use super::{Policy, SandboxError};

/// The Landlock ABI whose rights this build handles (tested on a kernel with it); older
/// kernels get what they support of it, newer ones' extra rights stay unhandled until this is
/// raised (and tested) here.
pub(super) const ABI_USED: ABI = ABI::V7;

/// Device files every command may read and write (and `ioctl`: terminals need it).
const DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"];

/// How much of the policy the kernel enforces.
#[derive(Debug, PartialEq, Eq)]
pub struct Applied {
    pub landlock: RulesetStatus,
    pub network_denied: bool,
    /// The network is denied but for the loopback of a private network namespace.
    pub private_loopback: bool,
}

/// Confines the calling thread, the one that then starts the command, to `policy`.
/// `private_loopback`: the thread is in a network namespace of its own (`netns::enter`).
pub fn apply(policy: &Policy, private_loopback: bool) -> Result<Applied, SandboxError> {
    let private_loopback = private_loopback && !policy.network;
    nix::sys::prctl::set_no_new_privs().map_err(SandboxError::Prctl)?;
    let landlock = landlock(policy, private_loopback)?;
    if policy.required && landlock == RulesetStatus::NotEnforced {
        return Err(SandboxError::Unavailable);
    }
    if !policy.network {
        super::network::deny_network(private_loopback)?;
    }
    Ok(Applied { landlock, network_denied: !policy.network, private_loopback })
}

fn landlock(policy: &Policy, private_loopback: bool) -> Result<RulesetStatus, SandboxError> {
    let all = AccessFs::from_all(ABI_USED);
    let read = AccessFs::from_read(ABI_USED);
    let device =
        all & (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev | AccessFs::ReadDir);
    let mut ruleset = Ruleset::default().handle_access(all)?.scope(Scope::Signal)?;
    if !policy.network {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket)?;
        if !private_loopback {
            ruleset = ruleset.handle_access(AccessNet::from_all(ABI_USED))?;
        }
    }
    let mut rules = Rules { created: ruleset.create()?, parents: HashMap::new() };
    for path in cover(Path::new("/"), &policy.forbidden, &Disk) {
        rules.add(&path, read, &policy.forbidden)?;
    }
    let unwritable = policy.unwritable();
    for base in policy.write_bases() {
        for path in cover(base, &unwritable, &Disk) {
            rules.add(&path, all, &unwritable)?;
        }
    }
    // Corvid made it, inside its own (forbidden) data dir: nothing in it is to be left out.
    rules.add(&policy.tmp, all, &[])?;
    for dev in DEVICES {
        rules.add(Path::new(dev), device, &[])?;
    }
    Ok(rules.created.no_new_privs(true).restrict_self()?.ruleset)
}

struct Rules {
    created: RulesetCreated,
    /// The directories rules are opened from, each opened and checked once (`None`: it is
    /// not where it was listed, so nothing is opened from it).
    parents: HashMap<PathBuf, Option<OwnedFd>>,
}

impl Rules {
    /// A rule granting `access` beneath `path`, unless `path` overlaps `excluded`, is gone, or
    /// is now a link.
    fn add(&mut self, path: &Path, access: BitFlags<AccessFs>, excluded: &[PathBuf]) -> Result<(), SandboxError> {
        if overlaps(path, excluded) {
            return Ok(());
        }
        let Some((fd, is_dir)) = self.open(path) else { return Ok(()) };
        // A rule on a file may only name the rights that apply to files.
        let access = if is_dir { access } else { access & AccessFs::from_file(ABI_USED) };
        if access.is_empty() {
            return Ok(());
        }
        (&mut self.created).add_rule(PathBeneath::new(fd, access))?;
        Ok(())
    }

    /// Opens `path` itself from its parent's descriptor (`O_PATH | O_NOFOLLOW`: a link is
    /// opened as the link, never followed) and says whether it is a directory. The parent was
    /// checked to be where it was listed, so a directory swapped for a link on the way since
    /// the listing cannot redirect a rule; that costs one check per directory, not per entry.
    fn open(&mut self, path: &Path) -> Option<(OwnedFd, bool)> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            // `/` itself.
            let fd = nix::fcntl::open(path, OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty());
            return fd.ok().map(|fd| (fd, true));
        };
        let parent = self.parents.entry(parent.to_path_buf()).or_insert_with(|| open_checked_dir(parent)).as_ref()?;
        let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let file = File::from(nix::fcntl::openat(parent, name, flags, Mode::empty()).ok()?);
        let meta = file.metadata().ok()?;
        if meta.file_type().is_symlink() {
            return None;
        }
        Some((OwnedFd::from(file), meta.is_dir()))
    }
}

/// The directory at `dir`, if that is really where it is (its path has no link in it: the
/// policy's paths are canonical). Without /proc the open alone stands.
fn open_checked_dir(dir: &Path) -> Option<OwnedFd> {
    let fd = nix::fcntl::open(dir, OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty()).ok()?;
    match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
        Ok(real) if real != dir => None,
        _ => Some(fd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a thread confined to `policy` (Landlock and seccomp bind the calling thread
    /// only, so the rest of the test process is untouched).
    fn confined<T: Send + 'static>(policy: Policy, f: impl FnOnce() -> T + Send + 'static) -> (Applied, T) {
        std::thread::spawn(move || {
            let applied = apply(&policy, false).expect("confined");
            (applied, f())
        })
        .join()
        .expect("the confined thread")
    }

    #[test]
    fn writes_stay_in_the_roots_reads_skip_the_forbidden_and_sockets_fail() {
        if super::super::probe::landlock_abi().is_none() {
            // Nothing to test on a kernel without Landlock (the e2e suite says so when skipping).
            return;
        }
        let base = std::env::temp_dir().join(format!("corvid-apply-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["root/inner", "beside", "secret", "data/tmp/s"] {
            std::fs::create_dir_all(base.join(d)).expect("mkdir");
        }
        std::fs::write(base.join("secret/key"), "PRIVATE").expect("write");
        std::fs::write(base.join("beside/readable"), "fine").expect("write");
        let base = std::fs::canonicalize(&base).expect("canonical");
        let policy = Policy {
            roots: vec![base.join("root")],
            writable_roots: vec![],
            tmp: base.join("data/tmp/s"),
            read_only: false,
            network: false,
            forbidden: vec![base.join("secret"), base.join("data")],
            read_only_paths: vec![],
            required: true,
        };
        let b = base.clone();
        let (applied, seen) = confined(policy, move || {
            [
                std::fs::write(b.join("root/inner/f"), "ok").is_ok(),
                std::fs::write(b.join("data/tmp/s/t"), "ok").is_ok(),
                std::fs::write(b.join("beside/escape"), "pwned").is_ok(),
                std::fs::read_to_string(b.join("beside/readable")).is_ok(),
                std::fs::read_to_string(b.join("secret/key")).is_ok(),
                std::fs::write("/dev/null", "x").is_ok(),
                std::net::TcpListener::bind("127.0.0.1:0").is_ok(),
                std::net::UdpSocket::bind("127.0.0.1:0").is_ok(),
                std::os::unix::net::UnixDatagram::pair().is_ok(),
            ]
        });
        assert_ne!(applied.landlock, RulesetStatus::NotEnforced);
        assert_eq!(seen, [true, true, false, true, false, true, false, false, true]);
        assert!(!base.join("beside/escape").exists());
        let _ = std::fs::remove_dir_all(&base);
    }
}
