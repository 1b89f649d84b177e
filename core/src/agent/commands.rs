//! Slash commands, advertised with `available_commands_update`. They arrive as prompt text
//! (`/review focus on tests`), as the protocol says; `/init` and `/review` become instructions
//! for the model, `/compact` is handled by the agent itself.

use crate::event::Command as Offered;

pub fn available() -> Vec<Offered> {
    vec![
        Offered { name: "compact", description: "Summarize the conversation so far to free context", hint: None },
        Offered {
            name: "init",
            description: "Write an AGENTS.md with instructions for agents working on this project",
            hint: None,
        },
        Offered { name: "review", description: "Review the uncommitted changes", hint: Some("what to focus on") },
    ]
}

pub enum Command {
    Compact,
    /// A prompt for the model in place of the command.
    Prompt(String),
}

/// Recognizes a slash command at the start of the prompt text.
pub fn parse(text: &str) -> Option<Command> {
    let text = text.trim_start();
    let rest = text.strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    match name {
        "compact" => Some(Command::Compact),
        "init" => Some(Command::Prompt(format!(
            "Create or update AGENTS.md in the working directory: explore the project (layout, build and test \
             commands, conventions) and write concise instructions for coding agents working on it.{}",
            if args.is_empty() { String::new() } else { format!(" Also: {args}") }
        ))),
        "review" => Some(Command::Prompt(format!(
            "Review the uncommitted changes: run `git status` and `git diff` (and `git diff --staged`), read what \
             you need around them, and report bugs, risks and improvements, most important first.{}",
            if args.is_empty() { String::new() } else { format!(" Focus on: {args}") }
        ))),
        _ => None,
    }
}
