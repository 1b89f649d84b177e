use super::*;
use crate::config::{ModelOverride, Prices};

fn info(model: &str, kind: ProviderKind) -> ModelInfo {
    ModelInfo::resolve(model, kind, &Overrides::default(), None)
}

#[test]
fn the_data_file_parses_and_every_entry_is_sane() {
    assert!(entries().len() > 50, "{} entries", entries().len());
    for e in entries() {
        assert!(e.window >= 4096 && e.output >= 1024, "{}", e.id);
        assert!(u64::from(e.output) <= e.window, "{}", e.id);
        assert!(e.reasoning != Reasoning::Effort || !e.efforts.is_empty(), "{} names its efforts", e.id);
    }
}

#[test]
fn dated_prefixed_and_tagged_ids_find_their_entry() {
    let cases = [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("us.anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("claude-sonnet-5", "claude"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/gpt-4.1", "gpt-4.1"),
        ("gpt-5-codex", "gpt-5-codex"),
        ("gpt-5.1-codex-mini", "gpt-5.1-codex-mini"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("google/gemini-2.5-flash-lite-preview", "gemini-2.5-flash-lite"),
        ("qwen2.5-coder:32b", "qwen2.5-coder"),
        ("deepseek/deepseek-chat-v3.1", "deepseek-chat"),
        ("llama3.1:8b", "llama3.1"),
    ];
    for (model, entry) in cases {
        assert_eq!(lookup(model).map(|e| e.id.as_str()), Some(entry), "{model}");
    }
    assert!(lookup("fake-model").is_none());
    assert!(lookup("gpt-4o").is_some() && lookup("gpt-4").is_none(), "gpt-4 is not gpt-4o");
}

#[test]
fn lookups_give_windows_outputs_images_reasoning_and_prices() {
    let sonnet = info("claude-sonnet-4-5", ProviderKind::Anthropic);
    assert_eq!((sonnet.context_window, sonnet.max_output_tokens), (200_000, 64_000));
    assert!(sonnet.images && sonnet.takes_thinking_budget(ProviderKind::Anthropic));
    assert_eq!(sonnet.family, Family::Claude);
    let prices = sonnet.prices.expect("prices");
    assert_eq!((prices.input_per_mtok, prices.cache_read_per_mtok), (3.0, Some(0.3)));
    assert!(!info("claude-3-5-haiku-latest", ProviderKind::Anthropic).takes_thinking_budget(ProviderKind::Anthropic));
    let codex = info("gpt-5-codex", ProviderKind::OpenAi);
    assert!(codex.responses_only && codex.reasoning == Reasoning::Effort && codex.family == Family::Gpt);
    assert!(!info("o3-mini", ProviderKind::OpenAi).images);
    assert_eq!(info("gpt-4o", ProviderKind::OpenAi).prices.and_then(|p| p.cache_write_per_mtok), None);
    // Unknown models: Anthropic's are Claude; elsewhere only the name's family is guessed.
    let unknown = info("fake-model", ProviderKind::OpenAi);
    assert_eq!((unknown.context_window, unknown.window_source), (128_000, WindowSource::Assumed));
    assert!(!unknown.images && unknown.prices.is_none() && unknown.family == Family::Open);
    let unknown_claude = info("fake-model", ProviderKind::Anthropic);
    assert!(unknown_claude.images && unknown_claude.context_window == 200_000);
    assert_eq!(info("my-gpt-finetune", ProviderKind::OpenAi).family, Family::Gpt);
}

#[test]
fn the_server_then_the_config_then_the_model_section_override_the_catalog() {
    let mut config = Overrides::default();
    let discovered = ModelInfo::resolve("qwen2.5-coder:7b", ProviderKind::OpenAi, &config, Some(8192));
    assert_eq!((discovered.context_window, discovered.window_source), (8192, WindowSource::Server));
    config.context_window = Some(50_000);
    config.max_output_tokens = Some(4096);
    let global = ModelInfo::resolve("qwen2.5-coder:7b", ProviderKind::OpenAi, &config, Some(8192));
    assert_eq!((global.context_window, global.max_output_tokens), (50_000, 4096));
    assert_eq!(global.window_source, WindowSource::Config);
    let prices = Prices {
        input_per_mtok: 1.0,
        output_per_mtok: 2.0,
        cache_write_per_mtok: None,
        cache_read_per_mtok: Some(0.1),
        currency: "EUR".into(),
    };
    config.models.insert(
        "qwen2.5-coder".into(),
        ModelOverride {
            context_window: Some(12_000),
            images: Some(true),
            reasoning: Some(Reasoning::Always),
            prices: Some(prices.clone()),
            ..ModelOverride::default()
        },
    );
    let section = ModelInfo::resolve("qwen2.5-coder:7b", ProviderKind::OpenAi, &config, Some(8192));
    assert_eq!(section.context_window, 12_000);
    assert!(section.images && section.reasoning == Reasoning::Always);
    assert_eq!(section.prices, Some(prices));
    assert_eq!(section.max_output_tokens, 4096, "what the section leaves unset stays");
    let other = ModelInfo::resolve("gpt-4o", ProviderKind::OpenAi, &config, None);
    assert_eq!(other.context_window, 50_000, "another model's section does not apply");
}

#[test]
fn thinking_is_offered_for_the_claude_models_that_take_a_budget() {
    let thinks = |m: &str| info(m, ProviderKind::Anthropic).takes_thinking_budget(ProviderKind::Anthropic);
    for m in [
        "claude-3-7-sonnet-20250219",
        "claude-sonnet-4-20250514",
        "claude-opus-4-1",
        "claude-haiku-4-5",
        "claude-sonnet-5",
    ] {
        assert!(thinks(m), "{m}");
    }
    for m in ["claude-3-5-sonnet-20241022", "claude-3-haiku-20240307", "claude-3-opus-latest", "gpt-4o", "fake-model"] {
        assert!(!thinks(m), "{m}");
    }
    assert!(!info("claude-sonnet-4-5", ProviderKind::OpenAi).takes_thinking_budget(ProviderKind::OpenAi));
}

#[test]
fn efforts_follow_the_thought_level_within_what_the_model_accepts() {
    let codex = info("gpt-5-codex", ProviderKind::OpenAiResponses);
    assert!(codex.responses_only);
    assert!(codex.takes_effort(ProviderKind::OpenAiResponses, false));
    assert!(!codex.takes_effort(ProviderKind::OpenAi, false), "a Chat Completions server of unknown kind gets none");
    assert_eq!(
        ["off", "low", "medium", "high"].map(|l| codex.effort_for(l)),
        [Some("low"), Some("low"), Some("medium"), Some("high")]
    );
    let mini = info("gpt-5.1-codex-mini", ProviderKind::OpenAiResponses);
    assert_eq!(
        ["off", "low", "high"].map(|l| mini.effort_for(l)),
        [Some("medium"), Some("medium"), Some("high")],
        "low is not accepted: the next above it"
    );
    let gpt5 = info("gpt-5", ProviderKind::OpenAi);
    assert_eq!(gpt5.effort_for("off"), Some("minimal"));
    assert!(gpt5.takes_effort(ProviderKind::OpenAi, true), "OpenAI's own Chat Completions takes reasoning_effort");
    assert_eq!(info("gpt-4o", ProviderKind::OpenAi).effort_for("high"), None, "no efforts, no effort");
}

#[test]
fn codex_models_speak_responses_on_openai_s_own_api_only() {
    use crate::provider::{ChatParams, Endpoint};
    let params = |responses_only| ChatParams {
        model: "m",
        messages: &[],
        tools: &[],
        thinking_budget: 0,
        max_output_tokens: 1,
        images: false,
        cache_key: None,
        claude: false,
        send_reasoning: false,
        effort: None,
        responses_only,
    };
    let endpoint = |base: &str| Endpoint { kind: ProviderKind::OpenAi, base_url: base.into(), api_key: None };
    assert_eq!(endpoint("https://api.openai.com/v1").wire_for(&params(true)), ProviderKind::OpenAiResponses);
    assert_eq!(endpoint("https://api.openai.com/v1").wire_for(&params(false)), ProviderKind::OpenAi);
    assert_eq!(
        endpoint("https://openrouter.ai/api/v1").wire_for(&params(true)),
        ProviderKind::OpenAi,
        "a proxy keeps its protocol"
    );
}
