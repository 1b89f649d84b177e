//! `delegate`: hand a self-contained job to a subagent, a child session with its own model
//! context. Only the spec, the arguments and the card live here: running a child needs the
//! engine (a session, a turn, the store), so the turn runs the call itself
//! (`agent::subagent`), and [`Tool::run`] is never reached for it.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::ToolKind;
use crate::provider::ToolSpec;

pub const NAME: &str = "delegate";

/// Longest `description` shown as the subagent's title.
const TITLE_CHARS: usize = 80;

/// The mode a subagent runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
pub enum SubagentMode {
    /// Reads and searches only (the default: a subagent cannot change anything).
    #[default]
    #[serde(rename = "read-only")]
    ReadOnly,
    /// The parent session's mode at the time of the call (its edits and commands are asked
    /// for, or allowed, exactly as the parent's would be).
    #[serde(rename = "parent")]
    Parent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// A short name for the job, shown as the subagent's title.
    pub description: String,
    /// Everything the subagent needs to know: it sees nothing of this conversation.
    pub prompt: String,
    #[serde(default)]
    pub mode: SubagentMode,
}

impl Args {
    pub fn parse(args: &Value) -> Result<Self, ToolError> {
        let args: Args = parse_args(NAME, args)?;
        let bad = |reason: &str| ToolError::Arguments { tool: NAME.into(), reason: reason.into() };
        if args.description.trim().is_empty() {
            return Err(bad("description: must not be empty"));
        }
        if args.prompt.trim().is_empty() {
            return Err(bad("prompt: must not be empty"));
        }
        Ok(args)
    }

    /// The subagent's title: the description's first line, at most 80 characters.
    pub fn title(&self) -> String {
        let line = self.description.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("Subagent");
        let mut title: String = line.chars().take(TITLE_CHARS).collect();
        if line.chars().count() > TITLE_CHARS {
            title.push('…');
        }
        title
    }
}

pub struct Delegate;

impl Tool for Delegate {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            NAME,
            "Hand a self-contained job to a subagent: a separate agent with its own, empty context that works in \
             the same folders and returns one final answer, which becomes this call's result. Use it for work that \
             would flood your context (research a question across the code, review a diff, explore part of the \
             repository) or for focused changes. The subagent sees nothing of this conversation: `prompt` must say \
             everything it needs (goal, paths, constraints, what to report). Several delegate calls in one answer \
             run at the same time. By default the subagent may only read and search (`mode: \"read-only\"`); \
             `mode: \"parent\"` gives it this session's permission mode, for changes.",
            json!({
                "type": "object",
                "properties": {
                    "description": { "type": "string", "description": "A short title for the job (3-8 words)" },
                    "prompt": { "type": "string", "description": "The complete, self-contained task for the subagent" },
                    "mode": {
                        "type": "string",
                        "enum": ["read-only", "parent"],
                        "description": "read-only (default): reads and searches only; parent: this session's mode"
                    }
                },
                "required": ["description", "prompt"],
                "additionalProperties": false
            }),
        )
    }

    fn announce(&self, args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        let args = Args::parse(args)?;
        // Starting a subagent changes nothing: every call it makes is asked for on its own.
        Ok(Announce {
            kind: ToolKind::Think,
            title: format!("Subagent: {}", args.title()),
            locations: Vec::new(),
            needs: Needs::Nothing,
        })
    }

    fn run<'a>(&'a self, _args: &'a Value, _cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        // The turn runs delegate calls itself; reaching this is a bug, reported as a failed call.
        Box::pin(async { Err(ToolError::Failed("delegate runs only inside a prompt turn".into())) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_default_to_read_only_and_are_checked() {
        let a = Args::parse(&json!({ "description": "Look around", "prompt": "List the files" })).expect("args");
        assert_eq!(a.mode, SubagentMode::ReadOnly);
        let a = Args::parse(&json!({ "description": "x", "prompt": "y", "mode": "parent" })).expect("args");
        assert_eq!(a.mode, SubagentMode::Parent);
        assert!(Args::parse(&json!({ "description": "x", "prompt": "y", "mode": "full" })).is_err());
        assert!(Args::parse(&json!({ "description": " ", "prompt": "y" })).is_err());
        assert!(Args::parse(&json!({ "prompt": "y" })).is_err());
        let long = Args::parse(&json!({ "description": "d".repeat(100), "prompt": "y" })).expect("args");
        assert_eq!(long.title().chars().count(), 81);
    }
}
