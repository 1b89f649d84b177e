//! Finding a model: listing an endpoint's models, and probing for a local Ollama.

use std::time::Duration;

use serde::Deserialize;

use super::{Endpoint, ProviderError, ProviderKind};

#[derive(Deserialize)]
struct ModelList {
    #[serde(default)]
    data: Vec<serde_json::Value>,
}

/// One model a server lists, and its context window if the listing states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub id: String,
    pub window: Option<u64>,
}

/// The window a `/models` listing's entry states, if it states one: OpenRouter's
/// `context_length` (also under `top_provider`), vLLM's `max_model_len`, and the other names
/// servers use.
pub fn window_in_listing(entry: &serde_json::Value) -> Option<u64> {
    use serde_json::Value;
    ["context_length", "max_model_len", "context_window", "max_context_length"]
        .iter()
        .find_map(|key| entry.get(*key).and_then(Value::as_u64))
        .or_else(|| entry.pointer("/top_provider/context_length").and_then(Value::as_u64))
        .filter(|w| *w > 0)
}

/// `GET {base}/models`: the OpenAI-compatible model list; Anthropic's has the same
/// `data[].id` shape (its first page, newest models first, is enough for a picker).
pub async fn list_models(
    http: &reqwest::Client,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<Vec<Listed>, ProviderError> {
    let url = endpoint.url("models");
    let fail = |reason: String| ProviderError::ModelList { url: url.clone(), reason };
    let resp = endpoint.authorize(http.get(&url)).timeout(timeout).send().await.map_err(|e| fail(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(fail(format!("HTTP {}", resp.status())));
    }
    let list: ModelList = resp.json().await.map_err(|e| fail(e.to_string()))?;
    let models: Vec<Listed> = list
        .data
        .iter()
        .filter_map(|m| Some(Listed { id: m.get("id")?.as_str()?.to_string(), window: window_in_listing(m) }))
        .collect();
    if models.is_empty() {
        return Err(ProviderError::NoModels { url: endpoint.base_url.clone() });
    }
    Ok(models)
}

/// A short probe for a local Ollama (its OpenAI-compatible API under `/v1`).
/// `None` when nothing usable answers.
pub async fn probe_ollama(http: &reqwest::Client, ollama_url: &str) -> Option<(Endpoint, Vec<Listed>)> {
    let endpoint = Endpoint {
        kind: ProviderKind::OpenAi,
        base_url: format!("{}/v1", ollama_url.trim_end_matches('/')),
        api_key: None,
    };
    match list_models(http, &endpoint, Duration::from_millis(800)).await {
        Ok(models) => Some((endpoint, models)),
        Err(e) => {
            tracing::info!(error = %e, "no local Ollama");
            None
        }
    }
}
