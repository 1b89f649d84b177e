//! Which endpoint and models a session talks to: the configured provider, or a local Ollama
//! found by a short probe at `session/new` (never at `initialize`, which must stay instant);
//! and what each of those models is (`catalog::ModelInfo`, with the windows servers report).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;

use crate::agent::error::AgentError;
use crate::catalog::{ModelInfo, Overrides, discovery};
use crate::config::Config;
use crate::provider::Endpoint;
use crate::provider::discovery::{Listed, list_models, probe_ollama};

/// A usable endpoint (which carries its provider kind) plus the models offered in the
/// session's model picker.
#[derive(Debug)]
pub struct ModelSource {
    pub endpoint: Endpoint,
    pub models: Vec<String>,
    pub default_model: String,
    /// The config's word on models, over the catalog.
    overrides: Overrides,
    /// Windows the server reported, by model (`None`: asked, and it did not say).
    windows: std::sync::Mutex<HashMap<String, Option<u64>>>,
}

impl ModelSource {
    fn new(endpoint: Endpoint, models: Vec<String>, default_model: String, config: &Config) -> Self {
        Self { endpoint, models, default_model, overrides: Overrides::of(config), windows: Default::default() }
    }

    /// A source whose models were listed by the server: the windows the listing states count.
    fn listed(endpoint: Endpoint, listed: Vec<Listed>, config: &Config) -> Self {
        let models: Vec<String> = listed.iter().map(|m| m.id.clone()).collect();
        let default_model = models.first().cloned().unwrap_or_default();
        let source = Self::new(endpoint, models, default_model, config);
        source.windows_mut().extend(listed.into_iter().filter(|m| m.window.is_some()).map(|m| (m.id, m.window)));
        source
    }

    fn windows_mut(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<u64>>> {
        self.windows.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What Corvid knows of `model` now (catalog, reported window, config).
    pub fn model_info(&self, model: &str) -> ModelInfo {
        let discovered = self.windows_mut().get(model).copied().flatten();
        ModelInfo::resolve(model, self.endpoint.kind, &self.overrides, discovered)
    }

    /// [`Self::model_info`], after asking the server for the window once per model when
    /// nothing configured one (a local llama.cpp or Ollama, OpenRouter: `catalog::discovery`).
    pub async fn discover(&self, http: &reqwest::Client, model: &str) -> ModelInfo {
        let known = self.model_info(model);
        let asked = self.windows_mut().contains_key(model);
        if asked || known.window_source == crate::catalog::WindowSource::Config {
            return known;
        }
        let window = discovery::probe(http, &self.endpoint, model).await;
        if let Some(window) = window {
            tracing::info!(model, window, "the model server reported its context window");
        }
        self.windows_mut().insert(model.to_string(), window);
        self.model_info(model)
    }
}

/// Resolves the model source once and remembers a success.
pub struct ModelSourceResolver {
    /// Per agent alias (`None`: the plain configuration).
    cached: Mutex<std::collections::HashMap<Option<String>, Arc<ModelSource>>>,
}

impl ModelSourceResolver {
    pub fn new() -> Self {
        Self { cached: Mutex::new(Default::default()) }
    }

    /// Forgets a previous resolution (after `authenticate`, the user may have started Ollama).
    pub async fn reset(&self) {
        self.cached.lock().await.clear();
    }

    /// `agent`: the session's alias and profile; its provider overrides apply.
    pub async fn resolve(
        &self,
        config: &Config,
        http: &reqwest::Client,
        agent: Option<&(String, crate::config::AgentProfile)>,
    ) -> Result<Arc<ModelSource>, AgentError> {
        let key = agent.map(|(alias, _)| alias.clone());
        let mut cached = self.cached.lock().await;
        if let Some(source) = cached.get(&key) {
            return Ok(source.clone());
        }
        let source = match agent {
            Some((_, profile)) => Self::discover(&config.for_agent(profile), http).await?,
            None => Self::discover(config, http).await?,
        };
        let source = Arc::new(source);
        cached.insert(key, source.clone());
        Ok(source)
    }

    async fn discover(config: &Config, http: &reqwest::Client) -> Result<ModelSource, AgentError> {
        match &config.provider {
            Some(p) => {
                let endpoint = Endpoint { kind: p.kind, base_url: p.base_url.clone(), api_key: p.api_key.clone() };
                Ok(match &p.model {
                    Some(m) => ModelSource::new(endpoint, p.models.clone(), m.clone(), config),
                    None => {
                        let listed = list_models(http, &endpoint, Duration::from_secs(10)).await?;
                        ModelSource::listed(endpoint, listed, config)
                    }
                })
            }
            None => match probe_ollama(http, &config.ollama_url).await {
                Some((endpoint, listed)) => {
                    let source = ModelSource::listed(endpoint, listed, config);
                    tracing::info!(model = %source.default_model, "using local Ollama");
                    Ok(source)
                }
                None => Err(AgentError::AuthRequired(config.how_to_configure())),
            },
        }
    }
}
