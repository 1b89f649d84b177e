//! web_fetch: an HTTP(S) GET from the agent's own process (not a sandboxed command: the
//! sandbox keeps commands off the network, and this is the one way the model reads the web
//! without lifting that). It asks like a command; a URL that leads to the user's own addresses
//! (loopback, private, link-local) asks in every mode ([`address`]). Redirects are followed
//! here, at most [`MAX_REDIRECTS`], each target resolved and checked like the first; the
//! connection goes only to the addresses checked. HTML comes back as Markdown, other text as
//! it is, binary bodies are refused ([`body`]); what the model reads is capped like any
//! output (`tools::cap`, by the turn).

mod address;
mod body;

use std::time::Duration;

use futures_util::future::BoxFuture;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError, parse_args};
use crate::event::{ToolContent, ToolKind};
use crate::provider::ToolSpec;

pub const NAME: &str = "web_fetch";
/// Redirects followed before the fetch gives up.
const MAX_REDIRECTS: usize = 5;
/// One request, its body included.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Most bytes of a body read; the rest is left out (and said so).
const MAX_BODY: usize = 10 * 1024 * 1024;

#[derive(Deserialize)]
struct Args {
    url: String,
}

pub struct WebFetch;

impl Tool for WebFetch {
    fn reads_only(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        super::spec(
            NAME,
            "Fetch a URL (http or https) with GET and return its content: HTML as Markdown, other text as it is; \
             binary content is refused. Follows up to 5 redirects. For documentation, issues, API references and \
             other pages the task needs. The user may be asked first.",
            json!({"type":"object","properties":{"url":{"type":"string","description":"The absolute http(s) URL."}},"required":["url"]}),
        )
    }

    fn announce(&self, args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        let a: Args = parse_args(NAME, args)?;
        let url = parse_url(&a.url)?;
        let host = address::host_of(&url).map_err(|e| arguments(e.to_string()))?;
        let private = address::local_by_name(&url);
        Ok(Announce {
            kind: ToolKind::Fetch,
            title: format!("Fetch {url}"),
            locations: Vec::new(),
            needs: Needs::Fetch { url: url.to_string(), host, private },
        })
    }

    /// Resolves the host: a name that leads to the user's own addresses asks like one written
    /// as such. A name that does not resolve is left to the run, which says so.
    fn assess<'a>(&'a self, mut announce: Announce, cancel: &'a CancellationToken) -> BoxFuture<'a, Announce> {
        Box::pin(async move {
            let Needs::Fetch { url, private: false, .. } = &announce.needs else { return announce };
            let Ok(url) = Url::parse(url) else { return announce };
            let resolved = tokio::select! {
                () = cancel.cancelled() => return announce,
                r = address::resolve(&url) => r,
            };
            if let (Ok(target), Needs::Fetch { private, .. }) = (resolved, &mut announce.needs) {
                *private = target.local;
            }
            announce
        })
    }

    fn run<'a>(&'a self, args: &'a Value, cx: &'a ToolContext<'a>) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let a: Args = parse_args(NAME, args)?;
            let asked = parse_url(&a.url)?;
            // The one local host the user allowed (asked for this call, or an "always" rule).
            let allowed = match cx.needs {
                Needs::Fetch { host, private: true, .. } => Some(host.as_str()),
                _ => None,
            };
            let mut url = asked.clone();
            for hop in 0..=MAX_REDIRECTS {
                let response = request(&url, allowed, cx.cancel).await?;
                if response.status().is_redirection()
                    && let Some(location) = response.headers().get(reqwest::header::LOCATION)
                {
                    if hop == MAX_REDIRECTS {
                        return Err(ToolError::Failed(format!(
                            "{asked} redirected more than {MAX_REDIRECTS} times (last to {url})"
                        )));
                    }
                    let location = location.to_str().unwrap_or_default();
                    url = url.join(location).map_err(|e| {
                        ToolError::Failed(format!("{url} redirected to `{location}`, which is not a URL: {e}"))
                    })?;
                    continue;
                }
                return read(&asked, &url, response, cx.cancel).await;
            }
            Err(ToolError::Failed(format!("{asked} redirected more than {MAX_REDIRECTS} times")))
        })
    }
}

fn arguments(reason: String) -> ToolError {
    ToolError::Arguments { tool: NAME.into(), reason }
}

fn parse_url(text: &str) -> Result<Url, ToolError> {
    Url::parse(text.trim()).map_err(|e| arguments(format!("`{text}` is not an absolute URL: {e}")))
}

/// One GET of `url`, its redirects not followed, connected only to the addresses checked now.
/// A local address is refused unless it is `allowed`'s: a redirect there was never asked for.
async fn request(url: &Url, allowed: Option<&str>, cancel: &CancellationToken) -> Result<reqwest::Response, ToolError> {
    let target = tokio::select! {
        () = cancel.cancelled() => return Err(ToolError::Cancelled),
        r = address::resolve(url) => r.map_err(|e| ToolError::Failed(format!("{url}: {e}")))?,
    };
    if target.local && allowed != Some(target.host.as_str()) {
        return Err(ToolError::Failed(format!(
            "{url} leads to a local or private address ({}), which the user was not asked about. \
             Call web_fetch with that URL itself to ask.",
            target.addrs.first().map(|a| a.ip().to_string()).unwrap_or_default()
        )));
    }
    let mut builder = crate::http_client_builder().redirect(reqwest::redirect::Policy::none()).timeout(TIMEOUT);
    if let Some(name) = &target.name {
        builder = builder.resolve_to_addrs(name, &target.addrs);
    }
    let client = builder.build().map_err(|e| ToolError::Failed(format!("the HTTP client could not be built: {e}")))?;
    let send = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "text/html, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.5")
        .send();
    tokio::select! {
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        r = send => r.map_err(|e| ToolError::Failed(format!("fetching {url} failed: {}", error_chain(&e)))),
    }
}

/// The response's body as the model reads it.
async fn read(
    asked: &Url,
    url: &Url,
    mut response: reqwest::Response,
    cancel: &CancellationToken,
) -> Result<Output, ToolError> {
    let status = response.status();
    let content_type =
        response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let refuse = |what: &str| ToolError::Failed(format!("{url} is {what}, not text; web_fetch reads only text"));
    // A type that says binary is refused before anything is read.
    if content_type.is_some() && body::kind(content_type.as_deref(), b"") == body::Kind::Binary {
        return Err(refuse(content_type.as_deref().unwrap_or_default()));
    }
    let mut bytes = Vec::new();
    let mut cut = false;
    loop {
        let chunk = tokio::select! {
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
            c = response.chunk() => c.map_err(|e| ToolError::Failed(format!("reading {url} failed: {}", error_chain(&e))))?,
        };
        let Some(chunk) = chunk else { break };
        let room = MAX_BODY - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    let kind = body::kind(content_type.as_deref(), &bytes);
    if kind == body::Kind::Binary {
        return Err(refuse(content_type.as_deref().unwrap_or("binary content")));
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let text = match kind {
        // The parse of a large page takes a while: off the async threads.
        body::Kind::Html => super::walk::blocking(cancel, move |_| Ok(body::markdown(&text))).await?,
        _ => text,
    };
    let mut head = format!("{url}");
    if url != asked {
        head.push_str(&format!(" (redirected from {asked})"));
    }
    head.push_str(&format!("\nHTTP {status}"));
    if let Some(t) = &content_type {
        head.push_str(&format!(", {t}"));
    }
    if kind == body::Kind::Html {
        head.push_str(", shown as Markdown");
    }
    if cut {
        head.push_str(&format!(", only its first {MAX_BODY} bytes read"));
    }
    let for_model = format!("{head}\n\n{text}");
    let shown = super::cap::head_and_tail(&for_model, super::cap::MODEL_CAP, None);
    let raw = json!({
        "url": asked.as_str(),
        "finalUrl": url.as_str(),
        "status": status.as_u16(),
        "contentType": content_type,
        "bytes": bytes.len(),
    });
    Ok(Output { for_model, content: vec![ToolContent::Text(shown)], raw, ok: status.is_success(), images: Vec::new() })
}

/// An error with its causes (reqwest's own message is only "error sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
