//! The client side of ACP: requests with ids and their responses, notifications, and the
//! agent's requests to us. Only `session/request_permission` reaches the UI; every other
//! agent→client request (fs/*, terminal/*: capabilities we do not advertise) is answered
//! -32601 here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::agent_link::Frames;

/// Something the agent sent that the UI must see.
pub enum Event {
    Notification {
        method: String,
        params: Value,
    },
    Permission {
        id: Value,
        params: Value,
    },
    /// The agent closed the connection.
    Closed,
}

/// A JSON-RPC error answer (or the connection closing under a request).
#[derive(Debug)]
pub struct RemoteError {
    pub code: i64,
    pub message: String,
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;
/// Our own code for "the agent went away before answering".
pub const CONNECTION_CLOSED: i64 = -32099;

type Reply = oneshot::Sender<Result<Value, RemoteError>>;
type Pending = Arc<Mutex<HashMap<u64, Reply>>>;

/// A response on its way: await it (also inside `select!`, as `&mut`).
pub struct Response(oneshot::Receiver<Result<Value, RemoteError>>);

impl std::future::Future for Response {
    type Output = Result<Value, RemoteError>;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(|r| r.unwrap_or_else(|_| Err(closed())))
    }
}

fn closed() -> RemoteError {
    RemoteError { code: CONNECTION_CLOSED, message: "the agent closed the connection".into() }
}

pub struct Client {
    outgoing: mpsc::Sender<String>,
    pending: Pending,
    next_id: AtomicU64,
}

impl Client {
    /// Starts routing the agent's frames; the UI receives [`Event`]s.
    pub fn start(frames: Frames) -> (Client, mpsc::UnboundedReceiver<Event>) {
        let Frames { outgoing, mut incoming } = frames;
        let pending: Pending = Arc::default();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let router_pending = pending.clone();
        let router_out = outgoing.clone();
        tokio::spawn(async move {
            while let Some(text) = incoming.recv().await {
                route(&text, &router_pending, &router_out, &events_tx).await;
            }
            if let Ok(mut p) = router_pending.lock() {
                p.clear(); // waiting requests see the connection closed
            }
            let _ = events_tx.send(Event::Closed);
        });
        (Client { outgoing, pending, next_id: AtomicU64::new(1) }, events_rx)
    }

    /// Sends a request; the returned [`Response`] resolves with its result or error.
    pub async fn request(&self, method: &str, params: Value) -> Response {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let frame = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        if self.outgoing.send(frame.to_string()).await.is_err()
            && let Ok(mut p) = self.pending.lock()
        {
            p.remove(&id);
        }
        Response(rx)
    }

    pub async fn notify(&self, method: &str, params: Value) {
        let frame = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        let _ = self.outgoing.send(frame.to_string()).await;
    }

    /// Answers an agent→client request.
    pub async fn respond(&self, id: Value, result: Value) {
        let frame = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        let _ = self.outgoing.send(frame.to_string()).await;
    }
}

async fn route(text: &str, pending: &Pending, outgoing: &mpsc::Sender<String>, events: &mpsc::UnboundedSender<Event>) {
    let Ok(msg) = serde_json::from_str::<Value>(text) else {
        tracing::warn!(frame = %text.chars().take(200).collect::<String>(), "the agent sent a frame that is not JSON");
        return;
    };
    let method = msg.get("method").and_then(Value::as_str);
    let id = msg.get("id").filter(|id| !id.is_null()).cloned();
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    match (method, id) {
        (Some("session/request_permission"), Some(id)) => {
            let _ = events.send(Event::Permission { id, params });
        }
        (Some(method), Some(id)) => {
            let error = json!({ "code": METHOD_NOT_FOUND, "message": format!("method not found: {method}") });
            let frame = json!({ "jsonrpc": "2.0", "id": id, "error": error });
            let _ = outgoing.send(frame.to_string()).await;
        }
        (Some(method), None) => {
            let _ = events.send(Event::Notification { method: method.to_string(), params });
        }
        (None, Some(id)) => {
            let Some(reply) = id.as_u64().and_then(|id| pending.lock().ok()?.remove(&id)) else {
                tracing::warn!(%id, "a response to no request of ours");
                return;
            };
            let result = match msg.get("error") {
                Some(e) => Err(RemoteError {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: e.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_string(),
                }),
                None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = reply.send(result);
        }
        (None, None) => tracing::warn!("the agent sent a frame with neither method nor id"),
    }
}
