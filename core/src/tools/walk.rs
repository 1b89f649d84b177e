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

/// Runs `walk`, a walk of `dir` (the directory the jail opened at `root`), on a thread of its
/// own held beneath `dir` ([`confine_thread`]). The walker is to be built before (`build`
/// reads the user's global git excludes, which lie outside).
pub fn confined<T: Send>(
    dir: &std::fs::File,
    root: &std::path::Path,
    walk: impl FnOnce() -> Result<T, ToolError> + Send,
) -> Result<T, ToolError> {
    if !cfg!(target_os = "linux") || crate::sandbox::landlock_abi().is_none() {
        return walk();
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                confine_thread(dir, root)?;
                walk()
            })
            .join()
            .unwrap_or_else(|_| Err(ToolError::Failed("the walk crashed".into())))
    })
}

/// Holds the calling thread's reads, for good, beneath `dir` (the directory the jail opened at
/// `root`) and the ignore files above it (Linux with Landlock: `sandbox::confine_reads`); the
/// threads it starts after inherit that. A walker reads directories by path, so without this a
/// directory on the way swapped for a link out while it walks would be listed where the link
/// points. Call it only on a thread that ends with the walk. Where the kernel cannot confine
/// it, nothing happens and a walk is guarded by the root check in [`checked`] alone (`jail::meta`
/// says which).
pub fn confine_thread(dir: &std::fs::File, root: &std::path::Path) -> Result<(), ToolError> {
    #[cfg(target_os = "linux")]
    if crate::sandbox::landlock_abi().is_some() {
        let above = ignore_files_above(root);
        let above: Vec<&std::path::Path> = above.iter().map(|p| p.as_path()).collect();
        crate::sandbox::confine_reads(dir, &above)
            .map_err(|e| ToolError::Failed(format!("the walk could not be confined: {e}")))?;
    }
    let _ = (dir, root);
    Ok(())
}

/// The files outside a walk's root that the walker reads ignore rules from: each parent's
/// `.gitignore` and `.ignore`, and each repository's `info/exclude` (for a linked worktree,
/// whose `.git` is a file naming its git directory, the walker reads that file, then the git
/// directory's `commondir`, then the exclude file of the directory that names).
#[cfg(target_os = "linux")]
fn ignore_files_above(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let first_line = |path: &std::path::Path| {
        std::fs::read_to_string(path).ok().and_then(|text| text.lines().next().map(str::to_string))
    };
    let mut files = Vec::new();
    for dir in root.ancestors() {
        let git = dir.join(".git");
        if dir != root {
            files.extend([dir.join(".gitignore"), dir.join(".ignore"), git.join("info/exclude")]);
        }
        let Some(linked) =
            first_line(&git).and_then(|line| line.strip_prefix("gitdir: ").map(std::path::PathBuf::from))
        else {
            continue;
        };
        if let Some(common) = first_line(&linked.join("commondir")) {
            let common = if common.starts_with('.') { linked.join(common) } else { common.into() };
            files.push(common.join("info/exclude"));
        }
        files.extend([git, linked.join("commondir")]);
    }
    files
}

/// What a walk does with what its walker gives: the entry, `None` for an error that only
/// leaves entries out (a subdirectory that cannot be read, as for `rg`), or the walk refused.
/// Refused: a root (the depth-0 entry) that is not the directory the jail opened, and a root
/// the walker could not read for want of permission (the jail had just opened it for reading,
/// so the path pointed elsewhere by then: a swap that [`confine_thread`] made the kernel refuse).
pub fn checked(
    entry: Result<ignore::DirEntry, ignore::Error>,
    dir: &std::fs::File,
    shown: &str,
) -> Result<Option<ignore::DirEntry>, ToolError> {
    let swapped = || Err(JailError::Swapped(shown.to_string()).into());
    match entry {
        Ok(entry) if entry.depth() == 0 && !super::jail::same_dir(dir, entry.path()) => swapped(),
        Ok(entry) => Ok(Some(entry)),
        Err(e)
            if e.depth() == Some(0)
                && e.io_error().is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied) =>
        {
            swapped()
        }
        Err(_) => Ok(None),
    }
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
