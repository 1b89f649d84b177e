//! The locations no tool may touch even inside a root: credentials and system configuration.

use std::path::{Path, PathBuf};

use super::Jail;

impl Jail {
    /// The default protected locations: credentials and system configuration (`/etc`; on
    /// Windows the Windows folder, and the profile's `AppData`, where Corvid's own config and
    /// most programs' credentials are).
    pub fn default_forbidden(home: Option<&Path>) -> Vec<PathBuf> {
        #[cfg(not(windows))]
        let mut v = vec![PathBuf::from("/etc")];
        #[cfg(windows)]
        let mut v = vec![PathBuf::from(std::env::var_os("SystemRoot").unwrap_or_else(|| "C:\\Windows".into()))];
        if let Some(h) = home {
            #[cfg(windows)]
            v.push(h.join("AppData"));
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
    forbidden.into_iter().map(|p| dunce::canonicalize(&p).unwrap_or(p)).collect()
}
