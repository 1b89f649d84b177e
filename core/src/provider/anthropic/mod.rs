//! Anthropic Messages API with streaming (SSE): the request body ([`body`]: the history turned
//! into alternating user/assistant content blocks) and the stream decoder ([`decode`]). Here:
//! what every request carries, and the thought levels (which models think is the model
//! catalog's to say: `catalog::ModelInfo::takes_thinking_budget`). Sending, retries and the
//! stream itself are shared ([`super::request`]).

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

/// The API's root under a base URL spelled either way users copy it: with `/v1` (Corvid's
/// default, `https://api.anthropic.com/v1`) or without, as Anthropic's SDKs and
/// `ANTHROPIC_BASE_URL` take it (the SDKs add `/v1/messages`).
pub fn api_root(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match base.ends_with("/v1") {
        true => base.to_string(),
        false => format!("{base}/v1"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base_urls_with_or_without_v1_reach_the_api() {
        for base in
            ["https://api.anthropic.com/v1", "https://api.anthropic.com", "http://127.0.0.1:8088/", "http://h/v1/"]
        {
            let root = super::api_root(base);
            assert!(root.ends_with("/v1") && !root.contains("/v1/v1"), "{base} → {root}");
        }
        assert_eq!(super::api_root("https://gw.example/anthropic"), "https://gw.example/anthropic/v1");
    }
}
