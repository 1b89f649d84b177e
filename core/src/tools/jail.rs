//! The workspace jail: every path a tool touches is resolved (symlinks included) and must stay
//! under the session's roots, outside the forbidden paths.
//!
//! Checking a path and then using it leaves a window in which a file or a directory on the way
//! can be swapped for a symlink. So tools open through [`Jail::open_read`],
//! [`Jail::open_write`] and [`Jail::open_dir`]: the path is checked and canonicalized, then
//! opened one component at a time below its root with `O_NOFOLLOW` at every step (the checked
//! path had no links, so a link met now was swapped in: refused before anything outside is
//! opened, created or truncated), and what was opened is checked again (via `/proc/self/fd`).

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, mkdirat};

/// Links followed by hand while resolving one path (Linux's own limit).
const MAX_LINKS: usize = 40;

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

/// What [`Jail::open_beneath`] opens the last component as.
#[derive(Clone, Copy, PartialEq)]
enum Open {
    Read,
    Dir,
    /// Write-only, created if missing (missing directories too), not truncated.
    Create,
}

#[derive(Debug, Clone)]
pub struct Jail {
    /// Canonical roots; the first is the session cwd.
    roots: Vec<PathBuf>,
    forbidden: Vec<PathBuf>,
}

impl Jail {
    pub fn new(roots: Vec<PathBuf>, forbidden: Vec<PathBuf>) -> Self {
        // Forbidden paths are compared canonically too (e.g. /etc may be a symlink elsewhere).
        let forbidden = forbidden.into_iter().map(|p| std::fs::canonicalize(&p).unwrap_or(p)).collect();
        Self { roots, forbidden }
    }

    pub fn cwd(&self) -> &Path {
        &self.roots[0]
    }

    /// The default protected locations: credentials and system configuration.
    pub fn default_forbidden(home: Option<&Path>) -> Vec<PathBuf> {
        let mut v = vec![PathBuf::from("/etc")];
        if let Some(h) = home {
            for d in [
                ".ssh",
                ".aws",
                ".gnupg",
                ".config/corvid",
                ".netrc",
                ".git-credentials",
                ".docker",
                ".kube",
                ".config/gh",
                ".config/gcloud",
                ".azure",
            ] {
                v.push(h.join(d));
            }
        }
        v
    }

    /// Resolves `path` (absolute, or relative to the cwd) to a canonical path inside the roots.
    /// The file itself need not exist (for writes); its nearest existing ancestor is resolved.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, JailError> {
        if path.contains('\0') {
            return Err(JailError::Nul);
        }
        let joined = if Path::new(path).is_absolute() { PathBuf::from(path) } else { self.cwd().join(path) };
        let mut pending = normalize(&joined).ok_or_else(|| self.outside(path))?;
        let mut links = 0;
        // Canonicalize the longest existing prefix; the rest names nothing that exists, so it
        // cannot contain links. A link that canonicalization cannot follow (dangling, or a
        // loop) is followed here: left in the path, writing through it would create its target
        // wherever that is.
        'resolve: loop {
            // The existing part ends at the first name that is missing (links not followed),
            // found walking down from the root: popping names off the end instead costs a
            // canonicalization of the whole path per name, quadratic in a long path of missing
            // names (a 400 KB path took 13 s). `rest` holds the other names, last first.
            let mut existing = PathBuf::new();
            let mut rest = Vec::new();
            let mut names = pending.iter();
            while let Some(name) = names.next() {
                existing.push(name);
                if std::fs::symlink_metadata(&existing).is_err() {
                    existing.pop();
                    rest.extend(names.by_ref().rev().map(ToOwned::to_owned));
                    rest.push(name.to_owned());
                    break;
                }
            }
            let canonical = loop {
                match std::fs::canonicalize(&existing) {
                    Ok(c) => break c,
                    Err(_) => {
                        if let Ok(target) = std::fs::read_link(&existing) {
                            links += 1;
                            if links > MAX_LINKS {
                                return Err(JailError::Io {
                                    path: path.to_string(),
                                    reason: "too many levels of symbolic links".into(),
                                });
                            }
                            // The link exists, so its folder does and canonicalizes.
                            let dir = existing.parent().unwrap_or(Path::new("/"));
                            let mut next =
                                std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()).join(target);
                            next.extend(rest.iter().rev());
                            pending = normalize(&next).ok_or_else(|| self.outside(path))?;
                            continue 'resolve;
                        }
                        let Some(name) = existing.file_name().map(|n| n.to_owned()) else {
                            return Err(self.outside(path));
                        };
                        rest.push(name);
                        if !existing.pop() {
                            return Err(self.outside(path));
                        }
                    }
                }
            };
            let mut full = canonical;
            full.extend(rest.iter().rev());
            self.check(&full, path)?;
            return Ok(full);
        }
    }

    fn check(&self, canonical: &Path, shown: &str) -> Result<(), JailError> {
        if let Some(f) = self.forbidden.iter().find(|f| canonical.starts_with(f)) {
            return Err(JailError::Forbidden(shown.to_string(), f.display().to_string()));
        }
        if !self.roots.iter().any(|r| canonical.starts_with(r)) {
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
        let fd_path = format!("/proc/self/fd/{}", file.as_raw_fd());
        match std::fs::read_link(&fd_path) {
            Ok(real) => self.check(&real, shown),
            // Without /proc (not Linux) the pre-open check stands alone.
            Err(_) => Ok(()),
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

    /// Opens for writing (truncating, creating parents inside the jail as needed). The file
    /// is truncated only once what was opened has passed the second check.
    pub fn open_write(&self, path: &str) -> Result<(PathBuf, File), JailError> {
        let resolved = self.resolve(path)?;
        let file = self.open_beneath(&resolved, Open::Create, path)?;
        self.verify_open(&file, path)?;
        file.set_len(0).map_err(|e| io(path, e))?;
        Ok((resolved, file))
    }

    /// Opens the checked, canonical `resolved` from the root that holds it, one component at
    /// a time, never following a symlink (see the module comment).
    fn open_beneath(&self, resolved: &Path, how: Open, shown: &str) -> Result<File, JailError> {
        let root = self
            .roots
            .iter()
            .filter(|r| resolved.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
            .ok_or_else(|| self.outside(shown))?;
        let parts: Vec<&OsStr> = match resolved.strip_prefix(root) {
            Ok(rel) => rel.components().map(|c| c.as_os_str()).collect(),
            Err(_) => return Err(self.outside(shown)),
        };
        let search = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
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
            let fd = nix::fcntl::open(root.as_path(), last_flags, Mode::empty()).map_err(|e| failed(shown, e))?;
            return Ok(File::from(fd));
        };
        let mut dir: OwnedFd = nix::fcntl::open(root.as_path(), search, Mode::empty()).map_err(|e| failed(shown, e))?;
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

/// Whether `meta` (what a directory walker found at the root it was given) is `dir`, the
/// directory opened through the jail. A walker opens its root by path, so a root swapped for a
/// link after the check would be walked outside; this refuses that walk. (File contents found
/// by a walk are read through [`Jail::open_read`] anyway.)
pub fn same_dir(dir: &File, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    dir.metadata().is_ok_and(|d| d.dev() == meta.dev() && d.ino() == meta.ino())
}

fn io(path: &str, e: std::io::Error) -> JailError {
    JailError::Io { path: path.to_string(), reason: e.to_string() }
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

/// Lexical normalization: drops `.`, applies `..`. `None` if `..` climbs above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (PathBuf, PathBuf, Jail) {
        let base = std::env::temp_dir().join(format!("corvid-jail-{}", uuid::Uuid::new_v4()));
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(root.join("src/a.txt"), "a").expect("write");
        std::fs::write(outside.join("secret.txt"), "s").expect("write");
        let root = std::fs::canonicalize(root).expect("canon");
        let outside = std::fs::canonicalize(outside).expect("canon");
        let jail = Jail::new(vec![root.clone()], vec![root.join("forbidden")]);
        (root, outside, jail)
    }

    #[test]
    fn inside_paths_resolve() {
        let (root, _, jail) = tree();
        assert_eq!(jail.resolve("src/a.txt"), Ok(root.join("src/a.txt")));
        assert_eq!(jail.resolve("./src/../src/a.txt"), Ok(root.join("src/a.txt")));
        assert_eq!(jail.resolve("new/dir/file.rs"), Ok(root.join("new/dir/file.rs")));
        assert!(jail.resolve(root.join("src").to_str().expect("utf8")).is_ok());
    }

    #[test]
    fn escapes_are_refused() {
        let (root, outside, jail) = tree();
        assert!(matches!(jail.resolve("../outside/secret.txt"), Err(JailError::Outside(..))));
        assert!(matches!(
            jail.resolve(outside.join("secret.txt").to_str().expect("utf8")),
            Err(JailError::Outside(..))
        ));
        assert!(jail.resolve("/../../../../etc/passwd").is_err());
        assert!(matches!(jail.resolve("a\0b"), Err(JailError::Nul)));
        symlink(&outside, root.join("link-out")).expect("symlink");
        assert!(matches!(jail.resolve("link-out/secret.txt"), Err(JailError::Outside(..))));
        assert!(matches!(jail.resolve("link-out/new-file"), Err(JailError::Outside(..))));
        assert!(matches!(jail.resolve("forbidden/x"), Err(JailError::Forbidden(..))));
    }

    /// Found by the `jail` fuzz target: a dangling link resolved to itself, so writing to it
    /// created its target outside the roots; a link loop resolved to a path through the loop.
    #[test]
    fn dangling_and_looping_links_are_followed_or_refused() {
        let (root, outside, jail) = tree();
        symlink(outside.join("new.txt"), root.join("dangling-out")).expect("symlink");
        symlink("src/new.txt", root.join("dangling-in")).expect("symlink");
        symlink("../outside/nodir/x", root.join("dangling-dir")).expect("symlink");
        symlink("dangling-in", root.join("chain")).expect("symlink");
        symlink("loop", root.join("loop")).expect("symlink");
        assert!(matches!(jail.resolve("dangling-out"), Err(JailError::Outside(..))));
        assert!(jail.open_write("dangling-out").is_err());
        assert!(!outside.join("new.txt").exists(), "nothing is created outside");
        assert!(matches!(jail.resolve("dangling-dir/y"), Err(JailError::Outside(..))));
        assert_eq!(jail.resolve("dangling-in"), Ok(root.join("src/new.txt")));
        assert_eq!(jail.resolve("chain"), Ok(root.join("src/new.txt")));
        assert!(matches!(jail.resolve("loop/x"), Err(JailError::Io { .. })));
    }

    /// Found probing the `jail` fuzz target with long inputs: a path of many missing names
    /// took time quadratic in its length (13 s for 400 KB). Now one walk down finds the
    /// existing part; the rest is appended as is.
    #[test]
    fn a_long_path_of_missing_names_resolves_in_one_walk() {
        let (root, _, jail) = tree();
        let long = "x/".repeat(200_000);
        let resolved = jail.resolve(&long).expect("inside");
        assert!(resolved.starts_with(&root) && resolved.components().count() == root.components().count() + 200_000);
        assert!(matches!(
            jail.resolve(&format!("{long}../../x/{}", "../".repeat(200_000))),
            Err(JailError::Outside(..))
        ));
    }

    #[test]
    fn a_file_swapped_for_a_symlink_after_the_check_is_caught_at_open() {
        let (root, outside, jail) = tree();
        // Simulate the race: the check passed for a regular file, then it became a link.
        let resolved = jail.resolve("src/a.txt").expect("inside");
        std::fs::remove_file(&resolved).expect("rm");
        symlink(outside.join("secret.txt"), &resolved).expect("symlink");
        let file = File::open(&resolved).expect("open follows the link");
        assert!(matches!(jail.verify_open(&file, "src/a.txt"), Err(JailError::Outside(..))));
        assert!(jail.open_read("src/a.txt").is_err());
        let _ = root;
    }

    #[test]
    fn opening_after_the_check_never_follows_a_swapped_link() {
        let (root, outside, jail) = tree();
        std::fs::write(outside.join("keep.txt"), "precious").expect("write");
        // The check saw a real directory and file; both become links before the open.
        let file = jail.resolve("src/a.txt").expect("inside");
        std::fs::remove_file(&file).expect("rm");
        symlink(outside.join("keep.txt"), &file).expect("symlink");
        assert_eq!(
            jail.open_beneath(&file, Open::Create, "src/a.txt").err(),
            Some(JailError::Swapped("src/a.txt".into()))
        );
        assert_eq!(
            jail.open_beneath(&file, Open::Read, "src/a.txt").err(),
            Some(JailError::Swapped("src/a.txt".into()))
        );
        let dir = jail.resolve("src").expect("inside");
        std::fs::remove_file(&file).expect("rm link");
        std::fs::remove_dir(&dir).expect("rmdir");
        symlink(&outside, &dir).expect("symlink");
        assert_eq!(
            jail.open_beneath(&dir.join("keep.txt"), Open::Create, "src/keep.txt").err(),
            Some(JailError::Swapped("src/keep.txt".into()))
        );
        assert!(jail.open_beneath(&dir.join("new.txt"), Open::Create, "src/new.txt").is_err());
        assert!(jail.open_beneath(&dir, Open::Dir, "src").is_err());
        assert_eq!(std::fs::read_to_string(outside.join("keep.txt")).expect("read"), "precious", "never truncated");
        assert!(!outside.join("new.txt").exists(), "nothing created outside");
        // Missing parents are created inside; writes truncate only after the checks.
        std::fs::write(root.join("old.txt"), "0123456789").expect("write");
        let (_, f) = jail.open_write("old.txt").expect("open");
        assert_eq!(f.metadata().expect("meta").len(), 0);
        assert!(jail.open_write("deep/er/new.txt").is_ok());
        // A plain file where a directory should be is not mistaken for a swap.
        assert!(matches!(jail.open_write("old.txt/x"), Err(JailError::Io { .. })));
        assert!(root.join("deep/er/new.txt").exists());
        let (_, d) = jail.open_dir(".").expect("root dir");
        assert!(same_dir(&d, &std::fs::metadata(&root).expect("meta")));
        assert!(!same_dir(&d, &std::fs::metadata(&outside).expect("meta")));
    }
}
