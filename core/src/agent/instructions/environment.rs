//! The environment block of the system prompt: operating system, shell, folders, today's date
//! and time zone, and the repository's branch and state. Gathered once per session, at its
//! first turn (the date stays the session's start date: a prefix that changed per request
//! would defeat the provider's prompt cache), off the async threads, `git` bounded by a timeout.

use std::path::Path;
use std::time::Duration;

use crate::roots::Roots;

/// How long `git status` may take (a huge repository must not hold up the first turn).
const GIT_TIMEOUT: Duration = Duration::from_secs(2);
/// Changed paths named in the prompt, at most.
const STATUS_PATHS: usize = 10;

/// The facts, gathered.
#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    pub os: String,
    pub shell: String,
    pub date: String,
    pub time_zone: String,
    pub git: Option<Git>,
}

/// The repository the working directory is in.
#[derive(Debug, Clone, PartialEq)]
pub struct Git {
    pub root: String,
    /// The branch, or `detached at <commit>`.
    pub branch: Option<String>,
    /// `git status` in short: counts and the first paths; `None` when git could not say.
    pub status: Option<String>,
}

impl Environment {
    /// Gathers the facts for a session rooted at `roots` (blocking: `git` runs).
    pub fn gather(roots: &Roots) -> Self {
        let now = chrono::Local::now();
        Self {
            os: os_name(),
            shell: shell_name(),
            date: now.format("%Y-%m-%d (%A)").to_string(),
            time_zone: time_zone(now.format("%:z").to_string()),
            git: git(roots.cwd()),
        }
    }

    /// The block as the model reads it.
    pub fn render(&self, roots: &Roots) -> String {
        let mut text = String::from("# Environment\n");
        text.push_str(&format!("- Working directory: {}\n", roots.cwd().display()));
        if !roots.additional().is_empty() {
            let more: Vec<String> = roots.additional().iter().map(|r| r.display().to_string()).collect();
            text.push_str(&format!("- Also in the workspace: {}\n", more.join(", ")));
        }
        text.push_str(
            "- File tools work only inside these folders; relative paths are relative to the working directory.\n",
        );
        text.push_str(&format!("- Operating system: {}\n", self.os));
        text.push_str(&format!("- Commands run with: {}\n", self.shell));
        text.push_str(&format!("- Today's date: {} (time zone {})\n", self.date, self.time_zone));
        match &self.git {
            None => text.push_str("- Git: the working directory is not in a git repository\n"),
            Some(git) => {
                let branch = git.branch.as_deref().unwrap_or("unknown");
                text.push_str(&format!("- Git: repository at {}, branch {branch}\n", git.root));
                if let Some(status) = &git.status {
                    text.push_str(&format!("- Git status at the start of this session: {status}\n"));
                }
            }
        }
        text
    }
}

/// "Linux 6.18 (Debian GNU/Linux 12) x86_64", "macOS 15.1 aarch64", "Windows x86_64".
fn os_name() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "linux" => {
            let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            let kernel = kernel.trim().split(['-', '+']).next().unwrap_or("").to_string();
            let distro = std::fs::read_to_string("/etc/os-release").ok().and_then(|t| {
                t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
            });
            match distro {
                Some(d) => format!("Linux {kernel} ({d}) {arch}"),
                None => format!("Linux {kernel} {arch}"),
            }
        }
        "macos" => format!("macOS {arch}"),
        other => format!("{other} {arch}"),
    }
}

/// The shell run_command uses, as `process::shell_argv` picks it.
fn shell_name() -> String {
    let (program, args) = crate::process::shell_argv("<command>");
    let posix = if cfg!(unix) && std::env::var_os("CORVID_SHELL").is_none() { " (POSIX sh)" } else { "" };
    format!("{program} {}{posix}", args.join(" "))
}

/// The zone's name where the system says it, with its offset from UTC.
fn time_zone(offset: String) -> String {
    match iana_time_zone::get_timezone() {
        Ok(name) if !name.is_empty() => format!("{name}, UTC{offset}"),
        _ => format!("UTC{offset}"),
    }
}

/// The repository around `cwd`: its root, branch (read from `.git/HEAD`, no process), and a
/// short status from `git status --porcelain`.
fn git(cwd: &Path) -> Option<Git> {
    let root = cwd.ancestors().find(|d| d.join(".git").exists())?;
    Some(Git { root: root.display().to_string(), branch: branch(&root.join(".git")), status: status(cwd) })
}

/// The branch in `HEAD` (a worktree's `.git` file points at its own git dir).
fn branch(dot_git: &Path) -> Option<String> {
    let git_dir = if dot_git.is_file() {
        let pointer = std::fs::read_to_string(dot_git).ok()?;
        let dir = pointer.trim().strip_prefix("gitdir:")?.trim().to_string();
        dot_git.parent()?.join(dir)
    } else {
        dot_git.to_path_buf()
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => branch.to_string(),
        None => format!("detached at {}", head.get(..12).unwrap_or(head)),
    })
}

/// `git status --porcelain` summarized: "clean", or counts and the first paths.
fn status(cwd: &Path) -> Option<String> {
    let mut child = std::process::Command::new("git")
        .args(["status", "--porcelain=v1", "--untracked-files=normal"])
        .current_dir(cwd)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let out = child.stdout.take()?;
    // Read on a thread of its own so the timeout holds even if git never closes its output.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::Read::take(out, 1 << 20), &mut text);
        let _ = tx.send(text);
    });
    let text = rx.recv_timeout(GIT_TIMEOUT).ok();
    let _ = child.kill();
    let ok = child.wait().ok().is_some_and(|s| s.success());
    let text = text.filter(|_| ok)?;
    Some(summarize(&text))
}

/// Porcelain lines → "3 modified, 1 untracked: src/a.rs, b.txt, …".
fn summarize(porcelain: &str) -> String {
    let lines: Vec<&str> = porcelain.lines().filter(|l| l.len() > 3).collect();
    if lines.is_empty() {
        return "clean".to_string();
    }
    let (mut untracked, mut changed) = (0, 0);
    for line in &lines {
        if line.starts_with("??") {
            untracked += 1;
        } else {
            changed += 1;
        }
    }
    let mut counts = Vec::new();
    if changed > 0 {
        counts.push(format!("{changed} changed"));
    }
    if untracked > 0 {
        counts.push(format!("{untracked} untracked"));
    }
    let paths: Vec<&str> = lines.iter().take(STATUS_PATHS).map(|l| &l[3..]).collect();
    let more = if lines.len() > STATUS_PATHS { ", …" } else { "" };
    format!("{}: {}{more}", counts.join(", "), paths.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_in_short() {
        assert_eq!(summarize(""), "clean");
        assert_eq!(summarize(" M src/a.rs\n?? new.txt\nA  b.rs\n"), "2 changed, 1 untracked: src/a.rs, new.txt, b.rs");
        let many: String = (0..12).map(|i| format!("?? f{i}\n")).collect();
        assert!(summarize(&many).ends_with("f9, …"));
    }

    #[test]
    fn the_branch_comes_from_head_in_a_repository_or_a_worktree() {
        let base = std::env::temp_dir().join(format!("corvid-env-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(base.join("repo/.git")).expect("mkdir");
        std::fs::write(base.join("repo/.git/HEAD"), "ref: refs/heads/feature/x\n").expect("write");
        assert_eq!(branch(&base.join("repo/.git")).as_deref(), Some("feature/x"));
        std::fs::create_dir_all(base.join("gitdirs/wt")).expect("mkdir");
        std::fs::write(base.join("gitdirs/wt/HEAD"), "0123456789abcdef0123\n").expect("write");
        std::fs::create_dir_all(base.join("wt")).expect("mkdir");
        std::fs::write(base.join("wt/.git"), format!("gitdir: {}\n", base.join("gitdirs/wt").display()))
            .expect("write");
        assert_eq!(branch(&base.join("wt/.git")).as_deref(), Some("detached at 0123456789ab"));
        let env = Environment::gather(&Roots::new(base.join("repo"), Vec::new()));
        let text = env.render(&Roots::new(base.join("repo"), Vec::new()));
        assert!(text.contains("branch feature/x") && text.contains("Today's date: 20"), "{text}");
        assert!(text.contains("Operating system: ") && text.contains("Commands run with: "), "{text}");
        let _ = std::fs::remove_dir_all(base);
    }
}
