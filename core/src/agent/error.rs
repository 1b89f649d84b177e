//! The agent's errors: ACP's session states, the provider's failures, and the JSON-RPC error
//! objects they become. The one place that picks their codes (the RPC layer's own errors keep
//! theirs, `rpc::RpcError::to_wire`); a handler's `AgentError` reaches the wire through
//! `From<AgentError> for RpcError`.

use serde_json::json;

use crate::provider::ProviderError;
use crate::rpc::{ErrorObject, RpcError};

/// Implementation-defined code for "session busy" (inside the -32000..-32099 range ACP leaves
/// to agents; -32000 and -32002 are taken by the spec).
pub const SESSION_BUSY: i32 = -32001;
/// Implementation-defined code for "a connection limit is reached" (same range).
pub const LIMIT_REACHED: i32 = -32003;
/// Implementation-defined code for "the session changed elsewhere; load it again" (same range).
pub const SESSION_STALE: i32 = -32004;
/// Implementation-defined code for "the turn ended before it took the steering message in".
pub const STEERING_MISSED: i32 = -32005;

/// Every error an ACP method handler can return.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Bad params, an unknown method, an internal failure: plain JSON-RPC.
    #[error(transparent)]
    Rpc(#[from] RpcError),
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
    /// A `_session/steering` message whose turn ended before its next model request.
    #[error("the turn in session {0} ended before it took the message in: send it with session/prompt")]
    SteeringMissed(String),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

impl AgentError {
    pub fn invalid_params(method: &str, detail: impl std::fmt::Display) -> Self {
        RpcError::invalid_params(method, detail).into()
    }

    pub fn internal(message: impl Into<String>) -> Self {
        RpcError::Internal(message.into()).into()
    }

    /// The JSON-RPC error object sent on the wire.
    pub fn to_wire(&self) -> ErrorObject {
        let message = self.to_string();
        match self {
            AgentError::Rpc(e) => e.to_wire(),
            AgentError::AuthRequired(_) => ErrorObject::new(-32000, message),
            AgentError::SessionNotFound(id) => ErrorObject::new(-32002, message).data(json!({ "sessionId": id })),
            AgentError::SessionBusy(id) | AgentError::SessionLoading(id) => {
                ErrorObject::new(SESSION_BUSY, message).data(json!({ "sessionId": id }))
            }
            AgentError::SessionBusyElsewhere { id, turn, host } => {
                ErrorObject::new(SESSION_BUSY, message).data(json!({ "sessionId": id, "turn": turn, "host": host }))
            }
            AgentError::SessionStale(id) => ErrorObject::new(SESSION_STALE, message).data(json!({ "sessionId": id })),
            AgentError::LimitReached(_) => ErrorObject::new(LIMIT_REACHED, message),
            AgentError::SteeringMissed(id) => {
                ErrorObject::new(STEERING_MISSED, message).data(json!({ "sessionId": id }))
            }
            AgentError::Provider(p) => ErrorObject::new(-32603, message).data(p.wire_data()),
        }
    }
}

/// A store failure reaches the client as an internal error naming it.
impl From<crate::store::StoreError> for AgentError {
    fn from(e: crate::store::StoreError) -> Self {
        AgentError::internal(e.to_string())
    }
}

impl From<AgentError> for RpcError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::Rpc(e) => e,
            other => RpcError::Application(Box::new(other.to_wire())),
        }
    }
}
