//! Holding one thread's reads beneath a directory: what the directory-walking tools run under.
//!
//! A walker (ripgrep's `ignore`) reads directories by path, so a directory swapped for a link
//! out while it walks would be listed where the link points; no check before or after a read
//! can close that window. Landlock can: the walk runs on a thread of its own that has given up
//! reading (files and directories) anywhere but beneath the directory it was given (the
//! descriptor the jail opened, so the rule names that directory itself, wherever its path
//! points by then) and the few ignore files above it that the walker honours. A read through a
//! link swapped in is then refused by the kernel, at every depth.
//!
//! Only reads are handled: the thread may do nothing else that it could not do before, and
//! nothing else in the process is touched (the rules bind the calling thread and the threads
//! it starts; `no_new_privs`, which Landlock needs, binds the same thread only).

use std::fs::File;
use std::path::Path;

use landlock::{AccessFs, PathBeneath, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::SandboxError;

/// Confines the calling thread's reads to beneath `dir` and to `also` (files, or directories
/// whose files only may be read: no listing). Returns whether the kernel enforces it (not on a
/// kernel without Landlock). A path in `also` that is missing or is a link gets no rule.
pub fn confine_reads(dir: &File, also: &[&Path]) -> Result<bool, SandboxError> {
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let mut ruleset = Ruleset::default().handle_access(read)?.create()?;
    ruleset = ruleset.add_rule(PathBeneath::new(dir, read))?;
    for path in also {
        if let Some(fd) = open_unlinked(path) {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, AccessFs::ReadFile))?;
        }
    }
    let status = ruleset.restrict_self()?;
    Ok(status.ruleset != RulesetStatus::NotEnforced)
}

/// `path` opened as itself (`O_PATH | O_NOFOLLOW`): a link gets no rule, whatever it points to.
fn open_unlinked(path: &Path) -> Option<File> {
    let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let file = File::from(nix::fcntl::open(path, flags, Mode::empty()).ok()?);
    let meta = file.metadata().ok()?;
    (!meta.file_type().is_symlink()).then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The confined thread lists and reads beneath its directory and reads the named files;
    /// a link swapped in for the directory (the walk's race) and everything else are refused.
    #[test]
    fn reads_stay_beneath_the_directory_even_through_a_swapped_link() {
        if super::super::probe::landlock_abi().is_none() {
            return;
        }
        let base = std::env::temp_dir().join(format!("corvid-reads-{}", uuid::Uuid::new_v4()));
        for d in ["project/work/sub", "outside"] {
            std::fs::create_dir_all(base.join(d)).expect("mkdir");
        }
        let base = std::fs::canonicalize(&base).expect("canonical");
        std::fs::write(base.join("project/work/sub/inside.txt"), "inside").expect("write");
        std::fs::write(base.join("project/.gitignore"), "target/\n").expect("write");
        std::fs::write(base.join("outside/secret.txt"), "top secret").expect("write");
        let work = base.join("project/work");
        let dir = File::open(&work).expect("open work");
        // The swap: the real directory moves aside and a link out takes its name.
        std::fs::rename(&work, base.join("project/work.real")).expect("rename");
        std::os::unix::fs::symlink(base.join("outside"), &work).expect("symlink");
        let b = base.clone();
        let seen = std::thread::spawn(move || {
            let gitignore = b.join("project/.gitignore");
            let enforced = confine_reads(&dir, &[&gitignore, &b.join("project/missing")]).expect("confined");
            (
                enforced,
                [
                    std::fs::read_dir(b.join("project/work.real/sub")).is_ok(),
                    std::fs::read_to_string(b.join("project/work.real/sub/inside.txt")).is_ok(),
                    std::fs::read_to_string(&gitignore).is_ok(),
                    std::fs::read_dir(b.join("project/work")).is_ok(),
                    std::fs::read_to_string(b.join("project/work/secret.txt")).is_ok(),
                    std::fs::read_dir(b.join("project")).is_ok(),
                    std::fs::read_to_string(b.join("outside/secret.txt")).is_ok(),
                ],
            )
        })
        .join()
        .expect("the confined thread");
        assert_eq!(seen, (true, [true, true, true, false, false, false, false]));
        // The rest of the process is untouched.
        assert!(std::fs::read_to_string(base.join("outside/secret.txt")).is_ok());
        std::fs::remove_dir_all(&base).expect("rm");
    }
}
