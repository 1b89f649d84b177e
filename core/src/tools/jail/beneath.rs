//! Opening a checked path without following links: from the root that holds it, one
//! component at a time with `openat(O_NOFOLLOW)` (missing parents made with `mkdirat`).
//! The checked path had no links, so a link met here was swapped in since: refused before
//! anything outside is opened, created or truncated.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, mkdirat};

use super::{Jail, JailError, io};

/// How a directory on the way is opened: only to search it (Linux's `O_PATH` needs no read
/// permission; elsewhere it is opened for reading).
#[cfg(target_os = "linux")]
const SEARCH: OFlag = OFlag::O_PATH;
#[cfg(not(target_os = "linux"))]
const SEARCH: OFlag = OFlag::O_RDONLY;

/// What [`Jail::open_beneath`] opens the last component as.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Open {
    Read,
    Dir,
    /// Write-only, created if missing (missing directories too), not truncated.
    Create,
}

impl Jail {
    /// Opens the checked, canonical `resolved` from the root that holds it, one component at
    /// a time, never following a symlink (see the module comment).
    pub(super) fn open_beneath(&self, resolved: &Path, how: Open, shown: &str) -> Result<File, JailError> {
        let root = self.roots.holding(resolved).ok_or_else(|| self.outside(shown))?;
        let parts: Vec<&OsStr> = match resolved.strip_prefix(root) {
            Ok(rel) => rel.components().map(|c| c.as_os_str()).collect(),
            Err(_) => return Err(self.outside(shown)),
        };
        let search = SEARCH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let last_flags = match how {
            Open::Read => OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Open::Dir => OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Open::Create => OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        };
        let Some((last, dirs)) = parts.split_last() else {
            // The root itself (canonical, so not a link either).
            if how != Open::Dir {
                return Err(JailError::Io { path: shown.to_string(), reason: "is a directory".into() });
            }
            let fd = nix::fcntl::open(root, last_flags, Mode::empty()).map_err(|e| failed(shown, e))?;
            return Ok(File::from(fd));
        };
        let mut dir: OwnedFd = nix::fcntl::open(root, search, Mode::empty()).map_err(|e| failed(shown, e))?;
        for part in dirs {
            dir = match openat(&dir, *part, search, Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::ENOENT) if how == Open::Create => {
                    match mkdirat(&dir, *part, Mode::from_bits_truncate(0o777)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(failed(shown, e)),
                    }
                    openat(&dir, *part, search, Mode::empty()).map_err(|e| failed_at(&dir, part, shown, e))?
                }
                Err(e) => return Err(failed_at(&dir, part, shown, e)),
            };
        }
        let fd = openat(&dir, *last, last_flags, Mode::from_bits_truncate(0o666))
            .map_err(|e| failed_at(&dir, last, shown, e))?;
        Ok(File::from(fd))
    }
}

impl Jail {
    /// Opens for reading `rel`, a file a walk of `dir` found: `dir` is the directory
    /// [`Jail::open_dir`] opened at the canonical `dir_path`. One `openat2` from `dir` that
    /// refuses every symbolic link and every step out of it, so what opens is `dir_path/rel`
    /// itself, which the lexical check has placed inside the roots and outside the forbidden
    /// paths: a search over 100,000 files makes one call per file where [`Jail::open_read`]
    /// makes about twenty. Non-blocking, so a FIFO swapped in cannot hang the walk.
    pub fn open_found(&self, dir: &File, dir_path: &Path, rel: &Path) -> Result<File, JailError> {
        let full = dir_path.join(rel);
        let shown = full.display().to_string();
        self.check(&full, &shown)?;
        #[cfg(target_os = "linux")]
        {
            use nix::fcntl::{OpenHow, ResolveFlag, openat2};
            let how = OpenHow::new()
                .flags(OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY)
                .resolve(
                    ResolveFlag::RESOLVE_BENEATH
                        | ResolveFlag::RESOLVE_NO_SYMLINKS
                        | ResolveFlag::RESOLVE_NO_MAGICLINKS,
                );
            match openat2(dir, rel, how) {
                Ok(fd) => return Ok(File::from(fd)),
                // Before Linux 5.6, or behind a seccomp filter that hides the call: the long way.
                Err(Errno::ENOSYS | Errno::EPERM) => {}
                Err(e) => return Err(failed(&shown, e)),
            }
        }
        // Without `openat2` (not Linux) the long way is the only way.
        #[cfg(not(target_os = "linux"))]
        let _ = dir;
        self.open_read(&shown).map(|(_, file)| file)
    }
}

/// Removes the file `name` from the open directory `dir` (never a directory, never following a
/// link: a link itself is what would be removed).
pub(super) fn remove_in(dir: &File, _dir_path: &Path, name: &OsStr, shown: &str) -> Result<(), JailError> {
    nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir).map_err(|e| failed(shown, e))
}

/// Whether `found` (the root a directory walker was given, as it walks it) is `dir`, the
/// directory opened through the jail. A walker opens its root by path, so a root swapped for a
/// link after the check would be walked outside; this refuses that walk. (File contents found
/// by a walk are read through [`Jail::open_read`] anyway.)
pub fn same_dir(dir: &File, found: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(d), Ok(f)) = (dir.metadata(), std::fs::metadata(found)) else { return false };
    d.dev() == f.dev() && d.ino() == f.ino()
}

/// A directory component that failed to open. With `O_DIRECTORY | O_NOFOLLOW` a symlink shows
/// as ENOTDIR, like a plain file where a directory should be; only the link means a swap.
fn failed_at(dir: &OwnedFd, name: &OsStr, path: &str, e: Errno) -> JailError {
    use nix::sys::stat::SFlag;
    let is_link = || {
        nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
            .is_ok_and(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
    };
    if e == Errno::ENOTDIR && is_link() { JailError::Swapped(path.to_string()) } else { failed(path, e) }
}

/// An open that failed on the way: a symlink met with `O_NOFOLLOW` (ELOOP) means a swap;
/// anything else is reported as it is.
fn failed(path: &str, e: Errno) -> JailError {
    match e {
        Errno::ELOOP => JailError::Swapped(path.to_string()),
        other => io(path, std::io::Error::from(other)),
    }
}
