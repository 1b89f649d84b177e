//! The system prompt: who Corvid is, where it works, and the project's own instructions
//! (`AGENTS.md` files from the repository root down to the session cwd).

use std::path::{Path, PathBuf};

use crate::roots::Roots;

/// Largest AGENTS.md content taken from one file.
const AGENTS_MD_MAX: usize = 64 * 1024;

const BASE: &str = "You are Corvid, a coding agent working in the user's project through tools.
- Look before you change: read files and search the code before editing them.
- Edit with edit_file, quoting old_text exactly and uniquely; create files with write_file.
- Use update_plan for work with several steps, and keep it current.
- Run commands (tests, builds) with run_command when they help you check your work.
- Paths may be relative to the working directory. Never touch files outside the workspace.
- The user may decline a tool call; respect that and do not retry it unchanged.
- Answer concisely, in Markdown.";

/// The system prompt for a session rooted at `roots`.
pub fn system_prompt(roots: &Roots) -> String {
    let mut prompt = String::from(BASE);
    prompt.push_str(&format!("\n\nWorking directory: {}", roots.cwd().display()));
    if !roots.additional().is_empty() {
        let more: Vec<String> = roots.additional().iter().map(|r| r.display().to_string()).collect();
        prompt.push_str(&format!("\nAlso in the workspace: {}", more.join(", ")));
    }
    for (path, text) in agents_md(roots.cwd()) {
        prompt.push_str(&format!("\n\n# Project instructions from {}\n\n{}", path.display(), text.trim()));
    }
    prompt
}

/// AGENTS.md files from the repository root (the nearest ancestor with `.git`) down to `cwd`,
/// outermost first. Without a repository, only the cwd's own file counts.
pub fn agents_md(cwd: &Path) -> Vec<(PathBuf, String)> {
    let repo_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let dirs: Vec<&Path> = match repo_root {
        Some(root) => cwd.ancestors().take_while(|d| d.starts_with(root)).collect(),
        None => vec![cwd],
    };
    dirs.into_iter()
        .rev()
        .filter_map(|d| {
            let path = d.join("AGENTS.md");
            let text = std::fs::read_to_string(&path).ok()?;
            let mut end = text.len().min(AGENTS_MD_MAX);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            Some((path, text[..end].to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_agents_md_from_the_repo_root_down() {
        let base = std::env::temp_dir().join(format!("corvid-agents-{}", uuid::Uuid::new_v4()));
        let cwd = base.join("repo/crates/app");
        std::fs::create_dir_all(&cwd).expect("mkdir");
        std::fs::create_dir_all(base.join("repo/.git")).expect("mkdir");
        std::fs::write(base.join("AGENTS.md"), "NOT-IN-REPO").expect("write");
        std::fs::write(base.join("repo/AGENTS.md"), "root rules").expect("write");
        std::fs::write(cwd.join("AGENTS.md"), "app rules").expect("write");
        let found: Vec<String> = agents_md(&cwd).into_iter().map(|(_, t)| t).collect();
        assert_eq!(found, vec!["root rules", "app rules"]);
        let prompt = system_prompt(&Roots::new(cwd, Vec::new()));
        assert!(prompt.contains("root rules") && prompt.contains("app rules") && !prompt.contains("NOT-IN-REPO"));
    }
}
