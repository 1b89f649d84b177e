//! The system prompt: who Corvid is and how it works (`guidance`, per model family), where it
//! works (`environment`, gathered once per session), the session's mode and what it allows,
//! and the instruction files (`files`): the user's own first, then the project's from the
//! repository root down to the working directory. The order puts what never changes first,
//! so the request prefix stays the same across a session's requests (provider caching).

pub mod environment;
pub mod files;
mod guidance;

use crate::catalog::ModelInfo;
use crate::roots::Roots;
use environment::Environment;
use files::InstructionFile;

/// Windows at most this large get the short guidance (small local models).
const SMALL_WINDOW: u64 = 16_384;

/// What the system prompt is made of.
pub struct Parts<'a> {
    pub roots: &'a Roots,
    pub model: &'a ModelInfo,
    pub environment: &'a Environment,
    /// The session's mode and what it allows (`Mode::description`).
    pub mode: String,
    pub user_file: Option<InstructionFile>,
}

/// The system prompt for a session.
pub fn system_prompt(parts: Parts<'_>) -> String {
    let small = parts.model.context_window <= SMALL_WINDOW;
    let mut prompt = guidance::text(parts.model.family, small);
    prompt.push_str("\n\n");
    prompt.push_str(&parts.environment.render(parts.roots));
    prompt.push_str(&format!("- Permission mode: {}\n", parts.mode));
    for file in parts.user_file.into_iter().chain(files::chain(parts.roots.cwd())) {
        prompt.push_str(&format!("\n# Instructions from {}\n\n{}\n", file.path.display(), file.text));
    }
    prompt.trim_end().to_string()
}

/// The instruction files of folders a tool reached, for the model to read with its result.
pub fn attach(found: &[InstructionFile]) -> String {
    let mut text = String::new();
    for file in found {
        let folder = file.path.parent().map(|p| p.display().to_string()).unwrap_or_default();
        text.push_str(&format!(
            "\n\n[Instructions for files under {folder}, from {} (they apply beneath that folder and win over outer ones):]\n{}",
            file.path.display(),
            file.text
        ));
    }
    text
}

/// The paths of instruction files a stored tool result brought to the model (so a restored
/// session does not bring them again).
pub fn attached_in(result: &str) -> impl Iterator<Item = std::path::PathBuf> + '_ {
    result.match_indices("[Instructions for files under ").filter_map(|(at, _)| {
        let rest = &result[at..];
        let from = rest.find(", from ")? + ", from ".len();
        let end = rest[from..].find(" (they apply")? + from;
        Some(std::path::PathBuf::from(&rest[from..end]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ModelInfo, Overrides};
    use crate::provider::ProviderKind;

    fn environment() -> Environment {
        Environment {
            os: "Linux 6.18 x86_64".into(),
            shell: "sh -c <command> (POSIX sh)".into(),
            date: "2026-12-05 (Saturday)".into(),
            time_zone: "Etc/UTC, UTC+00:00".into(),
            git: None,
        }
    }

    #[test]
    fn the_prompt_says_where_when_how_and_what_the_project_asks() {
        let base = std::env::temp_dir().join(format!("corvid-prompt-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(base.join("p")).expect("mkdir");
        std::fs::write(base.join("p/CLAUDE.md"), "use tabs").expect("write");
        let roots = Roots::new(base.join("p"), Vec::new());
        let model = ModelInfo::resolve("gpt-5", ProviderKind::OpenAi, &Overrides::default(), None);
        let env = environment();
        let user = InstructionFile { path: "/home/u/.config/corvid/AGENTS.md".into(), text: "be brief".into() };
        let prompt = system_prompt(Parts {
            roots: &roots,
            model: &model,
            environment: &env,
            mode: "Ask: asks before every edit and command".into(),
            user_file: Some(user),
        });
        for needle in [
            "Linux 6.18",
            "sh -c",
            "2026-12-05",
            "not in a git repository",
            "Permission mode: Ask",
            "Persistence",
            "path:line",
            "update_plan",
        ] {
            assert!(prompt.contains(needle), "{needle}");
        }
        let user_at = prompt.find("be brief").expect("user file");
        let project_at = prompt.find("use tabs").expect("CLAUDE.md");
        assert!(user_at < project_at, "the user's own file comes first");
        let small = ModelInfo::resolve("smollm2", ProviderKind::OpenAi, &Overrides::default(), None);
        let short = system_prompt(Parts {
            roots: &roots,
            model: &small,
            environment: &env,
            mode: "Ask".into(),
            user_file: None,
        });
        assert!(short.len() * 3 < prompt.len(), "{} vs {}", short.len(), prompt.len());
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn attached_files_are_found_again_in_stored_results() {
        let found = [InstructionFile { path: "/p/sub/AGENTS.md".into(), text: "sub rules".into() }];
        let result = format!("file text{}", attach(&found));
        assert!(result.contains("sub rules"));
        assert_eq!(attached_in(&result).collect::<Vec<_>>(), vec![std::path::PathBuf::from("/p/sub/AGENTS.md")]);
    }
}
