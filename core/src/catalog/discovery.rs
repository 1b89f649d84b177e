//! Context windows the server reports: llama.cpp's `GET /props` (`n_ctx`, what the server was
//! started with), Ollama's `POST /api/show` (`num_ctx` among the parameters, else the model's
//! trained `context_length`), and a `/models` listing's entry (OpenRouter's `context_length`,
//! vLLM's `max_model_len`). A server's own number beats the catalog's: a local model runs with
//! whatever window its server was given.
//!
//! Probed once per model and endpoint (the caller keeps a final answer; a server that could
//! not answer, e.g. llama.cpp still loading its model, is asked again), with a short timeout,
//! and only where such a server can be: plain HTTP to a loopback or private address, or
//! OpenRouter.

use std::time::Duration;

use serde_json::Value;

use crate::provider::Endpoint;
use crate::provider::discovery::window_in_listing;

/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// llama.cpp's `/props`: the slots' `n_ctx` (newer servers), or a top-level one.
pub fn window_in_props(props: &Value) -> Option<u64> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|w| *w > 0)
}

/// Ollama's `/api/show`: `num_ctx` among the model's parameters (what Ollama runs it with),
/// else `<architecture>.context_length` from its model info.
pub fn window_in_ollama_show(show: &Value) -> Option<u64> {
    let configured = show.get("parameters").and_then(Value::as_str).and_then(|params| {
        params.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u64>().ok()).flatten()
        })
    });
    let trained = show
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| info.iter().find(|(key, _)| key.ends_with(".context_length")).and_then(|(_, v)| v.as_u64()));
    configured.or(trained).filter(|w| *w > 0)
}

/// The host of a base URL (`http://127.0.0.1:8080/v1` → `127.0.0.1`).
fn host(base_url: &str) -> &str {
    let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// Whether a local model server may answer at this host: loopback, a private network, or a
/// `.local` name.
fn local(host: &str) -> bool {
    if host == "localhost" || host.ends_with(".local") || host == "::1" {
        return true;
    }
    match host.parse::<std::net::Ipv4Addr>() {
        Ok(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Err(_) => false,
    }
}

/// The server's root: the base URL without a trailing `/v1`.
fn root(base_url: &str) -> &str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// What a probe learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The server's window for the model.
    Window(u64),
    /// The server answered and did not say (or is not a server that could): final.
    Silent,
    /// The server could not answer now (not reachable, timed out, a 5xx such as llama.cpp's
    /// 503 while its model loads, a 429): worth asking again later.
    Unavailable,
}

/// Whether a probe's answer is final, or says to ask again later.
fn transient(answer: &Result<reqwest::Response, reqwest::Error>) -> bool {
    match answer {
        Err(_) => true,
        Ok(resp) => resp.status().is_server_error() || resp.status() == reqwest::StatusCode::TOO_MANY_REQUESTS,
    }
}

/// Asks the endpoint's server for `model`'s window.
pub async fn probe(http: &reqwest::Client, endpoint: &Endpoint, model: &str) -> Probe {
    let host = host(&endpoint.base_url);
    let get = |url: String| endpoint.authorize(http.get(url)).timeout(PROBE_TIMEOUT).send();
    if host.ends_with("openrouter.ai") {
        let answer = get(endpoint.url("models")).await;
        if transient(&answer) {
            return Probe::Unavailable;
        }
        let listing: Option<Value> = match answer {
            Ok(resp) => resp.json().await.ok(),
            Err(_) => None,
        };
        let entry = listing.as_ref().and_then(|l| {
            l.get("data")?.as_array()?.iter().find(|e| e.get("id").and_then(Value::as_str) == Some(model))
        });
        return entry.and_then(window_in_listing).map_or(Probe::Silent, Probe::Window);
    }
    // Local servers speak plain HTTP; a TLS endpoint on a private address is a proxy to a
    // cloud, not worth a probe.
    if !local(host) || !endpoint.base_url.starts_with("http://") {
        return Probe::Silent;
    }
    let root = root(&endpoint.base_url);
    let props = get(format!("{root}/props")).await;
    let mut unavailable = transient(&props);
    if let Ok(resp) = props
        && resp.status().is_success()
        && let Ok(props) = resp.json::<Value>().await
        && let Some(window) = window_in_props(&props)
    {
        return Probe::Window(window);
    }
    let show = http
        .post(format!("{root}/api/show"))
        .json(&serde_json::json!({ "model": model }))
        .timeout(PROBE_TIMEOUT)
        .send()
        .await;
    unavailable |= transient(&show);
    if let Ok(resp) = show
        && resp.status().is_success()
        && let Ok(show) = resp.json::<Value>().await
        && let Some(window) = window_in_ollama_show(&show)
    {
        return Probe::Window(window);
    }
    // A server that is up answers one of the two (llama.cpp /props, Ollama /api/show); a 404
    // from the other is final. Only when neither could answer is it worth asking again.
    if unavailable { Probe::Unavailable } else { Probe::Silent }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn servers_say_their_windows_their_own_way() {
        assert_eq!(window_in_props(&json!({"default_generation_settings": {"n_ctx": 8192}})), Some(8192));
        assert_eq!(window_in_props(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(window_in_props(&json!({"n_ctx": 0})), None);
        let show =
            json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384", "model_info": {"qwen2.context_length": 32768}});
        assert_eq!(window_in_ollama_show(&show), Some(16384), "the runtime setting wins");
        assert_eq!(window_in_ollama_show(&json!({"model_info": {"llama.context_length": 131072}})), Some(131072));
        assert_eq!(window_in_listing(&json!({"id": "x", "context_length": 200000})), Some(200000));
        assert_eq!(window_in_listing(&json!({"id": "x", "max_model_len": 32768})), Some(32768));
        assert_eq!(window_in_listing(&json!({"id": "x", "top_provider": {"context_length": 64000}})), Some(64000));
        assert_eq!(window_in_listing(&json!({"id": "x"})), None);
    }

    #[test]
    fn only_local_servers_and_openrouter_are_probed() {
        assert_eq!(host("http://127.0.0.1:8080/v1"), "127.0.0.1");
        assert_eq!(host("https://user:pw@openrouter.ai/api/v1"), "openrouter.ai");
        assert_eq!(host("http://[::1]:11434"), "::1");
        assert!(local("127.0.0.1") && local("192.168.1.20") && local("localhost") && local("::1"));
        assert!(!local("api.openai.com") && !local("8.8.8.8"));
        assert_eq!(root("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080");
    }
}
