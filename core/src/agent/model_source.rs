//! Which endpoint and models a session talks to: the configured provider, or a local Ollama
//! found by a short probe at `session/new` (never at `initialize`, which must stay instant).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;

use crate::agent::error::AgentError;
use crate::config::Config;
use crate::provider::Endpoint;
use crate::provider::discovery::{list_models, probe_ollama};

/// A usable endpoint (which carries its provider kind) plus the models offered in the
/// session's model picker.
#[derive(Debug)]
pub struct ModelSource {
    pub endpoint: Endpoint,
    pub models: Vec<String>,
    pub default_model: String,
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
                let (models, default_model) = match &p.model {
                    Some(m) => (p.models.clone(), m.clone()),
                    None => {
                        let models = list_models(http, &endpoint, Duration::from_secs(10)).await?;
                        let first = models[0].clone();
                        (models, first)
                    }
                };
                Ok(ModelSource { endpoint, models, default_model })
            }
            None => match probe_ollama(http, &config.ollama_url).await {
                Some((endpoint, models)) => {
                    let default_model = models[0].clone();
                    tracing::info!(model = %default_model, "using local Ollama");
                    Ok(ModelSource { endpoint, models, default_model })
                }
                None => Err(AgentError::AuthRequired(config.how_to_configure())),
            },
        }
    }
}
