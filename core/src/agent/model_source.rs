//! Which endpoint and models a session talks to: the configured provider, or a local Ollama
//! found by a short probe at `session/new` (never at `initialize`, which must stay instant);
//! and what each of those models is (`catalog::ModelInfo`, with the windows servers report).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// When a probe last found the server unable to answer, by model (asked again later).
    unanswered: std::sync::Mutex<HashMap<String, Instant>>,
}

impl ModelSource {
    fn new(endpoint: Endpoint, models: Vec<String>, default_model: String, config: &Config) -> Self {
        Self {
            endpoint,
            models,
            default_model,
            overrides: Overrides::of(config),
            windows: Default::default(),
            unanswered: Default::default(),
        }
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
    /// A server that could not answer (still loading its model, down) is asked again on a
    /// later request, at most every [`REPROBE_AFTER`], so its window is not lost for the
    /// process's life.
    pub async fn discover(&self, http: &reqwest::Client, model: &str) -> ModelInfo {
        let known = self.model_info(model);
        let asked = self.windows_mut().contains_key(model);
        let waiting = self.unanswered_mut().get(model).is_some_and(|at| at.elapsed() < REPROBE_AFTER);
        if asked || waiting || known.window_source == crate::catalog::WindowSource::Config {
            return known;
        }
        let window = match discovery::probe(http, &self.endpoint, model).await {
            discovery::Probe::Window(window) => {
                tracing::info!(model, window, "the model server reported its context window");
                Some(window)
            }
            discovery::Probe::Silent => None,
            discovery::Probe::Unavailable => {
                tracing::debug!(model, "the model server could not say its window now; asking again later");
                self.unanswered_mut().insert(model.to_string(), Instant::now());
                return known;
            }
        };
        self.unanswered_mut().remove(model);
        self.windows_mut().insert(model.to_string(), window);
        self.model_info(model)
    }

    fn unanswered_mut(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.unanswered.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How long after a window probe the server could not answer it is asked again.
const REPROBE_AFTER: Duration = Duration::from_secs(5);

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A llama.cpp stand-in on loopback: 503 "Loading model" to everything while `loading`,
    /// then `/props` with an 8192-token window (and 404 to the rest). Counts the requests.
    async fn llama_stand_in(loading: Arc<AtomicBool>, hits: Arc<std::sync::atomic::AtomicUsize>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (loading, hits) = (loading.clone(), hits.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    hits.fetch_add(1, Ordering::SeqCst);
                    let head = String::from_utf8_lossy(&buf[..n]);
                    let (status, body) = if loading.load(Ordering::SeqCst) {
                        ("503 Service Unavailable", r#"{"error":{"code":503,"message":"Loading model"}}"#)
                    } else if head.starts_with("GET /props ") {
                        ("200 OK", r#"{"default_generation_settings":{"n_ctx":8192}}"#)
                    } else {
                        ("404 Not Found", r#"{"error":"not found"}"#)
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        format!("http://{addr}/v1")
    }

    #[tokio::test]
    async fn a_server_still_loading_is_asked_for_its_window_again() {
        let loading = Arc::new(AtomicBool::new(true));
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let base_url = llama_stand_in(loading.clone(), hits.clone()).await;
        let endpoint = Endpoint { kind: ProviderKind::OpenAi, base_url, api_key: None };
        let source = ModelSource::new(endpoint, vec!["local".into()], "local".into(), &Config::default());
        let http = crate::http_client();

        let before = source.discover(&http, "local").await;
        assert_ne!(before.context_window, 8192, "nothing reported while the model loads");
        assert_eq!(hits.load(Ordering::SeqCst), 2, "/props and /api/show were asked");
        source.discover(&http, "local").await;
        assert_eq!(hits.load(Ordering::SeqCst), 2, "not asked again at once");

        loading.store(false, Ordering::SeqCst);
        // As if the last probe were older than REPROBE_AFTER.
        source.unanswered_mut().insert("local".into(), Instant::now() - REPROBE_AFTER);
        assert_eq!(source.discover(&http, "local").await.context_window, 8192, "asked again once loaded");
        let asked = hits.load(Ordering::SeqCst);
        assert_eq!(source.discover(&http, "local").await.context_window, 8192);
        assert_eq!(hits.load(Ordering::SeqCst), asked, "a final answer is kept");
    }

    #[tokio::test]
    async fn a_server_that_does_not_say_is_not_asked_again() {
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Not loading, and /props answered 404 as well: a server that has neither endpoint.
        let base_url = llama_stand_in(Arc::new(AtomicBool::new(false)), hits.clone()).await;
        let endpoint =
            Endpoint { kind: ProviderKind::OpenAi, base_url: base_url.replace("/v1", "/other/v1"), api_key: None };
        let source = ModelSource::new(endpoint, vec!["local".into()], "local".into(), &Config::default());
        let http = crate::http_client();
        source.discover(&http, "local").await;
        let asked = hits.load(Ordering::SeqCst);
        assert_eq!(asked, 2);
        source.unanswered_mut().clear();
        source.discover(&http, "local").await;
        assert_eq!(hits.load(Ordering::SeqCst), asked, "a silent server's answer is final");
    }
}
