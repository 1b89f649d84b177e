//! Which paths the Landlock rules name so that, together, they cover everything beneath a base
//! except some excluded subtrees.
//!
//! Landlock only allows: a rule grants access to a whole subtree and nothing can take part of
//! it back. So leaving `~/.ssh` out of "read everything" means naming, instead of `/`, every
//! sibling of each directory on the way down to it: the entries of `/` but `home`, the entries
//! of `/home` but the user's, the entries of the user's home but `.ssh`. What is left out is
//! the excluded subtree and nothing else (at the time of the listing: an entry created later
//! in a directory on the way is not covered, which fails closed).
//!
//! Symbolic links get no rule: access through a link is checked where it points, and a rule
//! opened through one would cover its target (which may be excluded).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a directory entry is, links not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    Link,
    /// Files, devices, sockets, fifos: anything that has no entries.
    Other,
}

/// Lists directories; the disk in production, a fake tree in tests.
pub trait Listing {
    /// The entries directly in `dir` (an unreadable directory has none: fail closed).
    fn entries(&self, dir: &Path) -> Vec<(OsString, Kind)>;
}

/// The real file system.
pub struct Disk;

impl Listing for Disk {
    fn entries(&self, dir: &Path) -> Vec<(OsString, Kind)> {
        let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
        read.filter_map(Result::ok)
            .map(|e| {
                // `file_type` does not follow links.
                let kind = match e.file_type() {
                    Ok(t) if t.is_symlink() => Kind::Link,
                    Ok(t) if t.is_dir() => Kind::Dir,
                    _ => Kind::Other,
                };
                (e.file_name(), kind)
            })
            .collect()
    }
}

/// The paths whose subtrees hold everything beneath `base` except the `excluded` subtrees:
/// `base` itself when nothing excluded lies beneath it, nothing when `base` lies in an
/// excluded subtree. `base` and `excluded` must be absolute and free of links (canonical).
pub fn cover(base: &Path, excluded: &[PathBuf], listing: &dyn Listing) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(base, excluded, listing, &mut out);
    out
}

fn walk(dir: &Path, excluded: &[PathBuf], listing: &dyn Listing, out: &mut Vec<PathBuf>) {
    if excluded.iter().any(|e| dir.starts_with(e)) {
        return;
    }
    let beneath: Vec<&PathBuf> = excluded.iter().filter(|e| e.starts_with(dir)).collect();
    if beneath.is_empty() {
        out.push(dir.to_path_buf());
        return;
    }
    for (name, kind) in listing.entries(dir) {
        if kind == Kind::Link {
            continue;
        }
        let child = dir.join(&name);
        if beneath.iter().any(|e| e.starts_with(&child)) {
            // On the way to (or itself) an excluded path: split it further. Only a directory
            // can lead further down; an excluded file is simply left out.
            if kind == Kind::Dir {
                walk(&child, excluded, listing, out);
            }
        } else {
            out.push(child);
        }
    }
}

/// Whether a rule on `rule` would grant anything in an excluded subtree: it lies in one or
/// holds one. Checked again on what was really opened, so a path swapped on the way between
/// the listing and the open cannot widen a rule.
pub fn overlaps(rule: &Path, excluded: &[PathBuf]) -> bool {
    excluded.iter().any(|e| rule.starts_with(e) || e.starts_with(rule))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A tree given as its paths; a trailing `/` marks a directory, `@` a link.
    struct Fake(BTreeMap<PathBuf, Kind>);

    impl Fake {
        fn new(paths: &[&str]) -> Self {
            let mut map = BTreeMap::new();
            map.insert(PathBuf::from("/"), Kind::Dir);
            for p in paths {
                let (path, kind) = match (p.strip_suffix('/'), p.strip_suffix('@')) {
                    (Some(d), _) => (d, Kind::Dir),
                    (_, Some(l)) => (l, Kind::Link),
                    _ => (*p, Kind::Other),
                };
                map.insert(PathBuf::from(path), kind);
            }
            Self(map)
        }
    }

    impl Listing for Fake {
        fn entries(&self, dir: &Path) -> Vec<(OsString, Kind)> {
            self.0
                .iter()
                .filter(|(p, _)| p.parent() == Some(dir))
                .filter_map(|(p, k)| Some((p.file_name()?.to_os_string(), *k)))
                .collect()
        }
    }

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    fn sorted(mut v: Vec<PathBuf>) -> Vec<PathBuf> {
        v.sort();
        v
    }

    const TREE: &[&str] = &[
        "/bin@",
        "/etc/",
        "/etc/passwd",
        "/home/",
        "/home/u/",
        "/home/u/.ssh/",
        "/home/u/.ssh/id_ed25519",
        "/home/u/.config/",
        "/home/u/.config/corvid/",
        "/home/u/.config/corvid/config.toml",
        "/home/u/.config/nvim/",
        "/home/u/.netrc",
        "/home/u/.bashrc",
        "/home/u/keys@",
        "/home/u/project/",
        "/home/v/",
        "/usr/",
        "/usr/bin/",
        "/usr/bin/sh",
    ];

    #[test]
    fn the_excluded_subtrees_and_nothing_else_are_left_out() {
        let fake = Fake::new(TREE);
        let excluded = paths(&["/home/u/.ssh", "/home/u/.config/corvid", "/home/u/.netrc"]);
        let rules = sorted(cover(Path::new("/"), &excluded, &fake));
        assert_eq!(
            rules,
            paths(&["/etc", "/home/u/.bashrc", "/home/u/.config/nvim", "/home/u/project", "/home/v", "/usr",])
        );
        for r in &rules {
            assert!(!overlaps(r, &excluded), "{} covers a forbidden path", r.display());
        }
    }

    #[test]
    fn every_path_of_the_tree_is_covered_unless_excluded() {
        // The property in both directions, over every entry of the tree: covered exactly when
        // not excluded (links aside: they are reached through where they point).
        let fake = Fake::new(TREE);
        let excluded = paths(&["/home/u/.ssh", "/etc", "/home/u/.config/corvid/config.toml"]);
        let rules = cover(Path::new("/"), &excluded, &fake);
        for (path, kind) in &fake.0 {
            if *kind == Kind::Link || path == Path::new("/") {
                continue;
            }
            let covered = rules.iter().any(|r| path.starts_with(r));
            let forbidden = excluded.iter().any(|e| path.starts_with(e));
            // Ancestors of an excluded path are split, not covered themselves.
            let ancestor = excluded.iter().any(|e| e.starts_with(path) && e != path);
            assert_eq!(covered, !forbidden && !ancestor, "{}", path.display());
        }
    }

    #[test]
    fn a_base_without_exclusions_is_one_rule_and_one_inside_an_exclusion_none() {
        let fake = Fake::new(TREE);
        let excluded = paths(&["/home/u/.ssh"]);
        assert_eq!(cover(Path::new("/home/u/project"), &excluded, &fake), paths(&["/home/u/project"]));
        assert!(cover(Path::new("/home/u/.ssh"), &excluded, &fake).is_empty());
        assert!(cover(Path::new("/home/u/.ssh/sub"), &excluded, &fake).is_empty());
        // A root holding a forbidden path (a session in $HOME) is split like `/` is.
        let rules = sorted(cover(Path::new("/home/u"), &excluded, &fake));
        assert!(rules.contains(&PathBuf::from("/home/u/project")));
        assert!(!rules.iter().any(|r| overlaps(r, &excluded)), "{rules:?}");
    }

    #[test]
    fn on_disk_links_are_skipped_and_forbidden_dirs_left_out() {
        let dir = std::env::temp_dir().join(format!("corvid-cover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(dir.join(d)).expect("mkdir");
        }
        std::fs::write(dir.join("a/secret/key"), "k").expect("write");
        std::fs::write(dir.join("a/file"), "f").expect("write");
        std::os::unix::fs::symlink(dir.join("a/secret"), dir.join("a/link")).expect("symlink");
        let base = std::fs::canonicalize(&dir).expect("canonical");
        let excluded = vec![base.join("a/secret")];
        let rules = sorted(cover(&base, &excluded, &Disk));
        assert_eq!(rules, vec![base.join("a/file"), base.join("a/open"), base.join("b")]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
