//! Anthropic Messages API with streaming (SSE): the request body ([`body`]: the history turned
//! into alternating user/assistant content blocks) and the stream decoder ([`decode`]). Here:
//! what every request carries, and which models think. Sending, retries and the stream itself
//! are shared ([`super::request`]).

mod body;
mod decode;

pub(super) use body::request_body;
pub(super) use decode::Decoder;

/// The `anthropic-version` header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// The thought levels offered for models with extended thinking: (id, name, budget_tokens).
/// Anthropic's minimum budget is 1024; `max_tokens` is raised above the budget per request.
pub const THOUGHT_LEVELS: &[(&str, &str, u32)] =
    &[("off", "Off", 0), ("low", "Low", 2048), ("medium", "Medium", 8192), ("high", "High", 24576)];

/// The thinking budget of a thought level id (`None`: not a level).
pub fn thinking_budget(level: &str) -> Option<u32> {
    THOUGHT_LEVELS.iter().find(|(id, ..)| *id == level).map(|(.., budget)| *budget)
}

/// Whether `model` supports extended thinking. Anthropic has no capability endpoint, so this
/// goes by name: Claude 3.7 Sonnet, and every Sonnet/Opus/Haiku of generation 4 or later
/// (`claude-sonnet-4-…`, `claude-opus-4-1`, `claude-haiku-4-5`, a future `claude-sonnet-5`).
/// Older models (`claude-3-5-sonnet-…`, `claude-3-haiku-…`) reject the `thinking` field.
pub fn supports_thinking(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    if m.contains("claude-3-7") {
        return true;
    }
    ["claude-sonnet-", "claude-opus-", "claude-haiku-"].iter().any(|family| {
        m.find(family)
            .map(|i| &m[i + family.len()..])
            .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>())
            .and_then(|generation| generation.parse::<u32>().ok())
            .is_some_and(|generation| generation >= 4)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_models_by_name() {
        for m in [
            "claude-3-7-sonnet-20250219",
            "claude-sonnet-4-20250514",
            "claude-opus-4-1",
            "claude-haiku-4-5",
            "claude-sonnet-5",
        ] {
            assert!(supports_thinking(m), "{m}");
        }
        for m in ["claude-3-5-sonnet-20241022", "claude-3-haiku-20240307", "claude-3-opus-latest", "gpt-4o"] {
            assert!(!supports_thinking(m), "{m}");
        }
    }
}
