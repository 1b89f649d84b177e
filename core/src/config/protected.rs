//! The locations no tool or command may touch even inside a session's roots, unless the
//! config names its own (`[limits] forbidden_paths`).

use std::path::{Path, PathBuf};

/// The default protected locations: credentials and system configuration (`/etc`; on
/// Windows the Windows folder, and the profile's `AppData`, where Corvid's own config and
/// most programs' credentials are).
pub fn default_forbidden_paths(home: Option<&Path>) -> Vec<PathBuf> {
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
