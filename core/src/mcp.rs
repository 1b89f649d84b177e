//! The MCP servers a client attaches to one session (`mcpServers` in session/new, load,
//! resume), through the official Rust SDK (`rmcp`): stdio servers as child processes, HTTP
//! servers over streamable HTTP.
//!
//! Isolation: a session owns its `McpServers`; nothing else can reach them. Stdio servers run
//! in their own process group, killed (group and all) when the session closes or the
//! connection ends; a killed Corvid leaves them reading EOF on stdin, which ends them.
//! A server that fails to start does not fail the session: it is reported, and left out.

use std::collections::HashMap;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::event::{ToolContent, ToolKind};
use crate::provider::{FunctionSpec, ToolSpec};
use crate::sandbox::Confinement;
use crate::tools::{Announce, Jail, Needs, Output, Tool, ToolContext, ToolError};

/// Prefix of every MCP tool's name as the model sees it: `mcp__<server>__<tool>`.
pub const PREFIX: &str = "mcp__";
/// How long a server may take to start and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

struct Server {
    name: String,
    client: RunningService<RoleClient, ()>,
    tools: Vec<rmcp::model::Tool>,
    /// The stdio server's process group, killed at close.
    group: Option<crate::process::Group>,
}

/// One server's state, for the session/new `_meta` and the failure notice.
#[derive(Debug, Clone)]
pub struct Status {
    pub name: String,
    pub error: Option<String>,
    pub tools: usize,
}

/// A session's MCP servers.
pub struct McpServers {
    servers: Vec<Server>,
    pub statuses: Vec<Status>,
    call_timeout: Duration,
    /// Set by the first shutdown: process groups are signalled once (their ids could be reused).
    ended: std::sync::atomic::AtomicBool,
}

impl Drop for McpServers {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl McpServers {
    /// Connects every server concurrently; failures are recorded, not fatal.
    /// `sandbox`: how the session's commands are confined, for the stdio servers that opted in
    /// (`config.sandbox.mcp_servers`, by the editor's name for them).
    pub async fn connect(
        configs: &[acp::McpServer],
        http: &reqwest::Client,
        call_timeout: Duration,
        sandbox: (&Confinement, &[String]),
    ) -> Self {
        let (confinement, opted_in) = sandbox;
        let attempts = configs.iter().map(|c| async move {
            let name = server_name(c);
            let sandboxed = match c {
                acp::McpServer::Stdio(s) if opted_in.contains(&s.name) => Some(confinement),
                _ => None,
            };
            let result = match tokio::time::timeout(CONNECT_TIMEOUT, connect_one(c, http, sandboxed)).await {
                Ok(r) => r,
                Err(_) => Err(format!("did not start within {} s", CONNECT_TIMEOUT.as_secs())),
            };
            (name, result)
        });
        let mut out = McpServers { servers: Vec::new(), statuses: Vec::new(), call_timeout, ended: Default::default() };
        for (name, result) in futures_util::future::join_all(attempts).await {
            match result {
                Ok(server) => {
                    tracing::info!(server = %name, tools = server.tools.len(), "MCP server connected");
                    out.statuses.push(Status { name, error: None, tools: server.tools.len() });
                    out.servers.push(server);
                }
                Err(error) => {
                    tracing::warn!(server = %name, %error, "MCP server failed");
                    out.statuses.push(Status { name, error: Some(error), tools: 0 });
                }
            }
        }
        out
    }

    /// The servers' state for `_meta.corvid.mcpServers` of the session response.
    pub fn meta(&self) -> Value {
        Value::Array(
            self.statuses
                .iter()
                .map(|s| match &s.error {
                    None => json!({ "name": s.name, "state": "connected", "tools": s.tools }),
                    Some(e) => json!({ "name": s.name, "state": "failed", "error": e, "tools": 0 }),
                })
                .collect(),
        )
    }

    /// The servers' tools, for the session's tool registry.
    pub fn tools(self: &std::sync::Arc<Self>) -> Vec<std::sync::Arc<dyn Tool>> {
        self.specs()
            .into_iter()
            .map(|spec| {
                let tool = McpTool { servers: self.clone(), name: spec.function.name.to_string(), spec };
                std::sync::Arc::new(tool) as std::sync::Arc<dyn Tool>
            })
            .collect()
    }

    /// Tools offered to the model.
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for server in &self.servers {
            for tool in &server.tools {
                specs.push(ToolSpec {
                    kind: "function",
                    function: FunctionSpec {
                        name: format!("{PREFIX}{}__{}", server.name, tool.name).into(),
                        description: tool.description.clone().unwrap_or_default().to_string().into(),
                        parameters: Value::Object((*tool.input_schema).clone()),
                    },
                });
            }
        }
        specs
    }

    fn find(&self, full: &str) -> Option<(&Server, &rmcp::model::Tool)> {
        let rest = full.strip_prefix(PREFIX)?;
        self.servers.iter().find_map(|s| {
            let tool_name = rest.strip_prefix(s.name.as_str())?.strip_prefix("__")?;
            s.tools.iter().find(|t| t.name == tool_name).map(|t| (s, t))
        })
    }

    /// How a call is shown and whether it needs permission (tools that declare themselves
    /// read-only do not).
    pub fn announce(&self, full: &str) -> Result<Announce, ToolError> {
        let (server, tool) = self.find(full).ok_or_else(|| ToolError::Unknown(full.to_string()))?;
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false);
        Ok(Announce {
            kind: if read_only { ToolKind::Read } else { ToolKind::Other },
            title: format!("{} · {}", server.name, tool.title.clone().unwrap_or_else(|| tool.name.to_string())),
            locations: vec![],
            needs: if read_only { Needs::Nothing } else { Needs::Mcp(full.to_string()) },
        })
    }

    /// Calls the tool; a crashed or hung server fails the call with a clear message.
    pub async fn call(
        &self,
        full: &str,
        args: &Value,
        uploads: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Result<Output, ToolError> {
        let (server, tool) = self.find(full).ok_or_else(|| ToolError::Unknown(full.to_string()))?;
        let mut params = rmcp::model::CallToolRequestParams::new(tool.name.clone());
        if let Value::Object(map) = args {
            params = params.with_arguments(map.clone());
        }
        let call = server.client.call_tool(params);
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
            r = tokio::time::timeout(self.call_timeout, call) => r,
        };
        let result = match result {
            Err(_) => {
                return Err(ToolError::Failed(format!(
                    "MCP server `{}` did not answer within {} s",
                    server.name,
                    self.call_timeout.as_secs()
                )));
            }
            Ok(Err(e)) => return Err(ToolError::Failed(format!("MCP server `{}` failed: {e}", server.name))),
            Ok(Ok(r)) => serde_json::to_value(&r).unwrap_or(Value::Null),
        };
        let ok = !result.get("isError").and_then(Value::as_bool).unwrap_or(false);
        // Binary parts are written to disk: off the async threads.
        let uploads = uploads.to_path_buf();
        let output = tokio::task::spawn_blocking(move || content(&result, &uploads))
            .await
            .map_err(|e| ToolError::Failed(format!("reading the MCP result failed: {e}")))?;
        Ok(Output { ok, ..output })
    }

    /// Ends every server: stdio process groups are killed and the MCP sessions closed.
    /// Synchronous, so it also runs from drop paths and at shutdown.
    pub fn shutdown(&self) {
        if self.ended.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        for server in &self.servers {
            if let Some(group) = server.group {
                group.kill();
            }
            server.client.cancellation_token().cancel();
        }
    }
}

/// One tool of a session's MCP servers, as the registry offers it.
struct McpTool {
    servers: std::sync::Arc<McpServers>,
    name: String,
    spec: ToolSpec,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn announce(&self, _args: &Value, _jail: &Jail) -> Result<Announce, ToolError> {
        self.servers.announce(&self.name)
    }

    fn run<'a>(
        &'a self,
        args: &'a Value,
        cx: &'a ToolContext<'a>,
    ) -> futures_util::future::BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(self.servers.call(&self.name, args, cx.uploads, cx.cancel))
    }
}

fn server_name(c: &acp::McpServer) -> String {
    let raw = match c {
        acp::McpServer::Stdio(s) => s.name.clone(),
        acp::McpServer::Http(h) => h.name.clone(),
        acp::McpServer::Sse(s) => s.name.clone(),
        _ => "unknown".to_string(),
    };
    // Model APIs allow [A-Za-z0-9_-] in tool names.
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// `sandbox`: the confinement of a stdio server that opted in to the sandbox.
async fn connect_one(
    config: &acp::McpServer,
    http: &reqwest::Client,
    sandbox: Option<&Confinement>,
) -> Result<Server, String> {
    let name = server_name(config);
    let (client, group) = match config {
        acp::McpServer::Stdio(s) => {
            let mut cmd = match sandbox {
                Some(Confinement::Refused(reason)) => {
                    return Err(format!("not started: it runs in the sandbox, which cannot be had here ({reason})"));
                }
                Some(Confinement::Sandboxed(launch)) => {
                    let program =
                        std::iter::once(s.command.clone().into_os_string()).chain(s.args.iter().map(Into::into));
                    launch.program(program).await.map_err(|e| format!("cannot make its temp dir: {e}"))?
                }
                Some(Confinement::Unconfined { .. }) | None => {
                    let mut cmd = tokio::process::Command::new(&s.command);
                    cmd.args(&s.args);
                    cmd
                }
            };
            crate::process::own_group(&mut cmd).kill_on_drop(true);
            // Provider keys stay with Corvid; what the client set for the server is kept.
            for var in crate::tools::shell::secret_vars() {
                cmd.env_remove(var);
            }
            for v in &s.env {
                cmd.env(&v.name, &v.value);
            }
            let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start `{}`: {e}", s.command.display()))?;
            let group = transport.id().map(crate::process::Group::leader);
            if let Some(stderr) = stderr {
                forward_stderr(name.clone(), stderr);
            }
            let client = ().serve(transport).await.map_err(|e| format!("MCP handshake failed: {e}"))?;
            (client, group)
        }
        acp::McpServer::Http(h) => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut cfg = StreamableHttpClientTransportConfig::with_uri(h.url.clone());
            let mut headers = HashMap::new();
            for header in &h.headers {
                let (Ok(k), Ok(v)) = (
                    reqwest::header::HeaderName::from_bytes(header.name.as_bytes()),
                    reqwest::header::HeaderValue::from_str(&header.value),
                ) else {
                    return Err(format!("invalid header `{}`", header.name));
                };
                headers.insert(k, v);
            }
            cfg.custom_headers = headers;
            let transport = StreamableHttpClientTransport::with_client(http.clone(), cfg);
            let client = ().serve(transport).await.map_err(|e| format!("cannot connect to {}: {e}", h.url))?;
            (client, None)
        }
        _ => return Err("this MCP transport is not supported (Corvid speaks stdio and HTTP)".into()),
    };
    let tools = client.list_all_tools().await.map_err(|e| format!("listing tools failed: {e}"))?;
    Ok(Server { name, client, tools, group })
}

/// A stdio server's stderr goes to Corvid's log, never to Corvid's own stdout or stderr stream.
fn forward_stderr(name: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %name, "{line}");
        }
    });
}

/// A tool result as the model reads it and the client shows it. Binary parts (images,
/// blobs) are stored under `uploads/` like prompt attachments; the model gets a marker, and
/// an image it can take besides (`Output::images`).
fn content(result: &Value, uploads: &std::path::Path) -> Output {
    let mut images = Vec::new();
    let mut texts = Vec::new();
    let mut shown = Vec::new();
    for part in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        match part.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = str_of(part, "text").unwrap_or_default();
                shown.push(ToolContent::Text(t.clone()));
                texts.push(t);
            }
            Some("image") => {
                let (data, mime) =
                    (str_of(part, "data").unwrap_or_default(), str_of(part, "mimeType").unwrap_or_default());
                match for_model(uploads, &data) {
                    Some((image, len)) => {
                        texts.push(format!("[IMAGE: {} ({}, {len} bytes)]", image.path.display(), image.mime_type));
                        images.push(image);
                    }
                    None => texts.push(stored_marker(uploads, &data, &mime, None)),
                }
                shown.push(ToolContent::Block(Box::new(acp::ContentBlock::Image(acp::ImageContent::new(data, mime)))));
            }
            Some("resource") => {
                let r = part.get("resource").cloned().unwrap_or(Value::Null);
                let uri = str_of(&r, "uri").unwrap_or_default();
                if let Some(text) = str_of(&r, "text") {
                    texts.push(format!("<resource uri=\"{uri}\">\n{text}\n</resource>"));
                    shown.push(ToolContent::Text(text));
                } else {
                    let mime = str_of(&r, "mimeType").unwrap_or_else(|| "application/octet-stream".into());
                    let marker = stored_marker(uploads, &str_of(&r, "blob").unwrap_or_default(), &mime, Some(&uri));
                    shown.push(ToolContent::Text(marker.clone()));
                    texts.push(marker);
                }
            }
            Some("resource_link") => {
                let t = format!(
                    "[{}]({})",
                    str_of(part, "name").unwrap_or_default(),
                    str_of(part, "uri").unwrap_or_default()
                );
                shown.push(ToolContent::Text(t.clone()));
                texts.push(t);
            }
            _ => texts.push(format!("[unsupported content: {part}]")),
        }
    }
    if texts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        texts.push(structured.to_string());
    }
    Output { for_model: texts.join("\n"), content: shown, raw: result.clone(), ok: true, images }
}

/// An image part the model can be shown (a type every provider takes, known by its bytes
/// rather than the server's word; within the size cap), stored, with its size. Anything else
/// is only stored and named ([`stored_marker`]).
fn for_model(uploads: &std::path::Path, data: &str) -> Option<(crate::provider::ImageRef, usize)> {
    use base64::Engine;
    // Decoded only when it can be within the cap (base64 is 4/3 of the bytes).
    if data.len() / 4 * 3 > crate::tools::image::MAX_BYTES + 3 {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()?;
    let mime = crate::tools::image::sniff(&bytes)?;
    crate::tools::image::keep(uploads, &bytes, mime).ok().map(|image| (image, bytes.len()))
}

/// Stores base64 `data` under `uploads/` and returns the marker the model reads.
fn stored_marker(uploads: &std::path::Path, data: &str, mime: &str, from: Option<&str>) -> String {
    let label = if mime.starts_with("image/") { "IMAGE" } else { "Document" };
    match crate::uploads::decode(data)
        .and_then(|bytes| Ok((crate::uploads::store(uploads, &bytes, mime)?, bytes.len())))
    {
        Ok((path, len)) => {
            let from = from.map(|f| format!(", from {f}")).unwrap_or_default();
            format!("[{label}: {} ({mime}, {len} bytes{from})]", path.display())
        }
        Err(e) => format!("[{label} the tool returned could not be stored: {e}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MCP tool's bad binary part is the tool's fault: its result says so, in the tool's
    /// words, not as if the user's prompt were malformed.
    #[test]
    fn a_tool_result_with_bad_base64_is_named_in_the_result_not_as_a_prompt_error() {
        let dir = std::env::temp_dir().join(format!("corvid-mcp-marker-{}", uuid::Uuid::new_v4()));
        let marker = stored_marker(&dir, "!!!!", "image/png", None);
        assert!(marker.starts_with("[IMAGE the tool returned could not be stored: invalid base64"), "{marker}");
        assert!(!marker.contains("prompt"), "{marker}");
        let ok = stored_marker(&dir, "JVBERi0=", "application/pdf", Some("file:///r.pdf"));
        assert!(
            ok.starts_with("[Document: ") && ok.ends_with("(application/pdf, 5 bytes, from file:///r.pdf)]"),
            "{ok}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
