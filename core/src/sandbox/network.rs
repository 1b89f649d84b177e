//! No network: a seccomp filter under which `socket()` and `socketpair()` fail with EPERM for
//! every address family but `AF_UNIX` (pipes between processes and local sockets keep working;
//! TCP, UDP, raw and netlink sockets cannot be made, so no server on the host, loopback
//! included, is reachable). `io_uring` is refused too: it can create sockets without the
//! `socket` system call. Inherited across `fork` and `exec` and impossible to remove.
//!
//! In a private network namespace (`netns`) `socket()` may make `AF_INET` and `AF_INET6`
//! sockets too: all they can reach is that namespace's loopback. Every other family stays
//! refused, netlink (which could move devices between namespaces) and those the kernel does
//! not keep per namespace (vsock to the hypervisor) among them, and so does `setns`: root,
//! who keeps its capabilities there, could otherwise join the host's namespace again.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use super::SandboxError;

/// On x86_64 the x32 ABI numbers the same calls with this bit set; its `socket` must be
/// filtered too, or a program built for x32 would get around the rule.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Installs the filter on the calling thread (the launcher's, which then spawns the command)
/// and so on everything it starts. Needs `no_new_privs`, which the launcher sets first.
/// `private_loopback`: the thread is in a network namespace of its own.
pub fn deny_network(private_loopback: bool) -> Result<(), SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    let program = filter(arch, private_loopback)?;
    seccompiler::apply_filter(&program).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

fn filter(arch: TargetArch, private_loopback: bool) -> Result<BpfProgram, SandboxError> {
    let seccomp = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    // One rule whose conditions all hold (they are ANDed): the domain is none of `allowed`.
    let none_of = |allowed: &[i32]| -> Result<Vec<SeccompRule>, SandboxError> {
        let conditions = allowed
            .iter()
            .map(|family| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *family as u64))
            .collect::<Result<Vec<_>, _>>()
            .map_err(seccomp)?;
        Ok(vec![SeccompRule::new(conditions).map_err(seccomp)?])
    };
    let sockets: &[i32] =
        if private_loopback { &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6] } else { &[libc::AF_UNIX] };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, none_of(sockets)?);
    rules.insert(libc::SYS_socketpair, none_of(&[libc::AF_UNIX])?);
    // An empty rule list matches every call.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    if private_loopback {
        rules.insert(libc::SYS_setns, Vec::new());
    }
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(X32_SYSCALL_BIT | libc::SYS_socket, none_of(sockets)?);
        rules.insert(X32_SYSCALL_BIT | libc::SYS_socketpair, none_of(&[libc::AF_UNIX])?);
        if private_loopback {
            rules.insert(X32_SYSCALL_BIT | libc::SYS_setns, Vec::new());
        }
    }
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(seccomp)?;
    filter.try_into().map_err(seccomp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_machine() {
        let arch = TargetArch::try_from(std::env::consts::ARCH).expect("a seccomp architecture");
        assert!(!filter(arch, false).expect("compiles").is_empty());
        assert!(!filter(arch, true).expect("compiles").is_empty());
    }
}
