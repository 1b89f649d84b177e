//! A scripted model: a hand-written HTTP/1.1 server on 127.0.0.1 that answers OpenAI Chat
//! Completions streaming requests (`POST …/chat/completions`) with the next scripted reply,
//! in the wire format of `tests/support/fake-model.mjs`, and records every request body.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// One step of a scripted answer.
#[derive(Clone, Debug)]
pub enum Event {
    /// A `content` delta.
    Text(String),
    /// A tool call: id and name first, then the arguments in two pieces (as the Node fake does).
    Tool { id: String, name: String, arguments: Value },
    /// Sleep before the next event.
    Delay(Duration),
    /// Stop writing and keep the connection open (until the agent drops it).
    Hang,
}

/// One scripted reply: its events, then (unless it hangs) a finish reason, usage and `[DONE]`.
#[derive(Clone, Debug)]
pub struct Reply {
    pub events: Vec<Event>,
    /// Defaults to `tool_calls` when the reply holds tool calls, else `stop`.
    pub finish: Option<String>,
}

impl Reply {
    pub fn text(text: &str) -> Self {
        Reply { events: vec![Event::Text(text.to_string())], finish: None }
    }

    pub fn tool(id: &str, name: &str, arguments: Value) -> Self {
        Reply { events: vec![Event::Tool { id: id.into(), name: name.into(), arguments }], finish: None }
    }

    /// Some text, then silence with the stream open.
    pub fn hang_after(text: &str) -> Self {
        Reply { events: vec![Event::Text(text.to_string()), Event::Hang], finish: None }
    }
}

/// What the model is asked to answer, in order; `then_forever` answers every request after.
#[derive(Clone, Debug, Default)]
pub struct Script {
    pub replies: VecDeque<Reply>,
    pub then_forever: Option<Reply>,
}

impl Script {
    pub fn new(replies: impl IntoIterator<Item = Reply>) -> Self {
        Script { replies: replies.into_iter().collect(), then_forever: None }
    }

    pub fn forever(reply: Reply) -> Self {
        Script { replies: VecDeque::new(), then_forever: Some(reply) }
    }
}

struct State {
    script: Script,
    /// Every chat request body, in arrival order.
    requests: Vec<Value>,
    /// Hanging replies whose connection the agent closed.
    dropped: usize,
}

/// The running fake model. Dropping it stops accepting connections.
pub struct FakeModel {
    pub base_url: String,
    state: Arc<Mutex<State>>,
    count: watch::Receiver<usize>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeModel {
    pub async fn start(script: Script) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the fake model");
        let port = listener.local_addr().expect("fake model address").port();
        let state = Arc::new(Mutex::new(State { script, requests: Vec::new(), dropped: 0 }));
        let (count_tx, count) = watch::channel(0usize);
        let count_tx = Arc::new(count_tx);
        let accept_state = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, accept_state.clone(), count_tx.clone()));
            }
        });
        FakeModel { base_url: format!("http://127.0.0.1:{port}/v1"), state, count, accept }
    }

    /// The chat request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state.lock().expect("model state").requests.clone()
    }

    /// How many hanging replies the agent walked away from (closed the connection).
    pub fn dropped(&self) -> usize {
        self.state.lock().expect("model state").dropped
    }

    /// Waits until at least `n` chat requests have arrived.
    pub async fn wait_requests(&self, n: usize, within: Duration) -> Result<(), String> {
        let mut count = self.count.clone();
        tokio::time::timeout(within, count.wait_for(|c| *c >= n))
            .await
            .map_err(|_| format!("the model got {} requests, not {n}, within {within:?}", self.requests().len()))?
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// Reads one request (headers + Content-Length body). `None` when the peer closed early.
async fn read_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[header_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

async fn write_chunk(socket: &mut TcpStream, data: &str) -> bool {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    socket.write_all(framed.as_bytes()).await.is_ok() && socket.flush().await.is_ok()
}

fn frame(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "c1", "object": "chat.completion.chunk", "model": "fake-model",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    });
    format!("data: {chunk}\n\n")
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>, count: Arc<watch::Sender<usize>>) {
    let Some((head, body)) = read_request(&mut socket).await else { return };
    let request_line = head.lines().next().unwrap_or("").to_string();
    if request_line.starts_with("GET ") && request_line.contains("/models") {
        let list = json!({ "object": "list", "data": [{ "id": "fake-model", "object": "model" }] }).to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{list}",
            list.len()
        );
        let _ = socket.write_all(response.as_bytes()).await;
        return;
    }
    if !(request_line.starts_with("POST ") && request_line.contains("/chat/completions")) {
        let _ = socket.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
        return;
    }
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = {
        let mut s = state.lock().expect("model state");
        s.requests.push(parsed);
        let reply = s.script.replies.pop_front().or_else(|| s.script.then_forever.clone());
        count.send_replace(s.requests.len());
        reply
    };
    let Some(reply) = reply else {
        let body = r#"{"error":{"message":"the fake model's script is exhausted"}}"#;
        let response = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(response.as_bytes()).await;
        return;
    };
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut index = 0u32;
    let mut has_tools = false;
    for event in &reply.events {
        match event {
            Event::Text(t) => {
                if !write_chunk(&mut socket, &frame(json!({ "content": t }), None)).await {
                    return;
                }
            }
            Event::Tool { id, name, arguments } => {
                has_tools = true;
                let args = match arguments {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let half = args.char_indices().nth(args.chars().count() / 2).map_or(args.len(), |(i, _)| i);
                let first = json!({ "tool_calls": [{ "index": index, "id": id, "type": "function",
                    "function": { "name": name, "arguments": "" } }] });
                let second = json!({ "tool_calls": [{ "index": index, "function": { "arguments": &args[..half] } }] });
                let third = json!({ "tool_calls": [{ "index": index, "function": { "arguments": &args[half..] } }] });
                for delta in [first, second, third] {
                    if !write_chunk(&mut socket, &frame(delta, None)).await {
                        return;
                    }
                }
                index += 1;
            }
            Event::Delay(d) => tokio::time::sleep(*d).await,
            Event::Hang => {
                // Silence with the stream open; returns once the agent drops the connection.
                let mut sink = [0u8; 1024];
                while let Ok(n) = socket.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
                state.lock().expect("model state").dropped += 1;
                return;
            }
        }
    }
    let finish = reply.finish.clone().unwrap_or_else(|| if has_tools { "tool_calls" } else { "stop" }.to_string());
    let usage = json!({ "id": "c1", "choices": [], "usage": { "prompt_tokens": 10, "completion_tokens": 5 } });
    let tail = format!("{}data: {usage}\n\ndata: [DONE]\n\n", frame(json!({}), Some(&finish)));
    if write_chunk(&mut socket, &tail).await {
        let _ = socket.write_all(b"0\r\n\r\n").await;
        let _ = socket.flush().await;
    }
    let _ = socket.shutdown().await;
}
