//! The locations no tool may touch even inside a root: credentials and system configuration.

use std::path::{Path, PathBuf};

use super::Jail;

impl Jail {
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
}

/// Forbidden paths are compared canonically, like resolved paths (e.g. /etc may be a
/// symlink elsewhere); one that does not exist is kept as given.
pub(super) fn canonical(forbidden: Vec<PathBuf>) -> Vec<PathBuf> {
    forbidden.into_iter().map(|p| std::fs::canonicalize(&p).unwrap_or(p)).collect()
}
