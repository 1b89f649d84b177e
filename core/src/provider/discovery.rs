//! Finding a model: listing an endpoint's models, and probing for a local Ollama.

use std::time::Duration;

use serde::Deserialize;

use super::{Endpoint, ProviderError, ProviderKind};

#[derive(Deserialize)]
struct ModelList {
    #[serde(default)]
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
}

/// `GET {base}/models`: the OpenAI-compatible model list; Anthropic's has the same
/// `data[].id` shape (its first page, newest models first, is enough for a picker).
pub async fn list_models(
    http: &reqwest::Client,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<Vec<String>, ProviderError> {
    let url = endpoint.url("models");
    let fail = |reason: String| ProviderError::ModelList { url: url.clone(), reason };
    let resp = endpoint.authorize(http.get(&url)).timeout(timeout).send().await.map_err(|e| fail(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(fail(format!("HTTP {}", resp.status())));
    }
    let list: ModelList = resp.json().await.map_err(|e| fail(e.to_string()))?;
    let models: Vec<String> = list.data.into_iter().map(|m| m.id).collect();
    if models.is_empty() {
        return Err(ProviderError::NoModels { url: endpoint.base_url.clone() });
    }
    Ok(models)
}

/// A short probe for a local Ollama (its OpenAI-compatible API under `/v1`).
/// `None` when nothing usable answers.
pub async fn probe_ollama(http: &reqwest::Client, ollama_url: &str) -> Option<(Endpoint, Vec<String>)> {
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
