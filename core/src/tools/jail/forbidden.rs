//! How the locations no tool may touch even inside a root are compared (their default list is
//! configuration: `config::default_forbidden_paths`).

use std::path::PathBuf;

/// Forbidden paths are compared canonically, like resolved paths (e.g. /etc may be a
/// symlink elsewhere); one that does not exist is kept as given.
pub(super) fn canonical(forbidden: Vec<PathBuf>) -> Vec<PathBuf> {
    forbidden.into_iter().map(|p| dunce::canonicalize(&p).unwrap_or(p)).collect()
}
