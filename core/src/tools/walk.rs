//! What the directory-walking tools share: the walker (ripgrep's `ignore`, so .gitignore is
//! honoured as users expect), the root check, and running a walk off the async threads so
//! that a cancel stops it.

use tokio_util::sync::CancellationToken;

use super::{JailError, ToolError};

/// Runs blocking work (a walk, a hash) on the blocking pool. `work` gets the turn's token and
/// checks it as it goes ([`check`]); the wait for it races the token too, so a cancel answers
/// at once even while `work` finishes the entry it is on.
pub async fn blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl FnOnce(&CancellationToken) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let token = cancel.clone();
    let task = tokio::task::spawn_blocking(move || work(&token));
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        done = task => done.unwrap_or_else(|e| Err(ToolError::Failed(format!("the tool crashed: {e}")))),
    }
}

/// Stops a walk once the turn is cancelled (called per entry).
pub fn check(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() { Err(ToolError::Cancelled) } else { Ok(()) }
}

/// Refuses a walk whose root (the depth-0 entry) is not the directory opened through the jail.
pub fn check_root(entry: &ignore::DirEntry, dir: &std::fs::File, shown: &str) -> Result<(), ToolError> {
    if super::jail::same_dir(dir, entry.path()) { Ok(()) } else { Err(JailError::Swapped(shown.to_string()).into()) }
}

/// Threads a walk or a search uses: the cores, at least 2 and at most 8.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// A sorted walk of `root` (the order holds for the serial walk only), hidden files included,
/// .gitignore honoured even outside a repo.
pub fn walker(root: &std::path::Path) -> ignore::WalkBuilder {
    let mut walk = ignore::WalkBuilder::new(root);
    walk.hidden(false).require_git(false).sort_by_file_name(|a, b| a.cmp(b));
    walk
}

/// Entries the file walks (glob, search) leave out: anything but files, and `.git`.
pub fn skip(entry: &ignore::DirEntry) -> bool {
    !entry.file_type().is_some_and(|t| t.is_file()) || entry.path().components().any(|c| c.as_os_str() == ".git")
}

pub fn glob_matcher(pattern: &str) -> Result<globset::GlobMatcher, ToolError> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::Failed(format!("invalid glob `{pattern}`: {e}")))
}
