//! The sending half of a connection: responses, notifications, and requests to the client
//! with their own id space (`"corvid-N"`), deadlines and cancellation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::error::RpcError;
use super::message::RequestId;

type PendingMap = HashMap<String, oneshot::Sender<Result<Value, Value>>>;

/// Cloneable handle for talking to the client. All clones share one outgoing queue.
#[derive(Clone)]
pub struct Peer {
    inner: Arc<PeerInner>,
}

struct PeerInner {
    /// `None` once the connection is closed: dropping the last real sender lets the
    /// transport's writer drain and finish.
    out: Mutex<Option<mpsc::Sender<String>>>,
    pending: Mutex<PendingMap>,
    next_id: AtomicU64,
}

#[derive(Serialize)]
struct NotificationFrame<'a, P> {
    jsonrpc: &'static str,
    method: &'a str,
    params: P,
}

#[derive(Serialize)]
struct RequestFrame<'a, P> {
    jsonrpc: &'static str,
    id: &'a str,
    method: &'a str,
    params: P,
}

#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome<'a> {
    Result(&'a Value),
    Error(&'a Value),
}

#[derive(Serialize)]
struct ResponseFrame<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    #[serde(flatten)]
    outcome: Outcome<'a>,
}

fn response_frame(id: &RequestId, outcome: &Result<Value, RpcError>) -> serde_json::Result<String> {
    let wire;
    let outcome = match outcome {
        Ok(v) => Outcome::Result(v),
        Err(e) => {
            wire = e.to_wire_value();
            Outcome::Error(&wire)
        }
    };
    serde_json::to_string(&ResponseFrame { jsonrpc: "2.0", id, outcome })
}

/// The error response to request `id`, as a frame: for a front end that must answer a
/// message it will not forward (the bridge's oversize lines), exactly as the core would.
pub fn error_frame(id: &RequestId, error: RpcError) -> String {
    response_frame(id, &Err(error)).unwrap_or_else(|e| {
        tracing::error!(error = %e, "could not serialize an error response");
        String::new()
    })
}

impl Peer {
    pub(crate) fn new(out: mpsc::Sender<String>) -> Self {
        Self {
            inner: Arc::new(PeerInner {
                out: Mutex::new(Some(out)),
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    fn sender(&self) -> Option<mpsc::Sender<String>> {
        self.inner.out.lock().ok().and_then(|g| g.clone())
    }

    pub(crate) async fn send_raw(&self, frame: String) -> Result<(), RpcError> {
        let tx = self.sender().ok_or(RpcError::Closed)?;
        tx.send(frame).await.map_err(|_| RpcError::Closed)
    }

    fn try_send_frame(&self, frame: String) {
        if let Some(tx) = self.sender() {
            let _ = tx.try_send(frame);
        }
    }

    /// Sends a notification. Waits (back-pressure) while the outgoing queue is full.
    pub async fn notify<P: Serialize>(&self, method: &str, params: P) -> Result<(), RpcError> {
        let frame = serde_json::to_string(&NotificationFrame { jsonrpc: "2.0", method, params })
            .map_err(|e| RpcError::Internal(format!("serializing {method}: {e}")))?;
        self.send_raw(frame).await
    }

    pub(crate) async fn respond(&self, id: &RequestId, outcome: Result<Value, RpcError>) {
        match response_frame(id, &outcome) {
            Ok(frame) => {
                let _ = self.send_raw(frame).await;
            }
            Err(e) => tracing::error!(error = %e, "could not serialize a response"),
        }
    }

    /// Sends a request to the client and waits for its answer, at most `deadline`.
    /// On timeout the client is sent `$/cancel_request` and the caller gets
    /// [`RpcError::Timeout`]; callers pick a fail-closed default (`editor::EditorClient` does).
    /// Dropping the returned future (e.g. the turn was cancelled) also cancels the request.
    pub async fn request<P: Serialize>(&self, method: &str, params: P, deadline: Duration) -> Result<Value, RpcError> {
        let id = format!("corvid-{}", self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let frame = serde_json::to_string(&RequestFrame { jsonrpc: "2.0", id: &id, method, params })
            .map_err(|e| RpcError::Internal(format!("serializing {method}: {e}")))?;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.inner.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        let guard = PendingGuard { peer: self.clone(), id, armed: true };
        self.send_raw(frame).await?;
        let result = tokio::time::timeout(deadline, rx).await;
        let mut guard = guard;
        match result {
            Err(_elapsed) => Err(RpcError::Timeout { method: method.to_string(), secs: deadline.as_secs() }),
            Ok(Err(_closed)) => {
                guard.armed = false;
                Err(RpcError::Closed)
            }
            Ok(Ok(answer)) => {
                guard.armed = false;
                answer.map_err(|error| RpcError::Remote {
                    method: method.to_string(),
                    error: Box::new(
                        serde_json::from_value(error.clone())
                            .unwrap_or_else(|_| super::ErrorObject::new(-32603, error.to_string())),
                    ),
                })
            }
        }
    }

    /// Routes a response from the client to the request waiting for it.
    pub(crate) fn complete(&self, id: &RequestId, outcome: Result<Value, Value>) {
        let key = match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let waiter = self.inner.pending.lock().ok().and_then(|mut p| p.remove(&key));
        match waiter {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            // Expected after a request was withdrawn (its turn was cancelled, or its deadline
            // passed): the protocol lets the client answer it anyway.
            None => tracing::debug!(id = %key, "response to a request that is no longer pending; ignored"),
        }
    }

    /// Closes the connection: pending client requests fail with `Closed`, and no further
    /// frames are queued.
    pub(crate) fn close(&self) {
        if let Ok(mut pending) = self.inner.pending.lock() {
            pending.clear();
        }
        if let Ok(mut out) = self.inner.out.lock() {
            out.take();
        }
    }
}

/// Removes a pending request whose caller stopped waiting, and tells the client.
struct PendingGuard {
    peer: Peer,
    id: String,
    armed: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let removed = self.peer.inner.pending.lock().ok().and_then(|mut p| p.remove(&self.id));
        if removed.is_some() {
            let frame = serde_json::json!({
                "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": self.id }
            });
            self.peer.try_send_frame(frame.to_string());
        }
    }
}
