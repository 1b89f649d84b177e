//! The one place where Corvid's errors become JSON-RPC error objects.

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};

use crate::provider::ProviderError;

/// Every error a request handler can return. Each variant maps to exactly one JSON-RPC code
/// in [`RpcError::to_wire`].
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// Not JSON (-32700).
    #[error("{0}")]
    Parse(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// A notification method sent as a request (with an id): -32601, saying how to send it.
    #[error("method not found: {0} is a notification: send it without an id")]
    NotARequest(String),
    /// Bad params; the message names the method and the field.
    #[error("{0}")]
    InvalidParams(String),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("request cancelled")]
    Cancelled,
    /// No usable model provider; the message says how to configure one.
    #[error("{0}")]
    AuthRequired(String),
    #[error("session not found: {0}")]
    SessionNotFound(String),
    /// A prompt arrived while the session's previous turn was still running.
    #[error("session {0} is busy with another prompt turn: wait for its response or send session/cancel first")]
    SessionBusy(String),
    /// The session's turn runs in another process sharing the store (another `corvid serve`
    /// of a fleet) or on another connection.
    #[error("session {id} is busy: turn {turn} runs elsewhere (a Corvid process on {host}); try again when it ends")]
    SessionBusyElsewhere { id: String, turn: i64, host: String },
    /// Another process changed the session in the shared store after this connection loaded it.
    #[error(
        "session {0} was changed by another Corvid process since this connection loaded it: load it again (session/load) to continue"
    )]
    SessionStale(String),
    /// A request for a session whose `session/load` or `session/resume` is still running.
    #[error("session {0} is being loaded: wait for the session/load or session/resume response")]
    SessionLoading(String),
    /// A per-connection limit set by the front end (e.g. `corvid serve`'s sessions per connection).
    #[error("{0}")]
    LimitReached(String),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    // --- errors of requests Corvid sends to the client ---
    #[error("client did not answer {method} within {secs} s")]
    Timeout { method: String, secs: u64 },
    #[error("client answered {method} with error {}: {}", i32::from(.error.code), .error.message)]
    Remote { method: String, error: Box<acp::Error> },
    #[error("connection closed")]
    Closed,
}

/// Implementation-defined code for "session busy" (inside the -32000..-32099 range ACP leaves
/// to agents; -32000 and -32002 are taken by the spec).
pub const SESSION_BUSY: i32 = -32001;
/// Implementation-defined code for "a connection limit is reached" (same range).
pub const LIMIT_REACHED: i32 = -32003;
/// Implementation-defined code for "the session changed elsewhere; load it again" (same range).
pub const SESSION_STALE: i32 = -32004;

impl RpcError {
    pub fn invalid_params(method: &str, detail: impl std::fmt::Display) -> Self {
        RpcError::InvalidParams(format!("{method}: {detail}"))
    }

    /// The JSON-RPC error object sent on the wire.
    pub fn to_wire(&self) -> acp::Error {
        let message = self.to_string();
        match self {
            RpcError::Parse(_) => acp::Error::new(-32700, message),
            RpcError::InvalidRequest(_) => acp::Error::new(-32600, message),
            RpcError::MethodNotFound(m) | RpcError::NotARequest(m) => {
                acp::Error::new(-32601, message).data(json!({ "method": m }))
            }
            RpcError::InvalidParams(_) => acp::Error::new(-32602, message),
            RpcError::Internal(_) | RpcError::Closed => acp::Error::new(-32603, message),
            RpcError::Cancelled => acp::Error::new(-32800, message),
            RpcError::AuthRequired(_) => acp::Error::new(-32000, message),
            RpcError::SessionNotFound(id) => acp::Error::new(-32002, message).data(json!({ "sessionId": id })),
            RpcError::SessionBusy(id) | RpcError::SessionLoading(id) => {
                acp::Error::new(SESSION_BUSY, message).data(json!({ "sessionId": id }))
            }
            RpcError::SessionBusyElsewhere { id, turn, host } => {
                acp::Error::new(SESSION_BUSY, message).data(json!({ "sessionId": id, "turn": turn, "host": host }))
            }
            RpcError::SessionStale(id) => acp::Error::new(SESSION_STALE, message).data(json!({ "sessionId": id })),
            RpcError::LimitReached(_) => acp::Error::new(LIMIT_REACHED, message),
            RpcError::Provider(p) => acp::Error::new(-32603, message).data(p.wire_data()),
            RpcError::Timeout { .. } | RpcError::Remote { .. } => acp::Error::new(-32603, message),
        }
    }

    /// The wire error as a JSON value (for building response frames).
    pub fn to_wire_value(&self) -> Value {
        serde_json::to_value(self.to_wire()).unwrap_or_else(|_| json!({"code": -32603, "message": "internal error"}))
    }
}
