//! `corvid acp --connect URL`: a stdio ↔ WebSocket relay, so an editor that only spawns
//! stdio agents (Zed, JetBrains) can use a remote `corvid serve`.
//!
//! stdout carries only the server's ACP frames (one per line), exactly as under a local
//! `corvid acp`; everything else goes to stderr or the log file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use corvid_core::Config;
use corvid_core::rpc::CancellationToken;
use corvid_core::transport::Inbound;
use corvid_core::transport::stdio::stdio;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, header};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long, after stdin's end, the bridge waits for the server's close: the server ends a
/// connection within about 1 s of the end of its input (its core's shutdown bound).
const CLOSE_TIMEOUT: Duration = Duration::from_millis(1500);

pub struct ConnectArgs {
    pub url: String,
    pub token_file: Option<PathBuf>,
    pub agent: Option<String>,
    pub ca_cert: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
}

pub fn run(args: ConnectArgs) -> anyhow::Result<()> {
    let config = Config::load().context("loading configuration")?;
    crate::init_logging(config.log.as_deref(), args.log_file.as_ref())?;
    let token = crate::serve::read_token(args.token_file.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("corvid-bridge")
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(bridge(&args, token, config.max_message_bytes));
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `--agent` goes to the server as `?agent=`; only plain alias names are accepted.
fn with_agent(url: &str, agent: Option<&str>) -> anyhow::Result<String> {
    let Some(agent) = agent else { return Ok(url.to_string()) };
    if agent.is_empty() || !agent.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        bail!("--agent: `{agent}` is not a valid alias (letters, digits, `-`, `_`, `.`)");
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{sep}agent={agent}"))
}

async fn bridge(args: &ConnectArgs, token: Option<String>, max_message_bytes: usize) -> anyhow::Result<()> {
    let url = with_agent(&args.url, args.agent.as_deref())?;
    let mut request = url.as_str().into_client_request().with_context(|| format!("invalid URL {}", args.url))?;
    let uri = request.uri().clone();
    let host = uri.host().context("the URL has no host")?.to_string();
    let tls = match uri.scheme_str() {
        Some("wss") => true,
        Some("ws") if is_loopback_host(&host) => false,
        Some("ws") => bail!(
            "refusing ws:// to {host}: the token and the session would travel unencrypted; use wss:// (ws:// is for loopback only)"
        ),
        _ => bail!("--connect takes a ws:// or wss:// URL, not {}", args.url),
    };
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let headers = request.headers_mut();
    headers.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(crate::serve::SUBPROTOCOL));
    if let Some(token) = &token {
        let value =
            HeaderValue::from_str(&format!("Bearer {token}")).context("the token is not a valid header value")?;
        headers.insert(header::AUTHORIZATION, value);
    }
    let shown = args.url.split('?').next().unwrap_or_default().to_string();
    let bare_host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((bare_host.as_str(), port)))
        .await
        .map_err(|_| anyhow::anyhow!("cannot connect to {shown}: timed out"))?
        .with_context(|| format!("cannot connect to {shown}"))?;
    let _ = tcp.set_nodelay(true);
    let ws_config =
        WebSocketConfig::default().max_message_size(Some(max_message_bytes)).max_frame_size(Some(max_message_bytes));
    if tls {
        let connector = tls_connector(args.ca_cert.as_deref())?;
        let name = rustls::pki_types::ServerName::try_from(bare_host.clone())
            .with_context(|| format!("`{bare_host}` is not a valid TLS server name"))?;
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, tcp))
            .await
            .map_err(|_| anyhow::anyhow!("cannot connect to {shown}: TLS handshake timed out"))?
            .with_context(|| format!("cannot connect to {shown}: TLS handshake failed"))?;
        relay(request, stream, ws_config, &shown, max_message_bytes).await
    } else {
        relay(request, tcp, ws_config, &shown, max_message_bytes).await
    }
}

fn tls_connector(ca_cert: Option<&Path>) -> anyhow::Result<tokio_rustls::TlsConnector> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = ca_cert {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .with_context(|| format!("cannot read --ca-cert {}", path.display()))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("cannot parse --ca-cert {}", path.display()))?;
        if certs.is_empty() {
            bail!("no certificate found in {}", path.display());
        }
        for cert in certs {
            roots.add(cert).with_context(|| format!("unusable certificate in {}", path.display()))?;
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Passes one message from the server to stdout; `Some` when the connection has ended (how).
async fn pass_on(
    message: Option<Result<Message, tungstenite::Error>>,
    stdout: &tokio::sync::mpsc::Sender<String>,
    shown: &str,
) -> Option<anyhow::Result<()>> {
    let line = match message {
        Some(Ok(Message::Text(text))) => one_line(text.as_str()),
        Some(Ok(Message::Binary(bytes))) => std::str::from_utf8(&bytes).ok().and_then(one_line),
        Some(Ok(Message::Close(frame))) => {
            let (code, reason) =
                frame.map(|f| (f.code, f.reason.to_string())).unwrap_or((CloseCode::Normal, String::new()));
            tracing::info!(%code, %reason, "the server closed the connection");
            return Some(match code {
                CloseCode::Normal | CloseCode::Away => Ok(()),
                other => Err(anyhow::anyhow!("the server closed the connection ({other}: {reason})")),
            });
        }
        Some(Ok(_)) => None,
        Some(Err(e)) => return Some(Err(anyhow::anyhow!("connection to {shown} lost: {e}"))),
        None => return Some(Err(anyhow::anyhow!("connection to {shown} lost"))),
    };
    // stdout gone: nobody reads what follows.
    match line {
        Some(line) => stdout.send(line).await.is_err().then_some(Ok(())),
        None => None,
    }
}

/// One line for stdout: the server sends compact JSON, but a frame with a raw newline would
/// break NDJSON framing, so such a frame is re-serialized (or dropped if it is not JSON).
fn one_line(text: &str) -> Option<String> {
    if !text.contains(['\n', '\r']) {
        return Some(text.to_string());
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => serde_json::to_string(&value).ok(),
        Err(_) => {
            tracing::warn!("dropping a non-JSON multi-line frame from the server");
            None
        }
    }
}

async fn relay<S>(
    request: tungstenite::handshake::client::Request,
    stream: S,
    ws_config: WebSocketConfig,
    shown: &str,
    max_message_bytes: usize,
) -> anyhow::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (ws, _response) =
        tokio_tungstenite::client_async_with_config(request, stream, Some(ws_config)).await.map_err(|e| match e {
            tungstenite::Error::Http(response) => {
                let status = response.status();
                let hint = match status.as_u16() {
                    401 => ": the server wants a valid token (--token-file or CORVID_TOKEN)",
                    503 => ": the server is at its connection limit or shutting down",
                    404 => ": is the path /acp?",
                    _ => "",
                };
                anyhow::anyhow!("cannot connect to {shown}: the server answered HTTP {status}{hint}")
            }
            other => anyhow::anyhow!("cannot connect to {shown}: {other}"),
        })?;
    tracing::info!(url = %shown, "connected");

    let (mut transport, writer) = stdio(max_message_bytes).context("opening stdio")?;
    let shutdown = CancellationToken::new();
    crate::spawn_signal_watch(shutdown.clone());
    let (mut sink, mut stream) = ws.split();
    let outcome = loop {
        tokio::select! {
            () = shutdown.cancelled() => {
                let _ = sink.send(Message::Close(None)).await;
                break Ok(());
            }
            inbound = transport.incoming.recv() => match inbound {
                Some(Inbound::Frame(bytes)) => {
                    let message = match String::from_utf8(bytes) {
                        Ok(text) => Message::Text(text.into()),
                        // The server answers invalid UTF-8 with -32700 as it would on stdio.
                        Err(e) => Message::Binary(e.into_bytes().into()),
                    };
                    if let Err(e) = sink.send(message).await {
                        break Err(anyhow::anyhow!("connection to {shown} lost: {e}"));
                    }
                }
                Some(Inbound::TooLong { len, prefix }) => {
                    // Never forwarded; answered here exactly as the core would.
                    let id = corvid_core::rpc::message::sniff_id(&prefix).unwrap_or(serde_json::Value::Null);
                    let error = corvid_core::rpc::RpcError::oversize(len, max_message_bytes);
                    let _ = transport.outgoing.send(corvid_core::rpc::error_frame(&id, error)).await;
                }
                None => {
                    // The editor closed stdin: end the server's input but keep reading, and pass on
                    // what it still sends (a turn it cancels ends with a final update the editor
                    // should see) until its close; a server that does not know END_OF_INPUT gets
                    // our close after CLOSE_TIMEOUT.
                    let end = serde_json::json!({ "jsonrpc": "2.0", "method": crate::serve::END_OF_INPUT }).to_string();
                    let _ = sink.send(Message::Text(end.into())).await;
                    let rest = async {
                        loop {
                            if let Some(end) = pass_on(stream.next().await, &transport.outgoing, shown).await {
                                return end;
                            }
                        }
                    };
                    let outcome = tokio::time::timeout(CLOSE_TIMEOUT, rest).await.unwrap_or(Ok(()));
                    let _ = tokio::time::timeout(Duration::from_millis(500), sink.close()).await;
                    break outcome;
                }
            },
            message = stream.next() => if let Some(end) = pass_on(message, &transport.outgoing, shown).await {
                break end;
            },
        }
    };
    drop(transport);
    crate::join_with_deadline(writer, Duration::from_millis(500));
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback_host("localhost"));
        assert!(is_loopback_host("127.0.0.1"));
        assert!(is_loopback_host("[::1]"));
        assert!(!is_loopback_host("example.com"));
        assert!(!is_loopback_host("10.0.0.1"));
    }

    #[test]
    fn agent_goes_to_the_query() {
        assert_eq!(with_agent("ws://h/acp", Some("fast")).expect("ok"), "ws://h/acp?agent=fast");
        assert_eq!(with_agent("ws://h/acp?x=1", Some("a")).expect("ok"), "ws://h/acp?x=1&agent=a");
        assert!(with_agent("ws://h/acp", Some("a b")).is_err());
    }

    #[test]
    fn frames_stay_on_one_line() {
        assert_eq!(one_line("{\"a\":1}").as_deref(), Some("{\"a\":1}"));
        assert_eq!(one_line("{\"a\":\n1}").as_deref(), Some("{\"a\":1}"));
        assert_eq!(one_line("not\njson"), None);
    }
}
