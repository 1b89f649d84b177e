//! The workspace jail: every path a tool touches is resolved (symlinks included) and must stay
//! under the session's roots, outside the forbidden paths.
//!
//! Checking a path and then using it leaves a window in which a file or a directory on the way
//! can be swapped for a symlink. So tools open through [`Jail::open_read`],
//! [`Jail::open_write`] and [`Jail::open_dir`]: the path is checked and canonicalized, then
//! opened one component at a time below its root with `O_NOFOLLOW` at every step (the checked
//! path had no links, so a link met now was swapped in: refused before anything outside is
//! opened, created or truncated), and what was opened is checked again (via `/proc/self/fd` on
//! Linux, `F_GETPATH` on macOS).
//!
//! On Windows (no `openat`) the checked path is opened as it is (`open_plain`): the check
//! before the open stands alone, so a link swapped in between the two is not caught there.
//! `initialize` reports this (`_meta.corvid.jail`) and the README says so.
//!
//! Here: the jail itself and its checks. `resolve` turns a tool's path into a checked
//! canonical one, `beneath` opens it without following links, `forbidden` holds the default
//! protected locations.

#[cfg(unix)]
mod beneath;
#[cfg(not(unix))]
#[path = "open_plain.rs"]
mod beneath;
mod forbidden;
mod resolve;
// The jail's tests swap in symbolic links, which Windows grants only to some users.
#[cfg(all(test, unix))]
mod tests;

use std::fs::File;
use std::path::{Path, PathBuf};

use beneath::Open;

use crate::roots::Roots;
pub use beneath::same_dir;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum JailError {
    #[error("path contains a NUL byte")]
    Nul,
    #[error("{0} is outside the session's folders ({1})")]
    Outside(String, String),
    #[error("{0} is a protected location ({1}) and cannot be used by tools")]
    Forbidden(String, String),
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("{0} changed while it was being opened (a symbolic link appeared on the way); refused")]
    Swapped(String),
}

#[derive(Debug, Clone)]
pub struct Jail {
    roots: Roots,
    forbidden: Vec<PathBuf>,
}

impl Jail {
    pub fn new(roots: Roots, forbidden: Vec<PathBuf>) -> Self {
        let forbidden = forbidden::canonical(forbidden);
        Self { roots, forbidden }
    }

    pub fn cwd(&self) -> &Path {
        self.roots.cwd()
    }

    fn check(&self, canonical: &Path, shown: &str) -> Result<(), JailError> {
        if let Some(f) = self.forbidden.iter().find(|f| canonical.starts_with(f)) {
            return Err(JailError::Forbidden(shown.to_string(), f.display().to_string()));
        }
        if !self.roots.contains(canonical) {
            return Err(self.outside(shown));
        }
        Ok(())
    }

    fn outside(&self, shown: &str) -> JailError {
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        JailError::Outside(shown.to_string(), roots.join(", "))
    }

    /// Re-checks what an open file really is, closing the check-then-use window.
    fn verify_open(&self, file: &File, shown: &str) -> Result<(), JailError> {
        match opened_path(file) {
            Some(real) => self.check(&real, shown),
            // Where the system cannot say (Windows), the pre-open check stands alone.
            None => Ok(()),
        }
    }

    pub fn open_read(&self, path: &str) -> Result<(PathBuf, File), JailError> {
        let resolved = self.resolve(path)?;
        let file = self.open_beneath(&resolved, Open::Read, path)?;
        self.verify_open(&file, path)?;
        Ok((resolved, file))
    }

    /// Opens a directory (a walk checks its root against it with [`same_dir`]).
    pub fn open_dir(&self, path: &str) -> Result<(PathBuf, File), JailError> {
        let resolved = self.resolve(path)?;
        let file = self.open_beneath(&resolved, Open::Dir, path)?;
        self.verify_open(&file, path)?;
        Ok((resolved, file))
    }

    /// Opens for writing (creating parents inside the jail as needed), its content untouched:
    /// the caller overwrites it and cuts it to the new length ([`set_len`](File::set_len)),
    /// which keeps the page cache's pages instead of freeing and refilling them (a 2 MB file:
    /// 0.5 instead of 2 ms), and touches the file only once what was opened has passed the
    /// second check.
    pub fn open_write(&self, path: &str) -> Result<(PathBuf, File), JailError> {
        let resolved = self.resolve(path)?;
        let file = self.open_beneath(&resolved, Open::Create, path)?;
        self.verify_open(&file, path)?;
        Ok((resolved, file))
    }
}

impl Jail {
    /// Deletes the file at `path` (not a directory): its parent is opened through the same
    /// checked walk as any open and checked again, and the name removed from that open
    /// directory, so a parent swapped for a link meanwhile cannot send the removal outside.
    pub fn remove_file(&self, path: &str) -> Result<PathBuf, JailError> {
        let resolved = self.resolve(path)?;
        let (Some(parent), Some(name)) = (resolved.parent(), resolved.file_name()) else {
            return Err(JailError::Io { path: path.to_string(), reason: "is not a file".into() });
        };
        let dir = self.open_beneath(parent, Open::Dir, path)?;
        self.verify_open(&dir, path)?;
        beneath::remove_in(&dir, parent, name, path)?;
        Ok(resolved)
    }
}

/// The path an open file is at now, as the kernel knows it.
#[cfg(target_os = "linux")]
fn opened_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

#[cfg(target_vendor = "apple")]
fn opened_path(file: &File) -> Option<PathBuf> {
    let mut path = PathBuf::new();
    nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_GETPATH(&mut path)).ok()?;
    Some(path)
}

#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
fn opened_path(_file: &File) -> Option<PathBuf> {
    None
}

/// What the jail guarantees on this system, for `initialize`'s `_meta.corvid.jail`: whether a
/// path is opened component by component without following links (`noFollowOpen`), whether
/// what was opened is checked again (`checkedAfterOpen`), and whether the kernel holds the
/// directory walks (list, glob, search) beneath the directory they walk (`walksConfined`:
/// Linux with Landlock, see `tools::walk::confined`). All three hold on Linux with Landlock;
/// the report says what is left open where one does not.
pub fn meta() -> serde_json::Value {
    let no_follow = cfg!(unix);
    let after_open = cfg!(any(target_os = "linux", target_vendor = "apple"));
    let walks = cfg!(target_os = "linux") && crate::sandbox::landlock_abi().is_some();
    let mut meta =
        serde_json::json!({ "noFollowOpen": no_follow, "checkedAfterOpen": after_open, "walksConfined": walks });
    let mut limits = Vec::new();
    if !(no_follow && after_open) {
        limits.push("paths are checked before they are opened, but a link swapped in between the check and the open is not caught on this system");
    }
    if !walks {
        limits.push("a directory walk checks its root, but a directory inside swapped for a link while it is walked can have its entries listed");
    }
    if !limits.is_empty() {
        meta["limits"] = serde_json::Value::from(limits.join("; "));
    }
    meta
}

fn io(path: &str, e: std::io::Error) -> JailError {
    JailError::Io { path: path.to_string(), reason: e.to_string() }
}
