//! The model catalog: what a model takes and costs (context window, longest answer, images,
//! how it reasons, parallel tool calls, prices), from a data file compiled into the binary
//! (`models.json`), matched by model id. [`ModelInfo::resolve`] layers on top of it what a
//! server reported (`discovery`) and what the user configured, so `usage_update`'s size, the
//! cost, image support, thinking support and compaction's threshold all read one answer.
//!
//! The file is parsed on first use, never on `initialize`'s path.

pub mod discovery;
mod matching;

use std::sync::OnceLock;

use serde::Deserialize;

use crate::config::{Config, ModelOverride, Prices};

/// What the user configured over the catalog: `[provider]`'s settings for every model, and
/// `[models."<id>"]` for one (a copy of those parts of the [`Config`]).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    pub images: Option<bool>,
    pub prices: Option<Prices>,
    pub models: std::collections::BTreeMap<String, ModelOverride>,
}

impl Overrides {
    pub fn of(config: &Config) -> Self {
        Self {
            context_window: config.context_window,
            max_output_tokens: config.max_output_tokens,
            images: config.images,
            prices: config.prices.clone(),
            models: config.models.clone(),
        }
    }
}
use crate::provider::ProviderKind;

/// A model family: which system prompt suits it, and what it is trained to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Claude,
    Gpt,
    Gemini,
    /// Open-weight and other models (DeepSeek, Qwen, Llama, Mistral, …).
    Open,
}

/// How a model reasons, and so what the thought-level picker offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reasoning {
    /// No reasoning, or none that can be asked for.
    #[default]
    None,
    /// Anthropic's extended thinking: a budget of tokens per request.
    Budget,
    /// An effort level (OpenAI's `reasoning_effort`, Gemini's thinking level).
    Effort,
    /// Reasons on its own, without a setting (DeepSeek R1, QwQ).
    Always,
}

/// Answer length assumed for a model the catalog does not know (Anthropic requires a bound).
const UNKNOWN_OUTPUT: u32 = 8192;
/// Context window assumed for an unknown model on an OpenAI-compatible server.
const UNKNOWN_WINDOW: u64 = 128_000;
/// Context window assumed for an unknown model on Anthropic's API (every Claude has 200k).
const UNKNOWN_ANTHROPIC_WINDOW: u64 = 200_000;

/// One catalog entry as the data file writes it.
#[derive(Debug, Deserialize)]
struct Entry {
    id: String,
    family: Family,
    window: u64,
    output: u32,
    #[serde(default)]
    images: bool,
    #[serde(default)]
    reasoning: Reasoning,
    #[serde(default)]
    efforts: Vec<String>,
    #[serde(default)]
    parallel: bool,
    /// The server wants the reasoning text back in a tool loop (`reasoning_content`).
    #[serde(default)]
    send_reasoning: bool,
    /// `"responses"`: the model answers only on OpenAI's Responses API.
    #[serde(default)]
    api: Option<String>,
    /// Per million tokens: input, output, cache write, cache read (US dollars).
    #[serde(default)]
    prices: Option<[Option<f64>; 4]>,
}

#[derive(Deserialize)]
struct File {
    models: Vec<Entry>,
}

/// The compiled-in catalog, parsed once.
fn entries() -> &'static [Entry] {
    static CATALOG: OnceLock<Vec<Entry>> = OnceLock::new();
    CATALOG.get_or_init(|| match serde_json::from_str::<File>(include_str!("models.json")) {
        Ok(file) => file.models,
        Err(e) => {
            // A unit test parses the file, so this is a build that skipped its tests.
            tracing::error!(error = %e, "the model catalog does not parse; every model is unknown");
            Vec::new()
        }
    })
}

/// The catalog entry for `model`, if any (the longest id that begins its name).
fn lookup(model: &str) -> Option<&'static Entry> {
    let index = matching::best(model, entries().iter().map(|e| e.id.as_str()))?;
    entries().get(index)
}

/// Where a model's context window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// `[models."<id>"]` or `[provider] context_window` in the config.
    Config,
    /// The server said (llama.cpp's `/props`, Ollama's `/api/show`, a `/models` listing).
    Server,
    Catalog,
    /// Nobody knows: a default.
    Assumed,
}

/// What Corvid knows of one model, everything considered.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// The catalog entry that matched, if any.
    pub entry: Option<&'static str>,
    pub family: Family,
    pub context_window: u64,
    pub window_source: WindowSource,
    /// Longest answer the model gives (Anthropic's `max_tokens` is at most this).
    pub max_output_tokens: u32,
    pub images: bool,
    pub reasoning: Reasoning,
    /// The effort levels the model accepts, lowest first (for [`Reasoning::Effort`]).
    pub efforts: Vec<String>,
    pub parallel_tools: bool,
    /// The server wants reasoning text sent back within a tool loop.
    pub send_reasoning: bool,
    /// The model answers only on OpenAI's Responses API.
    pub responses_only: bool,
    pub prices: Option<Prices>,
}

impl ModelInfo {
    /// `model` on an endpoint of `kind`: the catalog, then a window the server reported, then
    /// the config's `[provider]` settings, then its `[models."<id>"]` entry, each over the last.
    pub fn resolve(model: &str, kind: ProviderKind, config: &Overrides, discovered: Option<u64>) -> Self {
        let mut info = match lookup(model) {
            Some(entry) => Self::from_entry(entry),
            None => Self::unknown(model, kind),
        };
        if let Some(window) = discovered {
            info.context_window = window;
            info.window_source = WindowSource::Server;
        }
        // The `[provider]` section's fields, for whatever model it serves.
        info.apply(&ModelOverride {
            context_window: config.context_window,
            max_output_tokens: config.max_output_tokens,
            images: config.images,
            prices: config.prices.clone(),
            ..ModelOverride::default()
        });
        if let Some(over) =
            matching::best(model, config.models.keys().map(String::as_str)).and_then(|i| config.models.values().nth(i))
        {
            info.apply(over);
        }
        info.max_output_tokens = info.max_output_tokens.max(1);
        info
    }

    fn from_entry(e: &'static Entry) -> Self {
        let prices = e.prices.map(|[input, output, write, read]| Prices {
            input_per_mtok: input.unwrap_or(0.0),
            output_per_mtok: output.unwrap_or(0.0),
            cache_write_per_mtok: write,
            cache_read_per_mtok: read,
            currency: "USD".into(),
        });
        Self {
            entry: Some(e.id.as_str()),
            family: e.family,
            context_window: e.window,
            window_source: WindowSource::Catalog,
            max_output_tokens: e.output,
            images: e.images,
            reasoning: e.reasoning,
            efforts: e.efforts.clone(),
            parallel_tools: e.parallel,
            send_reasoning: e.send_reasoning,
            responses_only: e.api.as_deref() == Some("responses"),
            prices,
        }
    }

    /// A model the catalog does not know: Anthropic's API serves only Claude (which all take
    /// images); elsewhere nothing is assumed but the family its name suggests.
    fn unknown(model: &str, kind: ProviderKind) -> Self {
        let anthropic = kind == ProviderKind::Anthropic;
        Self {
            entry: None,
            family: if anthropic { Family::Claude } else { matching::family_by_name(model) },
            context_window: if anthropic { UNKNOWN_ANTHROPIC_WINDOW } else { UNKNOWN_WINDOW },
            window_source: WindowSource::Assumed,
            max_output_tokens: UNKNOWN_OUTPUT,
            images: anthropic,
            reasoning: Reasoning::None,
            efforts: Vec::new(),
            parallel_tools: false,
            send_reasoning: false,
            responses_only: false,
            prices: None,
        }
    }

    fn apply(&mut self, over: &ModelOverride) {
        if let Some(window) = over.context_window {
            self.context_window = window;
            self.window_source = WindowSource::Config;
        }
        if let Some(output) = over.max_output_tokens {
            self.max_output_tokens = output;
        }
        if let Some(images) = over.images {
            self.images = images;
        }
        if let Some(reasoning) = over.reasoning {
            self.reasoning = reasoning;
        }
        if let Some(parallel) = over.parallel_tool_calls {
            self.parallel_tools = parallel;
        }
        if let Some(prices) = &over.prices {
            self.prices = Some(prices.clone());
        }
    }

    /// Whether the thought-level picker sets a thinking budget: a model that takes one, on
    /// Anthropic's API.
    pub fn takes_thinking_budget(&self, kind: ProviderKind) -> bool {
        kind == ProviderKind::Anthropic && self.reasoning == Reasoning::Budget
    }

    /// Whether the thought-level picker sets a reasoning effort: a model with effort levels,
    /// spoken to where `reasoning.effort` / `reasoning_effort` is understood (`wire`: the
    /// request's protocol; `openai_own`: OpenAI's own API).
    pub fn takes_effort(&self, wire: ProviderKind, openai_own: bool) -> bool {
        self.reasoning == Reasoning::Effort
            && !self.efforts.is_empty()
            && (wire == ProviderKind::OpenAiResponses || openai_own)
    }

    /// The effort a thought level asks of this model: `off` is the lowest it accepts, another
    /// level itself if accepted, else the next accepted above it (else the highest).
    pub fn effort_for(&self, level: &str) -> Option<&str> {
        const ORDER: [&str; 6] = ["none", "minimal", "low", "medium", "high", "xhigh"];
        let rank = |e: &str| ORDER.iter().position(|o| *o == e);
        let first = self.efforts.first()?;
        if level == "off" {
            return Some(first);
        }
        let wanted = rank(level)?;
        let above = self.efforts.iter().find(|e| rank(e).is_some_and(|r| r >= wanted));
        above.or(self.efforts.last()).map(String::as_str)
    }
}

#[cfg(test)]
mod tests;
