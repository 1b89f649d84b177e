//! Corvid's core: the ACP protocol, sessions, the agent loop and model providers.
//!
//! Every front end (the `corvid` binary over stdio, the Node addon over in-memory channels,
//! later the WebSocket server) calls the same entry point, [`serve`].

pub mod agent;
pub mod config;
pub mod provider;
pub mod rpc;
pub mod transport;

use std::sync::{Arc, Once};

pub use config::Config;
use tokio_util::sync::CancellationToken;
pub use transport::Transport;

/// Serves one ACP connection over `transport` until the peer closes it or `shutdown` fires.
/// On the way out, running turns are cancelled and every queued frame is handed to the
/// transport.
pub async fn serve(transport: Transport, config: Config, shutdown: CancellationToken) {
    let config = Arc::new(config);
    rpc::run_connection(transport, |peer| agent::Agent::new(peer, config), shutdown).await;
}

/// The HTTP client for model providers: rustls (ring) with the platform's trust store.
pub(crate) fn http_client() -> reqwest::Client {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Fails only if another provider was installed first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .user_agent(concat!("corvid/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "could not build the HTTP client; using defaults");
            reqwest::Client::new()
        })
}
