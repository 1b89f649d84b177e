//! Matching a model's name against catalog ids (and config keys): the provider prefix left
//! out (`anthropic/claude-sonnet-4.5`, `models/gemini-2.5-pro`, `us.anthropic.claude-…`),
//! dots read as dashes (OpenRouter writes `claude-sonnet-4.5`, Anthropic `claude-sonnet-4-5`),
//! and the longest id that begins the name at a word boundary wins, so `gpt-4o-mini-2024-07-18`
//! is `gpt-4o-mini`, not `gpt-4o`, and `qwen2.5-coder:32b` is `qwen2.5-coder`.

use super::Family;

/// `name` as matching reads it: lower case, without what precedes the last `/`, without a
/// cloud's `vendor.` prefix, with `.` and `@` as `-`.
fn normalize(name: &str) -> String {
    let name = name.trim().to_ascii_lowercase();
    let name = name.rsplit('/').next().unwrap_or(&name).to_string();
    // Bedrock's `anthropic.claude-…` and `us.anthropic.claude-…`: the vendor before the model.
    let name = match name.rfind("anthropic.").or_else(|| name.rfind("meta.")).or_else(|| name.rfind("mistral.")) {
        Some(at) => name[at..].split_once('.').map_or(name.clone(), |(_, rest)| rest.to_string()),
        None => name,
    };
    name.replace(['.', '@'], "-")
}

/// The index of the longest of `ids` that begins `model` and ends where a word of it ends.
pub(super) fn best<'a>(model: &str, ids: impl Iterator<Item = &'a str>) -> Option<usize> {
    let model = normalize(model);
    let mut best: Option<(usize, usize)> = None;
    for (index, id) in ids.enumerate() {
        let id = normalize(id);
        let Some(rest) = model.strip_prefix(&id) else { continue };
        let at_boundary = rest.is_empty() || rest.starts_with(['-', ':', '_']);
        if at_boundary && best.is_none_or(|(_, len)| id.len() > len) {
            best = Some((index, id.len()));
        }
    }
    best.map(|(index, _)| index)
}

/// The family a name the catalog does not know suggests.
pub(super) fn family_by_name(model: &str) -> Family {
    let m = normalize(model);
    if m.contains("claude") {
        Family::Claude
    } else if m.contains("gpt") || m.contains("codex") || ["o1", "o3", "o4"].iter().any(|o| m.starts_with(o)) {
        Family::Gpt
    } else if m.contains("gemini") {
        Family::Gemini
    } else {
        Family::Open
    }
}
