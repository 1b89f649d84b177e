//! A private network for the command: the launcher moves itself into a network namespace of
//! its own (with an unprivileged user namespace, where it is not root), whose only device is
//! a loopback it brings up. Commands can then serve and reach 127.0.0.1 among themselves (a
//! test suite's server, a dev server its tests call) while nothing outside is reachable: the
//! namespace has no route out, and the host's loopback is another namespace's.
//!
//! Done by the launcher's process before it starts any thread (a user namespace can only be
//! entered by a single-threaded process) and before the parent-death signal and
//! non-dumpable are set (the credential change of entering a user namespace would reset
//! both, and a non-dumpable process cannot open its own `/proc/self/uid_map`). Where it fails
//! (no user namespaces, a threaded host such as the Node launcher run by a normal user, a
//! container's seccomp profile), the caller keeps the network off with the socket filter
//! alone, as before.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::libc;
use nix::sched::{CloneFlags, unshare};
use nix::sys::socket::{AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket};
use nix::unistd::{getegid, geteuid};

/// Why the command cannot have a private network.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error("cannot make a network namespace: {0}")]
    Unshare(nix::Error),
    #[error("AppArmor gives unprivileged user namespaces no capabilities here")]
    AppArmor,
    #[error("cannot map the user into the new user namespace ({file}): {source}")]
    Map { file: &'static str, source: std::io::Error },
    #[error("cannot bring the loopback up: {0}")]
    Loopback(nix::Error),
    #[error("the kernel's answer to bringing the loopback up is malformed")]
    Answer,
}

/// Moves the calling process (a single-threaded one, for the user namespace) into a network
/// namespace of its own and brings its loopback up.
///
/// Root (who may) gets the network namespace alone: a user namespace would cost it its
/// capabilities over files that other users own. Anyone else gets a user namespace that maps
/// their user and group to themselves, so files keep the owners they have outside and a
/// command runs with no capability once it has exec'd (its uid inside is not 0).
///
/// Only [`NetnsError::Map`] leaves the process changed (in a user namespace where it has no
/// identity, so it could not create a file): the launcher must not run the command then.
pub fn enter() -> Result<(), NetnsError> {
    let (uid, gid) = (geteuid(), getegid());
    let root_alone = uid.is_root() && unshare(CloneFlags::CLONE_NEWNET).is_ok();
    if !root_alone {
        // Ubuntu's default since 24.04: the namespace is made, but the maps cannot be written
        // in it; known beforehand, so the process is left as it is.
        if std::fs::read_to_string("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
            .is_ok_and(|v| v.trim() == "1")
        {
            return Err(NetnsError::AppArmor);
        }
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).map_err(NetnsError::Unshare)?;
        let write = |file: &'static str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text).map_err(|source| NetnsError::Map { file, source })
        };
        // An unprivileged process may map its gid only once `setgroups` is denied (so no one
        // can drop a group that denies them something).
        write("setgroups", "deny".into())?;
        write("uid_map", format!("{uid} {uid} 1"))?;
        write("gid_map", format!("{gid} {gid} 1"))?;
    }
    loopback_up()
}

/// The loopback's index in every network namespace (the kernel's `LOOPBACK_IFINDEX`).
const LOOPBACK: i32 = 1;

/// `RTM_NEWLINK` with `IFF_UP` for the loopback over route netlink (no `ioctl`: nix has no
/// safe `SIOCSIFFLAGS`, and the message is two fixed headers), then the kernel's answer.
fn loopback_up() -> Result<(), NetnsError> {
    let fd: OwnedFd = socket(AddressFamily::Netlink, SockType::Raw, SockFlag::SOCK_CLOEXEC, SockProtocol::NetlinkRoute)
        .map_err(NetnsError::Loopback)?;
    sendto(fd.as_raw_fd(), &request(), &NetlinkAddr::new(0, 0), MsgFlags::empty()).map_err(NetnsError::Loopback)?;
    let mut answer = [0u8; 512];
    let len = recv(fd.as_raw_fd(), &mut answer, MsgFlags::empty()).map_err(NetnsError::Loopback)?;
    acknowledged(answer.get(..len).ok_or(NetnsError::Answer)?)
}

/// `nlmsghdr` (16 bytes) then `ifinfomsg` (16 bytes), in the machine's byte order.
fn request() -> Vec<u8> {
    const LEN: u32 = 32;
    let mut m = Vec::with_capacity(LEN as usize);
    m.extend_from_slice(&LEN.to_ne_bytes());
    m.extend_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
    m.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes()); // sequence number
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
    m.push(libc::AF_UNSPEC as u8);
    m.push(0); // padding
    m.extend_from_slice(&0u16.to_ne_bytes()); // device type: unchanged
    m.extend_from_slice(&LOOPBACK.to_ne_bytes());
    m.extend_from_slice(&(libc::IFF_UP as u32).to_ne_bytes()); // flags
    m.extend_from_slice(&(libc::IFF_UP as u32).to_ne_bytes()); // which flags change
    m
}

/// The answer is one `NLMSG_ERROR` message whose error is 0 (an acknowledgement) or a
/// negated errno.
fn acknowledged(answer: &[u8]) -> Result<(), NetnsError> {
    let u16_at = |at: usize| answer.get(at..at + 2).and_then(|b| b.try_into().ok()).map(u16::from_ne_bytes);
    let i32_at = |at: usize| answer.get(at..at + 4).and_then(|b| b.try_into().ok()).map(i32::from_ne_bytes);
    if u16_at(4) != Some(libc::NLMSG_ERROR as u16) {
        return Err(NetnsError::Answer);
    }
    match i32_at(16).ok_or(NetnsError::Answer)? {
        0 => Ok(()),
        negated => Err(NetnsError::Loopback(nix::Error::from_raw(negated.saturating_neg()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_two_headers_and_only_an_ack_is_success() {
        let request = request();
        assert_eq!(request.len(), 32);
        assert_eq!(request[..4], 32u32.to_ne_bytes());
        assert_eq!(request[20..24], LOOPBACK.to_ne_bytes());

        let answer = |kind: u16, error: i32| {
            let mut a = vec![0u8; 36];
            a[4..6].copy_from_slice(&kind.to_ne_bytes());
            a[16..20].copy_from_slice(&error.to_ne_bytes());
            a
        };
        assert!(acknowledged(&answer(libc::NLMSG_ERROR as u16, 0)).is_ok());
        let refused = acknowledged(&answer(libc::NLMSG_ERROR as u16, -libc::EPERM));
        assert!(matches!(refused, Err(NetnsError::Loopback(nix::Error::EPERM))), "{refused:?}");
        assert!(matches!(acknowledged(&answer(libc::RTM_NEWLINK, 0)), Err(NetnsError::Answer)));
        assert!(matches!(acknowledged(&[0u8; 6]), Err(NetnsError::Answer)));
    }

    /// Root may make a network namespace for one thread (a user namespace needs a
    /// single-threaded process, which a test binary is not, so that path is the e2e suite's).
    #[test]
    fn a_threads_own_namespace_serves_its_loopback() {
        if !geteuid().is_root() {
            return;
        }
        // A listener of its own, connected to: a loopback that is down fails the connect.
        let serves = || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
            std::net::TcpStream::connect(listener.local_addr().ok()?).ok()
        };
        let served = std::thread::spawn(move || {
            unshare(CloneFlags::CLONE_NEWNET).expect("root may");
            let before = serves().is_some();
            loopback_up().expect("up");
            (before, serves().is_some())
        })
        .join()
        .expect("thread");
        assert_eq!(served, (false, true), "down before, up and reachable after");
    }
}
