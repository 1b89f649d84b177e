//! The instruction files the model reads: the user's own (`AGENTS.md` in Corvid's config
//! folder), the project's from the repository root down to the working directory, and those
//! of folders below it, brought to the model the first time a tool reaches beneath them. In
//! each folder `AGENTS.md` counts, or `CLAUDE.md` where there is no `AGENTS.md` (many
//! repositories carry only that).

use std::path::{Path, PathBuf};

use crate::roots::Roots;

/// Largest instruction text taken from one file.
const FILE_MAX: usize = 64 * 1024;
/// The names an instruction file goes by, the first found in a folder counting.
const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// One file and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct InstructionFile {
    pub path: PathBuf,
    pub text: String,
}

/// The user's own instructions: `AGENTS.md` beside Corvid's config file.
pub fn user_file(config_file: Option<&Path>) -> Option<InstructionFile> {
    read(&config_file?.parent()?.join("AGENTS.md"))
}

/// The folder's instruction file: its `AGENTS.md`, else its `CLAUDE.md`.
pub fn in_folder(dir: &Path) -> Option<InstructionFile> {
    NAMES.iter().find_map(|name| read(&dir.join(name)))
}

fn read(path: &Path) -> Option<InstructionFile> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let mut end = text.len().min(FILE_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = text[..end].trim().to_string();
    (!text.is_empty()).then(|| InstructionFile { path: path.to_path_buf(), text })
}

/// The files from the repository root (the nearest ancestor with `.git`) down to `cwd`,
/// outermost first. Without a repository, only the cwd's own file counts.
pub fn chain(cwd: &Path) -> Vec<InstructionFile> {
    let repo_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let dirs: Vec<&Path> = match repo_root {
        Some(root) => cwd.ancestors().take_while(|d| d.starts_with(root)).collect(),
        None => vec![cwd],
    };
    dirs.into_iter().rev().filter_map(in_folder).collect()
}

/// The folders whose instruction files apply to `path` but are not in the system prompt:
/// those strictly below the cwd, or in an additional root (its own top folder included),
/// outermost first. `path` is canonical (the jail's), a file or a folder.
pub fn folders_over(path: &Path, roots: &Roots) -> Vec<PathBuf> {
    let dir = if path.is_dir() { path } else { path.parent().unwrap_or(path) };
    let (root, top_included) = if dir.starts_with(roots.cwd()) {
        (roots.cwd(), false)
    } else {
        match roots.additional().iter().find(|r| dir.starts_with(r)) {
            Some(root) => (root.as_path(), true),
            None => return Vec::new(),
        }
    };
    let mut folders: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| d.starts_with(root) && (top_included || *d != root))
        .map(Path::to_path_buf)
        .collect();
    folders.reverse();
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> PathBuf {
        let base = std::env::temp_dir().join(format!("corvid-instructions-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&base).expect("mkdir");
        base
    }

    #[test]
    fn agents_md_or_claude_md_from_the_repo_root_down() {
        let base = temp();
        let cwd = base.join("repo/crates/app");
        std::fs::create_dir_all(&cwd).expect("mkdir");
        std::fs::create_dir_all(base.join("repo/.git")).expect("mkdir");
        std::fs::write(base.join("AGENTS.md"), "NOT-IN-REPO").expect("write");
        std::fs::write(base.join("repo/CLAUDE.md"), "root claude rules").expect("write");
        std::fs::write(base.join("repo/crates/CLAUDE.md"), "crates claude").expect("write");
        std::fs::write(base.join("repo/crates/AGENTS.md"), "crates agents").expect("write");
        std::fs::write(cwd.join("AGENTS.md"), "app rules").expect("write");
        let found: Vec<String> = chain(&cwd).into_iter().map(|f| f.text).collect();
        assert_eq!(found, vec!["root claude rules", "crates agents", "app rules"], "AGENTS.md wins in a folder");
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn folders_below_the_cwd_and_in_other_roots() {
        let base = temp();
        let (cwd, other) = (base.join("cwd"), base.join("other"));
        std::fs::create_dir_all(cwd.join("a/b")).expect("mkdir");
        std::fs::create_dir_all(other.join("c")).expect("mkdir");
        std::fs::write(cwd.join("a/b/f.rs"), "").expect("write");
        let roots = Roots::new(cwd.clone(), vec![other.clone()]);
        assert_eq!(folders_over(&cwd.join("a/b/f.rs"), &roots), vec![cwd.join("a"), cwd.join("a/b")]);
        assert_eq!(folders_over(&cwd.join("f.rs"), &roots), Vec::<PathBuf>::new(), "the cwd's own is in the prompt");
        assert_eq!(folders_over(&other.join("c"), &roots), vec![other.clone(), other.join("c")]);
        assert!(folders_over(&base.join("elsewhere/x"), &roots).is_empty());
        let user = base.join("config");
        std::fs::create_dir_all(&user).expect("mkdir");
        std::fs::write(user.join("AGENTS.md"), "  my own rules \n").expect("write");
        assert_eq!(user_file(Some(&user.join("config.toml"))).map(|f| f.text).as_deref(), Some("my own rules"));
        let _ = std::fs::remove_dir_all(base);
    }
}
