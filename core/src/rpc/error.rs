//! The JSON-RPC layer's errors and their error objects. It knows nothing of ACP: the agent's
//! own errors (session states, provider failures) pick their objects in `agent::error` and
//! arrive here as [`RpcError::Application`].

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};

/// Every error a request handler can return. Each variant maps to exactly one JSON-RPC code
/// in [`RpcError::to_wire`] (an `Application` error carries its own).
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
    /// An error object the application chose (the agent's ACP errors: `agent::AgentError`).
    #[error("{}", .0.message)]
    Application(Box<acp::Error>),
    // --- errors of requests Corvid sends to the client ---
    #[error("client did not answer {method} within {secs} s")]
    Timeout { method: String, secs: u64 },
    #[error("client answered {method} with error {}: {}", i32::from(.error.code), .error.message)]
    Remote { method: String, error: Box<acp::Error> },
    #[error("connection closed")]
    Closed,
}

impl RpcError {
    pub fn invalid_params(method: &str, detail: impl std::fmt::Display) -> Self {
        RpcError::InvalidParams(format!("{method}: {detail}"))
    }

    /// A message of `len` bytes, over the connection's limit of `max`.
    pub fn oversize(len: usize, max: usize) -> Self {
        RpcError::InvalidRequest(format!("message of {len} bytes exceeds the limit of {max} bytes"))
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
            RpcError::Application(e) => (**e).clone(),
            RpcError::Timeout { .. } | RpcError::Remote { .. } => acp::Error::new(-32603, message),
        }
    }

    /// The wire error as a JSON value (for building response frames).
    pub fn to_wire_value(&self) -> Value {
        serde_json::to_value(self.to_wire()).unwrap_or_else(|_| json!({"code": -32603, "message": "internal error"}))
    }
}
