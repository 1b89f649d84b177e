//! Corvid's core: the ACP protocol, sessions, the agent loop and model providers.
//!
//! Every front end (`corvid acp` over stdio, the Node addon and `corvid chat` over in-memory
//! channels, each `corvid serve` WebSocket) calls the same entry point, [`serve`] or
//! [`serve_with_store`].

pub mod agent;
pub mod catalog;
pub mod config;
pub mod config_file;
pub mod editor;
pub mod event;
pub mod login;
pub mod mcp;
pub mod process;
pub mod provider;
pub mod roots;
pub mod rpc;
pub mod sandbox;
pub mod store;
mod tls;
pub mod tools;
pub mod transport;
pub mod uploads;

use std::sync::{Arc, Once};

pub use config::{Config, ConnectionOptions};
use tokio_util::sync::CancellationToken;
pub use transport::Transport;

/// Serves one ACP connection over `transport` until the peer closes it or `shutdown` fires.
/// On the way out, running turns are cancelled and every queued frame is handed to the
/// transport.
pub async fn serve(transport: Transport, config: Config, shutdown: CancellationToken) {
    let store = open_store(&config);
    serve_with_store(transport, config, store.clone(), ConnectionOptions::default(), shutdown).await;
    close_store(store).await;
}

/// How long closing the store at the end may take (a checkpoint of the write-ahead log).
const STORE_CLOSE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Closes a store the connection opened itself, within [`STORE_CLOSE_GRACE`]: a clean close
/// makes the next start's open cheap (see [`store::Store::close`]); past the grace the
/// process exits anyway and nothing committed is lost.
pub async fn close_store(store: store::PendingStore) {
    let close = async {
        if let Ok(store) = store.await {
            store.close().await;
        }
    };
    if tokio::time::timeout(STORE_CLOSE_GRACE, close).await.is_err() {
        tracing::warn!("the session store did not close in time");
    }
}

/// [`serve`] with a store opened by the caller (shared by several connections) and this
/// connection's own options.
pub async fn serve_with_store(
    transport: Transport,
    config: Config,
    store: store::PendingStore,
    options: ConnectionOptions,
    shutdown: CancellationToken,
) {
    let config = Arc::new(config);
    rpc::run_connection(transport, |peer| agent::Agent::new(peer, config, store, options), shutdown).await;
}

/// Opens the configured session store. Failure is not fatal: Corvid keeps sessions in memory
/// and says why (in the log, and in `initialize`'s `_meta`).
///
/// Opening starts at once in the background, so it overlaps with process start-up and the
/// first messages; whoever needs the store awaits the shared result (`initialize` may answer
/// from the file's promise instead: [`store::PendingStore`]).
pub fn open_store(config: &Config) -> store::PendingStore {
    use futures_util::FutureExt;
    let location = store::resolve_location(config.store.as_deref(), &config.data_dir);
    let promised = location.as_ref().ok().and_then(|l| l.as_ref()).and_then(store::Store::will_open);
    let vouched = promised.is_some();
    let open = async move {
        let Some(location) = location.map_err(|e| e.to_string())? else {
            return Err("the session store is disabled (store = \"none\")".to_string());
        };
        let opened =
            if vouched { store::Store::open_promised(&location).await } else { store::Store::open(&location).await };
        opened.map_err(|e| {
            tracing::error!(error = %e, "session store unavailable; sessions will not be saved");
            format!("{e}; sessions are kept in memory only and cannot be loaded later")
        })
    }
    .boxed();
    store::PendingStore::start(open, promised)
}

/// The HTTP client for model providers: rustls (ring) with the platform's trust store, read at
/// the first HTTPS handshake ([`tls`]).
pub(crate) fn http_client() -> reqwest::Client {
    http_client_builder().build().unwrap_or_else(|e| {
        tracing::error!(error = %e, "could not build the HTTP client; using defaults");
        reqwest::Client::new()
    })
}

/// The shared client's settings (TLS, user agent, connect timeout; proxies from the
/// environment), for a client that needs more of its own: `web_fetch` follows redirects itself
/// and connects only to the addresses it checked.
pub(crate) fn http_client_builder() -> reqwest::ClientBuilder {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Fails only if another provider was installed first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let builder = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .user_agent(concat!("corvid/", env!("CARGO_PKG_VERSION")));
    match tls::client_config() {
        Ok(config) => builder.tls_backend_preconfigured(config),
        Err(e) => {
            tracing::warn!(error = %e, "cannot configure TLS; using reqwest's defaults");
            builder
        }
    }
}
