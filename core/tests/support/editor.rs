//! A fake editor on the other end of the memory transport: it logs every frame the agent
//! sends (in order, with the time it arrived), answers the agent's requests as the test
//! chooses, and lets the test send requests and await their responses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corvid_core::transport::Inbound;
use corvid_core::transport::memory::MemoryPeer;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// How the editor answers one agent→client request.
#[derive(Clone, Debug)]
pub enum Answer {
    Result(Value),
    Error(i64, String),
    /// Never answer (the agent must give up on its own or cancel).
    Never,
}

/// Chooses the answer from the method and params.
pub type Responder = Arc<dyn Fn(&str, &Value) -> Answer + Send + Sync>;

/// One frame from the agent.
#[derive(Clone, Debug)]
pub struct Frame {
    pub at: Instant,
    pub value: Value,
}

impl Frame {
    pub fn method(&self) -> Option<&str> {
        self.value.get("method").and_then(Value::as_str)
    }

    /// An agent→client request (a method and an id).
    pub fn is_request(&self) -> bool {
        self.method().is_some() && self.value.get("id").is_some()
    }

    /// The `session/update` payload, if this is one for `session_id`.
    pub fn update_for(&self, session_id: &str) -> Option<&Value> {
        (self.method() == Some("session/update")
            && self.value.pointer("/params/sessionId").and_then(Value::as_str) == Some(session_id))
        .then(|| self.value.pointer("/params/update"))
        .flatten()
    }
}

pub struct Editor {
    to_agent: mpsc::Sender<Inbound>,
    log: Arc<Mutex<Vec<Frame>>>,
    count: watch::Receiver<usize>,
    responder: Arc<Mutex<Responder>>,
    next_id: AtomicU64,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Editor {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The default answers: permission allowed once, a form answered, files read from disk
/// and written to disk, terminals refused (tests that use them set their own).
pub fn default_responder() -> Responder {
    Arc::new(|method, params| match method {
        "session/request_permission" => {
            Answer::Result(json!({ "outcome": { "outcome": "selected", "optionId": "allow_once" } }))
        }
        "fs/read_text_file" => {
            let path = params.get("path").and_then(Value::as_str).unwrap_or("");
            match std::fs::read_to_string(path) {
                Ok(content) => Answer::Result(json!({ "content": content })),
                Err(e) => Answer::Error(-32002, format!("cannot read {path}: {e}")),
            }
        }
        "fs/write_text_file" => {
            let path = params.get("path").and_then(Value::as_str).unwrap_or("");
            let content = params.get("content").and_then(Value::as_str).unwrap_or("");
            match std::fs::write(path, content) {
                Ok(()) => Answer::Result(Value::Null),
                Err(e) => Answer::Error(-32603, format!("cannot write {path}: {e}")),
            }
        }
        "elicitation/create" => Answer::Result(json!({ "action": "accept", "content": { "answer": "blue" } })),
        _ => Answer::Error(-32601, format!("Method not found: {method}")),
    })
}

impl Editor {
    pub fn start(peer: MemoryPeer) -> Editor {
        let MemoryPeer { to_agent, mut from_agent } = peer;
        let log: Arc<Mutex<Vec<Frame>>> = Arc::default();
        let (count_tx, count) = watch::channel(0usize);
        let responder = Arc::new(Mutex::new(default_responder()));
        let (reader_log, reader_responder, reply_tx) = (log.clone(), responder.clone(), to_agent.clone());
        let reader = tokio::spawn(async move {
            while let Some(text) = from_agent.recv().await {
                let value: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| json!({ "unparseable": text, "error": e.to_string() }));
                let frame = Frame { at: Instant::now(), value };
                let answer = if frame.is_request() {
                    let responder = reader_responder.lock().expect("responder").clone();
                    let method = frame.method().unwrap_or_default().to_string();
                    let params = frame.value.get("params").cloned().unwrap_or(Value::Null);
                    Some((frame.value["id"].clone(), responder(&method, &params)))
                } else {
                    None
                };
                let n = {
                    let mut log = reader_log.lock().expect("editor log");
                    log.push(frame);
                    log.len()
                };
                count_tx.send_replace(n);
                let reply = match answer {
                    Some((id, Answer::Result(result))) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                    Some((id, Answer::Error(code, message))) => {
                        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
                    }
                    Some((_, Answer::Never)) | None => continue,
                };
                if reply_tx.send(Inbound::Frame(reply.to_string().into_bytes())).await.is_err() {
                    break;
                }
            }
        });
        Editor { to_agent, log, count, responder, next_id: AtomicU64::new(1), reader }
    }

    pub fn set_responder(&self, responder: impl Fn(&str, &Value) -> Answer + Send + Sync + 'static) {
        *self.responder.lock().expect("responder") = Arc::new(responder);
    }

    pub async fn send(&self, message: Value) {
        self.to_agent.send(Inbound::Frame(message.to_string().into_bytes())).await.expect("the agent is gone");
    }

    /// Sends a request; returns its id (await the answer with [`Editor::response`]).
    pub async fn request(&self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id.fetch_add(1, Ordering::Relaxed));
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })).await;
        id
    }

    pub async fn notify(&self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params })).await;
    }

    /// A request and its result; an error response or no answer in time is `Err`.
    pub async fn call(&self, method: &str, params: Value, within: Duration) -> Result<Value, String> {
        let id = self.request(method, params).await;
        let (_, frame) = self.response(&id, within).await?;
        match frame.value.get("error") {
            Some(e) => Err(format!("{method} failed: {e}")),
            None => Ok(frame.value.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Waits for the response to request `id`: its index in the log and the frame.
    pub async fn response(&self, id: &Value, within: Duration) -> Result<(usize, Frame), String> {
        let want = id.clone();
        self.wait_for(within, move |f| f.method().is_none() && f.value.get("id") == Some(&want))
            .await
            .map_err(|_| format!("no response to request {id} within {within:?}"))
    }

    /// Waits for the first frame (from the start of the log) that matches.
    pub async fn wait_for(&self, within: Duration, matches: impl Fn(&Frame) -> bool) -> Result<(usize, Frame), String> {
        let mut count = self.count.clone();
        let deadline = Instant::now() + within;
        loop {
            if let Some(found) = self.find(&matches) {
                return Ok(found);
            }
            match tokio::time::timeout_at(deadline, count.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err("the agent's connection closed".into()),
                Err(_) => return Err(format!("nothing matched within {within:?}")),
            }
        }
    }

    fn find(&self, matches: &impl Fn(&Frame) -> bool) -> Option<(usize, Frame)> {
        let log = self.log.lock().expect("editor log");
        log.iter().enumerate().find(|(_, f)| matches(f)).map(|(i, f)| (i, f.clone()))
    }

    /// Waits for the agent's request for `method`; returns its id.
    pub async fn wait_request(&self, method: &str, within: Duration) -> Result<Value, String> {
        self.wait_for(within, |f| f.is_request() && f.method() == Some(method))
            .await
            .map(|(_, f)| f.value["id"].clone())
            .map_err(|_| format!("the agent sent no {method} request within {within:?}"))
    }

    pub fn frames(&self) -> Vec<Frame> {
        self.log.lock().expect("editor log").clone()
    }

    /// The agent's requests for `method`, in order.
    pub fn requests(&self, method: &str) -> Vec<Value> {
        self.frames().into_iter().filter(|f| f.is_request() && f.method() == Some(method)).map(|f| f.value).collect()
    }

    /// Every `session/update` payload for the session, in order.
    pub fn updates(&self, session_id: &str) -> Vec<Value> {
        self.frames().iter().filter_map(|f| f.update_for(session_id).cloned()).collect()
    }
}
