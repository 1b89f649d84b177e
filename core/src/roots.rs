//! A session's roots: the folders it works in. The cwd is where relative paths start, where
//! commands run and where the project's instructions are looked up; the client's additional
//! directories are reachable by file tools too. Knows nothing but paths, so every layer that
//! needs the session's folders (the jail, the system prompt, sessions) can hold it.

use std::path::{Path, PathBuf};

/// The cwd and the additional directories, canonical as `session/new` (or load/resume)
/// checked them. The cwd is a field of its own rather than the first entry of a list, so no
/// code has to know that one index is special.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    cwd: PathBuf,
    additional: Vec<PathBuf>,
}

impl Roots {
    pub fn new(cwd: PathBuf, additional: Vec<PathBuf>) -> Self {
        Self { cwd, additional }
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The client's additional directories, in the order it gave them.
    pub fn additional(&self) -> &[PathBuf] {
        &self.additional
    }

    /// Every root, the cwd first.
    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.cwd.as_path()).chain(self.additional.iter().map(PathBuf::as_path))
    }

    /// The root `path` lies under; the deepest one when roots nest, since a path is opened
    /// from the root nearest to it.
    pub fn holding(&self, path: &Path) -> Option<&Path> {
        self.iter().filter(|root| path.starts_with(root)).max_by_key(|root| root.as_os_str().len())
    }

    /// Whether `path` lies under one of the roots (a prefix check: `path` must be canonical).
    pub fn contains(&self, path: &Path) -> bool {
        self.iter().any(|root| path.starts_with(root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cwd_comes_first_and_the_deepest_root_holds_a_path() {
        let roots = Roots::new("/w".into(), vec!["/w/vendor".into(), "/docs".into()]);
        assert_eq!(roots.iter().collect::<Vec<_>>(), [Path::new("/w"), Path::new("/w/vendor"), Path::new("/docs")]);
        assert_eq!(roots.holding(Path::new("/w/vendor/x")), Some(Path::new("/w/vendor")));
        assert_eq!(roots.holding(Path::new("/w/src")), Some(Path::new("/w")));
        assert!(roots.contains(Path::new("/docs")));
        // A prefix of components, not of text.
        assert!(!roots.contains(Path::new("/docsets/a")));
        assert_eq!(roots.holding(Path::new("/etc")), None);
    }
}
