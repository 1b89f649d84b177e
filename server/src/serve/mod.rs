//! `corvid serve`: ACP over WebSocket, one ACP connection per WebSocket.
//!
//! Each upgraded socket is wrapped as a `transport::memory` pair and served by the same
//! `corvid_core::serve_with_store` the stdio front end uses (one store shared by all
//! connections). Everything security-relevant happens before the upgrade: the bearer token is
//! checked (constant time) and the connection limit applied, so an unauthenticated request
//! gets a plain HTTP 401 and never reaches ACP.
//!
//! Fail closed: a non-loopback address needs both TLS and a token; loopback needs a token
//! unless `--no-auth` is given.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use corvid_core::rpc::CancellationToken;
use corvid_core::transport::Inbound;
use corvid_core::transport::memory::{MemoryPeer, memory};
use corvid_core::{Config, ConnectionOptions};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::task::TaskTracker;

mod auth;
mod tls;

pub use auth::read_token;

/// The notification a WebSocket client sends to end its input while it still reads: WebSocket
/// has no half-close, and once a peer's close frame arrives nothing more can be sent to it. The
/// bridge sends it when the editor closes its stdin, so the editor still gets what the core
/// writes while it winds down (a cancelled v2 turn's final `state_update`), then the close.
pub const END_OF_INPUT: &str = "_corvid/end_of_input";

/// Whether a text frame is the [`END_OF_INPUT`] notification (a small JSON object naming it and
/// carrying no id).
fn is_end_of_input(text: &str) -> bool {
    text.len() < 256
        && text.contains(END_OF_INPUT)
        && serde_json::from_str::<serde_json::Value>(text)
            .is_ok_and(|v| v["method"] == END_OF_INPUT && v.get("id").is_none())
}
use auth::{check_exposure, digest, presented_tokens, token_matches};
use tls::{TlsListener, tls_acceptor};

/// The WebSocket subprotocol Corvid speaks (echoed back when the client offers it).
pub const SUBPROTOCOL: &str = "corvid.acp.v1";
/// How long shutdown waits for connections to cancel their turns and close.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (host:port). Anything but loopback needs TLS and a token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    listen: String,
    /// TLS certificate chain (PEM). Together with --tls-key the endpoint is wss://.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// File holding the bearer token clients must present (else $CORVID_TOKEN).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Accept clients without a token. Only allowed on a loopback address.
    #[arg(long)]
    no_auth: bool,
    /// Most WebSocket connections at once; further ones get HTTP 503 before the upgrade.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections: usize,
    /// Close a connection after this many seconds without a frame in either direction.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    idle_timeout: u64,
    /// Most sessions one connection may hold at once (`session/new`, `session/load` or
    /// `session/resume` beyond gets an error).
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_sessions_per_connection: usize,
    /// Longest accepted message in bytes (default: `[limits] max_message_bytes`, 16 MiB).
    #[arg(long, value_name = "BYTES")]
    max_message_bytes: Option<usize>,
    /// Session store shared by all connections (as for `corvid acp --store`); a postgres:// URL
    /// lets several `corvid serve` processes (behind a load balancer) share sessions.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

struct Shared {
    config: Config,
    store: corvid_core::store::PendingStore,
    /// SHA-256 of the token; `None` only with `--no-auth` on loopback.
    token_digest: Option<[u8; 32]>,
    slots: Arc<Semaphore>,
    /// `--max-sessions-per-connection`, given to every connection.
    max_sessions: usize,
    idle_timeout: Duration,
    shutdown: CancellationToken,
    connections: TaskTracker,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = Config::load().context("loading configuration")?;
    if args.store.is_some() {
        config.store = args.store.clone();
    }
    if let Some(max) = args.max_message_bytes {
        config.max_message_bytes = max.max(1024);
    }
    crate::init_logging(config.log.as_deref(), args.log_file.as_ref())?;
    let token = read_token(args.token_file.as_deref())?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("corvid-serve")
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(serve(args, config, token));
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

async fn serve(args: ServeArgs, config: Config, token: Option<String>) -> anyhow::Result<()> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(&args.listen)
        .await
        .with_context(|| format!("cannot resolve the listen address {}", args.listen))?
        .collect();
    if addrs.is_empty() {
        bail!("the listen address {} resolves to nothing", args.listen);
    }
    let tls = args.tls_cert.is_some() && args.tls_key.is_some();
    check_exposure(&addrs, tls, token.is_some(), args.no_auth, &args.listen)?;
    if args.no_auth && token.is_some() {
        bail!("--no-auth and a token contradict each other; pass one or the other");
    }
    let acceptor = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls_acceptor(cert, key)?),
        _ => None,
    };
    let listener =
        TcpListener::bind(addrs.as_slice()).await.with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr().context("reading the bound address")?;

    let shutdown = CancellationToken::new();
    let shared = Arc::new(Shared {
        store: corvid_core::open_store(&config),
        config,
        token_digest: token.map(|t| digest(t.as_bytes())),
        slots: Arc::new(Semaphore::new(args.max_connections.max(1))),
        max_sessions: args.max_sessions_per_connection.max(1),
        idle_timeout: Duration::from_secs(args.idle_timeout.max(1)),
        shutdown: shutdown.clone(),
        connections: TaskTracker::new(),
    });
    let app =
        Router::new().route("/healthz", get(|| async { "ok" })).route("/acp", get(upgrade)).with_state(shared.clone());

    crate::spawn_signal_watch(shutdown.clone());
    let scheme = if acceptor.is_some() { "wss" } else { "ws" };
    // The one line a supervisor (or a test) waits for; stderr, like the logs.
    crate::write_stderr(&format!("corvid serve: listening on {scheme}://{local}/acp\n"));
    tracing::info!(%local, tls = acceptor.is_some(), auth = shared.token_digest.is_some(), "serving ACP over WebSocket");

    let stop = shutdown.clone();
    let graceful = async move { stop.cancelled().await };
    match acceptor {
        Some(acceptor) => {
            axum::serve(TlsListener::spawn(listener, acceptor, shutdown.clone()), app)
                .with_graceful_shutdown(graceful)
                .await
        }
        None => axum::serve(listener, app).with_graceful_shutdown(graceful).await,
    }
    .context("serving HTTP")?;

    // Accepting has stopped; connections see the same token (their turns are cancelled and
    // persisted as such) and close. Give them a bounded time.
    shared.connections.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, shared.connections.wait()).await.is_err() {
        tracing::warn!("some connections did not close within the shutdown grace period");
    }
    corvid_core::close_store(shared.store.clone()).await;
    tracing::info!("server stopped");
    Ok(())
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// `GET /acp`: authenticate, take a connection slot, then upgrade.
async fn upgrade(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let Some(expected) = &shared.token_digest {
        let tokens = presented_tokens(&headers, &query);
        // Check every presented token (no short-circuit on the first mismatch).
        let ok = tokens.iter().fold(false, |acc, t| token_matches(expected, t) | acc);
        if !ok {
            tracing::info!(presented = !tokens.is_empty(), "rejected an unauthenticated request");
            let mut response = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required\n");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    // `?agent=<alias>`: the connection's default agent alias, checked here so a typo fails
    // the upgrade instead of every session/new.
    let agent = query.get("agent").cloned();
    if let Some(alias) = &agent
        && !shared.config.agents.get(alias).is_some_and(|p| p.enabled)
    {
        return (StatusCode::BAD_REQUEST, format!("agent: `{alias}` is not an enabled agent alias\n")).into_response();
    }
    if shared.shutdown.is_cancelled() {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n");
    }
    let ws = match ws {
        Ok(ws) => ws,
        Err(rejection) => return rejection.into_response(),
    };
    let Ok(permit) = shared.slots.clone().try_acquire_owned() else {
        tracing::warn!("connection limit reached; refusing a connection");
        return plain(StatusCode::SERVICE_UNAVAILABLE, "too many connections\n");
    };
    let max = shared.config.max_message_bytes;
    let tracked = shared.connections.token();
    ws.protocols([SUBPROTOCOL]).max_message_size(max).max_frame_size(max).on_upgrade(move |socket| async move {
        let _tracked = tracked;
        connection(socket, shared, agent, permit).await;
    })
}

/// Milliseconds since `start`, for the idle clock shared by the reader and the writer.
fn since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One WebSocket = one ACP connection over an in-memory transport.
async fn connection(socket: WebSocket, shared: Arc<Shared>, agent: Option<String>, _permit: OwnedSemaphorePermit) {
    let config = shared.config.clone();
    let options = ConnectionOptions { max_sessions: Some(shared.max_sessions), agent, reread_config: false };
    let (transport, peer) = memory(Some(config.max_message_bytes));
    let MemoryPeer { to_agent, mut from_agent } = peer;
    let conn_shutdown = shared.shutdown.child_token();
    let core = tokio::spawn(corvid_core::serve_with_store(
        transport,
        config,
        shared.store.clone(),
        options,
        conn_shutdown.clone(),
    ));
    tracing::debug!("WebSocket connection opened");

    let start = Instant::now();
    let last_activity = Arc::new(AtomicU64::new(0));
    // Set by the reader when it ends the connection for a reason the close frame should carry.
    let (close_tx, mut close_rx) = mpsc::channel::<CloseFrame>(1);
    let (mut sink, mut stream) = socket.split();
    let writer_done = CancellationToken::new();

    let writer = {
        let (last_activity, writer_done, server_shutdown) =
            (last_activity.clone(), writer_done.clone(), shared.shutdown.clone());
        tokio::spawn(async move {
            while let Some(frame) = from_agent.recv().await {
                last_activity.store(since(start), Ordering::Relaxed);
                if sink.send(Message::Text(frame.into())).await.is_err() {
                    break;
                }
            }
            // The core has finished (its last response is out): say goodbye.
            let frame = close_rx.try_recv().unwrap_or_else(|_| {
                if server_shutdown.is_cancelled() {
                    CloseFrame { code: 1001, reason: "server shutting down".into() }
                } else {
                    CloseFrame { code: 1000, reason: "".into() }
                }
            });
            let _ = sink.send(Message::Close(Some(frame))).await;
            let _ = sink.close().await;
            writer_done.cancel();
        })
    };

    let idle = shared.idle_timeout;
    loop {
        let idle_for = Duration::from_millis(since(start).saturating_sub(last_activity.load(Ordering::Relaxed)));
        let Some(left) = idle.checked_sub(idle_for).filter(|d| !d.is_zero()) else {
            tracing::info!(secs = idle.as_secs(), "closing an idle connection");
            let _ = close_tx.try_send(CloseFrame { code: 1000, reason: "idle timeout".into() });
            break;
        };
        let message = tokio::select! {
            () = writer_done.cancelled() => break,
            () = tokio::time::sleep(left) => continue,
            m = stream.next() => m,
        };
        last_activity.store(since(start), Ordering::Relaxed);
        let bytes = match message {
            // The input ends; the writer goes on until the core is done, then closes.
            Some(Ok(Message::Text(text))) if is_end_of_input(text.as_str()) => break,
            Some(Ok(Message::Text(text))) => text.as_str().as_bytes().to_vec(),
            Some(Ok(Message::Binary(bytes))) => bytes.to_vec(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_))) | None => break,
            Some(Err(e)) => {
                let e = e.into_inner();
                let too_big = e
                    .downcast_ref::<tokio_tungstenite::tungstenite::Error>()
                    .is_some_and(|e| matches!(e, tokio_tungstenite::tungstenite::Error::Capacity(_)));
                if too_big {
                    tracing::warn!(error = %e, "closing a connection that sent an oversize message");
                    let _ = close_tx.try_send(CloseFrame { code: 1009, reason: "message too big".into() });
                } else {
                    tracing::debug!(error = %e, "WebSocket read failed");
                }
                break;
            }
        };
        if to_agent.send(Inbound::Frame(bytes)).await.is_err() {
            break;
        }
    }
    // End of input (the client's close, its END_OF_INPUT, a limit): the core cancels what runs,
    // writes its last frames (sent unless the client's close came first), flushes, and closes
    // its side; the writer then sends the close frame.
    drop(to_agent);
    if let Err(e) = core.await {
        tracing::error!(error = %e, "connection task failed");
    }
    if tokio::time::timeout(Duration::from_secs(2), writer).await.is_err() {
        tracing::debug!("WebSocket writer did not finish in time");
    }
    tracing::debug!("WebSocket connection closed");
}
