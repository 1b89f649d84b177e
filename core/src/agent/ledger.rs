//! Emitting session updates through the ledger: each update is serialized once, stored
//! exactly as sent, and framed the same way live and on replay.

use agent_client_protocol_schema::v1 as acp;

use super::session::Session;
use crate::provider::ChatMessage;
use crate::store::writer::{LedgerTx, Record};

/// The `session/update` frame for a stored payload. Live sends and `session/load` replay both
/// use this, so a replayed frame is byte-for-byte the live one.
pub fn update_frame(session_id: &str, payload: &str) -> String {
    let id = serde_json::Value::String(session_id.to_string());
    format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":{id},"update":{payload}}}}}"#)
}

/// Stores an update in the session's ledger and, if `send`, forwards it to the client once
/// it is committed. `send = false` is for what the client already has (the user's own prompt)
/// or will get by replay (recovery notes). Returns `false` when the connection is gone.
pub async fn emit(
    ledger: &LedgerTx,
    session: &Session,
    turn: Option<i64>,
    update: &acp::SessionUpdate,
    send: bool,
) -> bool {
    let payload = match serialize(update) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "could not serialize a session update");
            return true;
        }
    };
    let frame = send.then(|| update_frame(&session.id, &payload));
    let seq = session.take_seq();
    ledger.push(Record::Update { session_id: session.id.clone(), seq, turn, payload, frame }).await
}

/// Serializes an update. Tool calls are spelled out where the crate omits defaults: a new
/// call says `"status":"pending"`, and a diff of a new file says `"oldText":null`, so clients
/// that do not apply the schema's defaults still render them right.
fn serialize(update: &acp::SessionUpdate) -> serde_json::Result<String> {
    match update {
        acp::SessionUpdate::ToolCall(_) | acp::SessionUpdate::ToolCallUpdate(_) => {
            let mut value = serde_json::to_value(update)?;
            if let Some(obj) = value.as_object_mut() {
                if obj.get("sessionUpdate").and_then(|v| v.as_str()) == Some("tool_call") {
                    obj.entry("status").or_insert_with(|| "pending".into());
                }
                if let Some(content) = obj.get_mut("content").and_then(|c| c.as_array_mut()) {
                    for item in content.iter_mut().filter_map(|i| i.as_object_mut()) {
                        if item.get("type").and_then(|t| t.as_str()) == Some("diff") {
                            item.entry("oldText").or_insert(serde_json::Value::Null);
                        }
                    }
                }
            }
            serde_json::to_string(&value)
        }
        _ => serde_json::to_string(update),
    }
}

/// Appends a message to the session's stored model context.
pub async fn record_message(ledger: &LedgerTx, session: &Session, message: &ChatMessage) {
    let seq = {
        let mut state = session.state();
        let seq = state.next_message_seq;
        state.next_message_seq += 1;
        seq
    };
    let content = serde_json::to_string(message).unwrap_or_default();
    ledger.push(Record::Message { session_id: session.id.clone(), seq, role: message.role.as_str(), content }).await;
}

/// A chunk of text with a message id.
pub fn text_chunk(text: String, message_id: &str) -> acp::ContentChunk {
    acp::ContentChunk::new(acp::ContentBlock::from(text)).message_id(acp::MessageId::new(message_id.to_string()))
}
