//! The JSON-RPC layer's errors and their error objects. It knows nothing of ACP: the agent's
//! own errors (session states, provider failures) pick their objects in `agent::error` and
//! arrive here as [`RpcError::Application`].

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A JSON-RPC 2.0 error object (`code`, `message`, optional `data`), as sent and as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// The same object with `data`.
    pub fn data(self, data: Value) -> Self {
        Self { data: Some(data), ..self }
    }
}

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
    Application(Box<ErrorObject>),
    // --- errors of requests Corvid sends to the client ---
    #[error("client did not answer {method} within {secs} s")]
    Timeout { method: String, secs: u64 },
    #[error("client answered {method} with error {}: {}", .error.code, .error.message)]
    Remote { method: String, error: Box<ErrorObject> },
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
    pub fn to_wire(&self) -> ErrorObject {
        let message = self.to_string();
        match self {
            RpcError::Parse(_) => ErrorObject::new(-32700, message),
            RpcError::InvalidRequest(_) => ErrorObject::new(-32600, message),
            RpcError::MethodNotFound(m) | RpcError::NotARequest(m) => {
                ErrorObject::new(-32601, message).data(json!({ "method": m }))
            }
            RpcError::InvalidParams(_) => ErrorObject::new(-32602, message),
            RpcError::Internal(_) | RpcError::Closed => ErrorObject::new(-32603, message),
            RpcError::Cancelled => ErrorObject::new(-32800, message),
            RpcError::Application(e) => (**e).clone(),
            RpcError::Timeout { .. } | RpcError::Remote { .. } => ErrorObject::new(-32603, message),
        }
    }

    /// The wire error as a JSON value (for building response frames).
    pub fn to_wire_value(&self) -> Value {
        serde_json::to_value(self.to_wire()).unwrap_or_else(|_| json!({"code": -32603, "message": "internal error"}))
    }
}
