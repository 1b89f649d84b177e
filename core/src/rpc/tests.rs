//! The RPC layer driven over the in-memory transport with a test handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::*;
use crate::transport::memory::{MemoryPeer, memory};

#[derive(Default)]
struct TestHandler {
    shut_down: AtomicBool,
    notes: Mutex<Vec<Value>>,
}

impl Handler for TestHandler {
    fn request(
        self: Arc<Self>,
        method: &str,
        params: Option<Value>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let method = method.to_string();
        async move {
            match method.as_str() {
                "echo" => Ok(params.unwrap_or(Value::Null)),
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(Value::Null)
                }
                "ask_client" => {
                    let ms = params.as_ref().and_then(|p| p.get("deadlineMs")).and_then(Value::as_u64).unwrap_or(2000);
                    match ctx.peer.request("client/question", json!({"q": 1}), Duration::from_millis(ms)).await {
                        Ok(v) => Ok(json!({ "clientSaid": v })),
                        Err(e) => Ok(json!({ "failed": e.to_string() })),
                    }
                }
                "panic" => panic!("boom"),
                other => Err(RpcError::MethodNotFound(other.to_string())),
            }
        }
        .boxed()
    }

    fn notification(&self, method: &str, params: Option<Value>) {
        self.notes.lock().expect("lock").push(json!({ "method": method, "params": params }));
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        self.shut_down.store(true, Ordering::SeqCst);
        futures_util::future::ready(()).boxed()
    }
}

struct Harness {
    peer: MemoryPeer,
    handler: Arc<TestHandler>,
    task: JoinHandle<()>,
}

fn start(max: Option<usize>) -> Harness {
    let (transport, peer) = memory(max);
    let handler = Arc::new(TestHandler::default());
    let h = handler.clone();
    let task = tokio::spawn(run_connection(transport, move |_| h, CancellationToken::new()));
    Harness { peer, handler, task }
}

impl Harness {
    async fn send(&self, v: Value) {
        self.peer.send(v.to_string()).await.expect("send");
    }
    async fn send_raw(&self, s: &str) {
        self.peer.send(s).await.expect("send");
    }
    async fn recv(&mut self) -> Value {
        let text = tokio::time::timeout(Duration::from_secs(5), self.peer.from_agent.recv())
            .await
            .expect("agent answered in time")
            .expect("connection open");
        serde_json::from_str(&text).expect("agent sends JSON")
    }
    async fn expect_silence(&mut self, ms: u64) {
        let r = tokio::time::timeout(Duration::from_millis(ms), self.peer.from_agent.recv()).await;
        assert!(r.is_err(), "expected no frame, got {r:?}");
    }
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {v}"))
}

#[tokio::test]
async fn malformed_json_gets_parse_error_with_null_id_and_the_connection_lives_on() {
    let mut h = start(None);
    h.send_raw("{\"jsonrpc\":\"2.0\",\"id\":1,").await;
    let r = h.recv().await;
    assert_eq!(code(&r), -32700);
    assert_eq!(r["id"], Value::Null);
    h.send_raw("\u{0}\u{1}not json at all").await;
    assert_eq!(code(&h.recv().await), -32700);
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"echo","params":{"x":1}})).await;
    assert_eq!(h.recv().await, json!({"jsonrpc":"2.0","id":2,"result":{"x":1}}));
}

#[tokio::test]
async fn invalid_envelopes_get_invalid_request() {
    let mut h = start(None);
    for (frame, id) in [
        (json!([{"jsonrpc":"2.0","id":1,"method":"echo"}]), Value::Null),
        (json!("just a string"), Value::Null),
        (json!({"jsonrpc":"1.0","id":5,"method":"echo"}), json!(5)),
        (json!({"jsonrpc":"2.0","id":6,"method":42}), json!(6)),
        (json!({"jsonrpc":"2.0","id":7,"method":"echo","params":"str"}), json!(7)),
        (json!({"jsonrpc":"2.0","id":[1],"method":"echo"}), Value::Null),
        (json!({"jsonrpc":"2.0"}), Value::Null),
    ] {
        h.send(frame.clone()).await;
        let r = h.recv().await;
        assert_eq!(code(&r), -32600, "for {frame}: {r}");
        assert_eq!(r["id"], id, "for {frame}");
    }
}

#[tokio::test]
async fn unknown_methods_and_notifications() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":"a","method":"no/such"})).await;
    let r = h.recv().await;
    assert_eq!(code(&r), -32601);
    assert_eq!(r["id"], "a");
    // Notifications are never answered.
    h.send(json!({"jsonrpc":"2.0","method":"some/note","params":{"k":1}})).await;
    h.expect_silence(100).await;
    assert_eq!(h.handler.notes.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn ids_of_every_json_type_are_echoed() {
    let mut h = start(None);
    for id in [json!(0), json!(-5), json!("str"), json!(9007199254740993_u64), Value::Null] {
        h.send(json!({"jsonrpc":"2.0","id":id,"method":"echo","params":{}})).await;
        assert_eq!(h.recv().await["id"], id);
    }
}

#[tokio::test]
async fn a_slow_request_does_not_hold_up_others_and_cancel_request_answers_32800() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"slow"})).await;
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"echo","params":[2]})).await;
    assert_eq!(h.recv().await["id"], 2);
    h.send(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}})).await;
    let r = h.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(code(&r), -32800);
    // Cancelling something not in flight is silently ignored.
    h.send(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":99}})).await;
    h.expect_silence(100).await;
}

#[tokio::test]
async fn duplicate_in_flight_ids_are_refused() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":"dup","method":"slow"})).await;
    h.send(json!({"jsonrpc":"2.0","id":"dup","method":"echo"})).await;
    let r = h.recv().await;
    assert_eq!(code(&r), -32600);
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("already in use"));
}

#[tokio::test]
async fn agent_to_client_requests_use_their_own_ids_and_run_concurrently() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"ask_client"})).await;
    let question = h.recv().await;
    assert_eq!(question["method"], "client/question");
    let qid = question["id"].as_str().expect("string id").to_string();
    assert!(qid.starts_with("corvid-"), "{qid}");
    // While the agent waits for us, the client's own requests are still served.
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"echo","params":{"while":"waiting"}})).await;
    assert_eq!(h.recv().await["id"], 2);
    // A response to a request never sent is ignored.
    h.send(json!({"jsonrpc":"2.0","id":"corvid-999","result":{}})).await;
    h.send(json!({"jsonrpc":"2.0","id":qid,"result":{"answer":42}})).await;
    let r = h.recv().await;
    assert_eq!(r, json!({"jsonrpc":"2.0","id":1,"result":{"clientSaid":{"answer":42}}}));
}

#[tokio::test]
async fn client_errors_reach_the_caller() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"ask_client"})).await;
    let qid = h.recv().await["id"].clone();
    h.send(json!({"jsonrpc":"2.0","id":qid,"error":{"code":-32601,"message":"nope"}})).await;
    let r = h.recv().await;
    assert!(r["result"]["failed"].as_str().unwrap_or("").contains("-32601"), "{r}");
}

#[tokio::test]
async fn unanswered_client_requests_hit_their_deadline_and_are_cancelled() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"ask_client","params":{"deadlineMs":150}})).await;
    let question = h.recv().await;
    let cancel = h.recv().await;
    assert_eq!(cancel["method"], "$/cancel_request");
    assert_eq!(cancel["params"]["requestId"], question["id"]);
    let r = h.recv().await;
    assert!(r["result"]["failed"].as_str().unwrap_or("").contains("did not answer"), "{r}");
}

#[tokio::test]
async fn client_cancelling_a_request_to_it_cancels_the_agent_side_wait() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"ask_client","params":{"deadlineMs":60000}})).await;
    let _question = h.recv().await;
    // The client cancels the agent's *outer* request: the handler is dropped, and the
    // pending client request is withdrawn with $/cancel_request.
    h.send(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}})).await;
    let mut frames = [h.recv().await, h.recv().await];
    frames.sort_by_key(|f| f.get("method").is_none());
    assert_eq!(frames[0]["method"], "$/cancel_request");
    assert_eq!(code(&frames[1]), -32800);
}

#[tokio::test]
async fn oversize_messages_are_rejected_and_routed_to_their_id() {
    let mut h = start(Some(1024));
    let big = json!({"jsonrpc":"2.0","id":77,"method":"echo","params":{"blob":"x".repeat(5000)}});
    h.send(big).await;
    let r = h.recv().await;
    assert_eq!(code(&r), -32600);
    assert_eq!(r["id"], 77);
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("exceeds the limit of 1024 bytes"));
    h.send(json!({"jsonrpc":"2.0","id":78,"method":"echo"})).await;
    assert_eq!(h.recv().await["id"], 78);
}

#[tokio::test]
async fn a_panicking_handler_becomes_an_internal_error() {
    let mut h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"panic"})).await;
    let r = h.recv().await;
    assert_eq!(code(&r), -32603);
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("boom"));
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"echo"})).await;
    assert_eq!(h.recv().await["id"], 2);
}

#[tokio::test]
async fn closing_the_input_ends_the_connection_and_cancels_work() {
    let h = start(None);
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"slow"})).await;
    let Harness { peer, handler, task } = h;
    let MemoryPeer { to_agent, mut from_agent } = peer;
    drop(to_agent);
    tokio::time::timeout(Duration::from_secs(2), task).await.expect("ended in time").expect("no panic");
    assert!(handler.shut_down.load(Ordering::SeqCst));
    // The slow request was cancelled on the way out; its answer (if any) is -32800, and the
    // outgoing channel then closes.
    while let Some(frame) = from_agent.recv().await {
        let v: Value = serde_json::from_str(&frame).expect("json");
        assert_eq!(code(&v), -32800);
    }
}
