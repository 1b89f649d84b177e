//! Opening a checked path where there is no `openat` (Windows): the canonical path that
//! passed the checks is opened as it is, missing parents made inside the root first. A link
//! swapped in between the check and the open is not caught here (see the module comment of
//! `jail`); what the walk of `beneath` refuses on Unix, this cannot.

use std::fs::{File, OpenOptions};
use std::path::Path;

use super::{Jail, JailError, io};

/// What [`Jail::open_beneath`] opens the last component as.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Open {
    Read,
    Dir,
    /// Write-only, created if missing (missing directories too), not truncated.
    Create,
}

/// `FILE_FLAG_BACKUP_SEMANTICS`: Windows opens a directory only with it.
#[cfg(windows)]
const OPEN_DIRECTORY: u32 = 0x0200_0000;

impl Jail {
    /// Opens the checked, canonical `resolved`, which must lie in one of the roots.
    pub(super) fn open_beneath(&self, resolved: &Path, how: Open, shown: &str) -> Result<File, JailError> {
        let root = self.roots.holding(resolved).ok_or_else(|| self.outside(shown))?;
        let mut options = OpenOptions::new();
        match how {
            Open::Read => {
                options.read(true);
            }
            Open::Dir => {
                options.read(true);
                #[cfg(windows)]
                std::os::windows::fs::OpenOptionsExt::custom_flags(&mut options, OPEN_DIRECTORY);
            }
            Open::Create => {
                if let Some(parent) = resolved.parent().filter(|p| p.starts_with(root)) {
                    std::fs::create_dir_all(parent).map_err(|e| io(shown, e))?;
                }
                options.write(true).create(true);
            }
        }
        options.open(resolved).map_err(|e| io(shown, e))
    }

    /// Opens for reading `rel`, a file a walk of `dir_path` found, through the checks of
    /// [`Jail::open_read`].
    pub fn open_found(&self, _dir: &File, dir_path: &Path, rel: &Path) -> Result<File, JailError> {
        let full = dir_path.join(rel);
        let shown = full.display().to_string();
        self.check(&full, &shown)?;
        self.open_read(&shown).map(|(_, file)| file)
    }
}

/// Removes the file `name` in `dir_path` (no `unlinkat` here: by its checked path).
pub(super) fn remove_in(_dir: &File, dir_path: &Path, name: &std::ffi::OsStr, shown: &str) -> Result<(), JailError> {
    std::fs::remove_file(dir_path.join(name)).map_err(|e| io(shown, e))
}

/// Whether `found` (the root a directory walker was given) is `dir`, the directory opened
/// through the jail: the same file by the system's identity of open handles.
pub fn same_dir(dir: &File, found: &Path) -> bool {
    let (Ok(dir), Ok(found)) = (dir.try_clone().map(same_file::Handle::from_file), same_file::Handle::from_path(found))
    else {
        return false;
    };
    dir.is_ok_and(|d| d == found)
}
