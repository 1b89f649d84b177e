//! JSON-RPC 2.0 over any [`Transport`]: framing errors, dispatch, `$/cancel_request`,
//! and requests in both directions at once.
//!
//! The dispatch loop only classifies frames and hands them off: every request runs as its
//! own task, so a slow handler never delays the next message.

pub mod error;
pub mod message;
pub mod peer;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
pub use futures_util::future::BoxFuture;
use serde_json::Value;
pub use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use error::{ErrorObject, RpcError};
pub use message::RequestId;
pub use peer::{Peer, error_frame};

use crate::transport::{Inbound, Transport};
use message::{FrameError, Incoming};

/// What a request handler gets besides its params.
#[derive(Clone)]
pub struct RequestContext {
    /// Fires when the client sends `$/cancel_request` for this request or the connection ends.
    pub cancel: CancellationToken,
    pub peer: Peer,
    after: Arc<Mutex<Option<BoxFuture<'static, ()>>>>,
}

impl RequestContext {
    /// Runs `work` once the response to this request has been queued: for notifications
    /// that only make sense once the client has the result (e.g. a new session's commands).
    pub fn after_response(&self, work: BoxFuture<'static, ()>) {
        if let Ok(mut slot) = self.after.lock() {
            *slot = Some(work);
        }
    }
}

/// The application side of a connection (the agent, or a test double).
pub trait Handler: Send + Sync + 'static {
    /// Called on the dispatch loop; must not block. Synchronous checks may happen here (so
    /// that e.g. a `session/cancel` right behind a `session/prompt` finds the turn); the
    /// returned future runs as a task and produces the response.
    fn request(
        self: Arc<Self>,
        method: &str,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, RpcError>>;

    /// Called on the dispatch loop for every notification except `$/cancel_request`.
    fn notification(&self, method: &str, params: Option<Value>);

    /// Methods whose handler watches `ctx.cancel` itself and still answers with a result
    /// (e.g. `session/prompt` answers `cancelled`). Others get -32800 when cancelled.
    fn cancels_itself(&self, _method: &str) -> bool {
        false
    }

    /// The connection is ending: cancel running work now (synchronously). The returned future
    /// is awaited after in-flight requests have finished, for final clean-up.
    fn shutdown(&self) -> BoxFuture<'static, ()>;
}

/// How long shutdown lets request tasks finish on their own (turns are cancelled at once)...
const ANSWER_GRACE: Duration = Duration::from_millis(500);
/// ...and then how long the cancelled rest may take to answer. Together with the drain and the
/// stdout writer's deadline the process is gone within 1 s of losing its client.
const CANCEL_GRACE: Duration = Duration::from_millis(200);
/// How long the handler's final drain (e.g. the store flush) may take after that, at least
/// (it also gets what the two graces above left unused).
const DRAIN_GRACE: Duration = Duration::from_millis(150);

/// Serves one connection until the peer closes it or `shutdown` fires.
pub async fn run_connection<H: Handler>(
    transport: Transport,
    make_handler: impl FnOnce(Peer) -> Arc<H>,
    shutdown: CancellationToken,
) {
    let Transport { mut incoming, outgoing, max_message_bytes } = transport;
    let peer = Peer::new(outgoing);
    let handler = make_handler(peer.clone());
    let inflight: Arc<Mutex<HashMap<String, CancellationToken>>> = Arc::default();
    let tasks = TaskTracker::new();
    let connection_gone = CancellationToken::new();

    loop {
        let inbound = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            inbound = incoming.recv() => match inbound {
                Some(i) => i,
                None => break,
            },
        };
        let frame = match inbound {
            Inbound::Frame(bytes) if bytes.len() > max_message_bytes => {
                Inbound::TooLong { len: bytes.len(), prefix: bytes.into_iter().take(512).collect() }
            }
            other => other,
        };
        let parsed = match frame {
            Inbound::Frame(bytes) => message::parse(&bytes),
            Inbound::TooLong { len, prefix } => {
                let id = message::sniff_id(&prefix).unwrap_or(Value::Null);
                tracing::warn!(len, "rejected an oversize message");
                respond_later(&tasks, &peer, id, RpcError::oversize(len, max_message_bytes));
                continue;
            }
        };
        match parsed {
            Err(FrameError::Parse(reason)) => {
                tracing::warn!(%reason, "unparseable message");
                respond_later(&tasks, &peer, Value::Null, RpcError::Parse(reason));
            }
            Err(FrameError::Invalid { id, reason }) => {
                tracing::warn!(%reason, "invalid message");
                respond_later(&tasks, &peer, id.unwrap_or(Value::Null), RpcError::InvalidRequest(reason));
            }
            Ok(Incoming::Response { id, outcome }) => peer.complete(&id, outcome),
            Ok(Incoming::Notification { method, params }) => {
                if method == "$/cancel_request" {
                    cancel_inflight(&inflight, params.as_ref());
                } else {
                    handler.notification(&method, params);
                }
            }
            Ok(Incoming::Request { id, method, params }) => {
                let key = id.to_string();
                let cancel = connection_gone.child_token();
                let duplicate = match inflight.lock() {
                    Ok(map) if map.contains_key(&key) => true,
                    Ok(mut map) => {
                        map.insert(key.clone(), cancel.clone());
                        false
                    }
                    Err(_) => false,
                };
                if duplicate {
                    let reason = format!("request id {key} is already in use by a request in flight");
                    respond_later(&tasks, &peer, id, RpcError::InvalidRequest(reason));
                    continue;
                }
                let after: Arc<Mutex<Option<BoxFuture<'static, ()>>>> = Arc::default();
                let ctx = RequestContext { cancel: cancel.clone(), peer: peer.clone(), after: after.clone() };
                let fut = handler.clone().request(&method, params, ctx);
                let self_cancelling = handler.cancels_itself(&method);
                let peer = peer.clone();
                let inflight = inflight.clone();
                tasks.spawn(async move {
                    let guarded = AssertUnwindSafe(fut).catch_unwind();
                    let result = if self_cancelling {
                        guarded.await
                    } else {
                        tokio::select! {
                            biased;
                            r = guarded => r,
                            () = cancel.cancelled() => Ok(Err(RpcError::Cancelled)),
                        }
                    };
                    let result = result.unwrap_or_else(|panic| {
                        let what = panic_message(&panic);
                        tracing::error!(%method, panic = %what, "request handler panicked");
                        Err(RpcError::Internal(format!("{method} failed: {what}")))
                    });
                    if let Ok(mut map) = inflight.lock() {
                        map.remove(&key);
                    }
                    let succeeded = result.is_ok();
                    peer.respond(&id, result).await;
                    let work = after.lock().ok().and_then(|mut slot| slot.take());
                    if let Some(work) = work.filter(|_| succeeded) {
                        work.await;
                    }
                });
            }
        }
    }

    tracing::debug!("connection ending; cancelling work");
    // The handler cancels its work now (turns answer `cancelled`); what it returns (e.g. a
    // final flush) runs once the request tasks have had their chance to finish. Requests that
    // need nothing more from the client (an `initialize` piped in right before end of input)
    // are answered; only what outlasts the grace is cancelled, and gets -32800.
    let ending = tokio::time::Instant::now();
    let drain = handler.shutdown();
    tasks.close();
    if tokio::time::timeout(ANSWER_GRACE, tasks.wait()).await.is_err() {
        connection_gone.cancel();
        if tokio::time::timeout(CANCEL_GRACE, tasks.wait()).await.is_err() {
            tracing::warn!("some requests did not finish within the shutdown grace period");
        }
    }
    connection_gone.cancel();
    // The drain (e.g. a v2 turn that answered long ago writing its final `idle`) may use what
    // the graces above left unused, and has at least its own: the 1 s bound holds either way.
    let budget = (ANSWER_GRACE + CANCEL_GRACE + DRAIN_GRACE).saturating_sub(ending.elapsed()).max(DRAIN_GRACE);
    let _ = tokio::time::timeout(budget, drain).await;
    peer.close();
}

fn respond_later(tasks: &TaskTracker, peer: &Peer, id: RequestId, error: RpcError) {
    let peer = peer.clone();
    tasks.spawn(async move { peer.respond(&id, Err(error)).await });
}

fn cancel_inflight(inflight: &Mutex<HashMap<String, CancellationToken>>, params: Option<&Value>) {
    let Some(id) = params.and_then(|p| p.get("requestId")) else {
        tracing::debug!("$/cancel_request without requestId; ignored");
        return;
    };
    let token = inflight.lock().ok().and_then(|map| map.get(&id.to_string()).cloned());
    match token {
        Some(t) => t.cancel(),
        None => tracing::debug!(%id, "$/cancel_request for a request not in flight; ignored"),
    }
}

/// The text of a caught panic's payload.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

#[cfg(test)]
mod tests;
