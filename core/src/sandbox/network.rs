//! No network: a seccomp filter under which `socket()` and `socketpair()` fail with EPERM for
//! every address family but `AF_UNIX` (pipes between processes and local sockets keep working;
//! TCP, UDP, raw and netlink sockets cannot be made, so no server on the host, loopback
//! included, is reachable). `io_uring` is refused too: it can create sockets without the
//! `socket` system call. Inherited across `fork` and `exec` and impossible to remove.

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
pub fn deny_network() -> Result<(), SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    let program = filter(arch)?;
    seccompiler::apply_filter(&program).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

fn filter(arch: TargetArch) -> Result<BpfProgram, SandboxError> {
    let seccomp = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let not_unix = || -> Result<Vec<SeccompRule>, SandboxError> {
        let domain = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)
            .map_err(seccomp)?;
        Ok(vec![SeccompRule::new(vec![domain]).map_err(seccomp)?])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, not_unix()?);
    rules.insert(libc::SYS_socketpair, not_unix()?);
    // An empty rule list matches every call.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(X32_SYSCALL_BIT | libc::SYS_socket, not_unix()?);
        rules.insert(X32_SYSCALL_BIT | libc::SYS_socketpair, not_unix()?);
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
        assert!(!filter(arch).expect("compiles").is_empty());
    }
}
