//! JSON-RPC envelope classification of one frame, and request-id sniffing on oversize prefixes.
//!
//! Properties: never panics; a frame is a parse error exactly when it is not JSON; whatever is
//! classified rebuilds into a frame that classifies the same way (same kind, id and method;
//! payloads equal except for float values, see `same_modulo_floats`).
#![no_main]

use corvid_core::rpc::message::{self, FrameError, Incoming};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let _ = message::sniff_id(&data[..data.len().min(512)]);
    let is_json = serde_json::from_slice::<Value>(data).is_ok();
    let parsed = message::parse(data);
    assert_eq!(matches!(parsed, Err(FrameError::Parse(_))), !is_json, "parse error iff not JSON");
    let Ok(incoming) = parsed else { return };
    let rebuilt = match &incoming {
        Incoming::Request { id, method, params } => {
            assert!(matches!(id, Value::String(_) | Value::Number(_) | Value::Null));
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
        }
        Incoming::Notification { method, params } => json!({ "jsonrpc": "2.0", "method": method, "params": params }),
        Incoming::Response { id, outcome: Ok(result) } => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Incoming::Response { id, outcome: Err(error) } => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
    };
    assert!(matches!(
        incoming,
        Incoming::Request { params: None | Some(Value::Object(_) | Value::Array(_)), .. }
            | Incoming::Notification { params: None | Some(Value::Object(_) | Value::Array(_)), .. }
            | Incoming::Response { .. }
    ));
    let again = message::parse(rebuilt.to_string().as_bytes()).expect("a rebuilt message classifies");
    let same = match (&incoming, &again) {
        (Incoming::Request { id, method, params }, Incoming::Request { id: i, method: m, params: p }) => {
            id == i && method == m && same_modulo_floats(&json!(params), &json!(p))
        }
        (Incoming::Notification { method, params }, Incoming::Notification { method: m, params: p }) => {
            method == m && same_modulo_floats(&json!(params), &json!(p))
        }
        (Incoming::Response { id, outcome: Ok(a) }, Incoming::Response { id: i, outcome: Ok(b) })
        | (Incoming::Response { id, outcome: Err(a) }, Incoming::Response { id: i, outcome: Err(b) }) => {
            id == i && same_modulo_floats(a, b)
        }
        _ => false,
    };
    assert!(same, "classification is stable: {incoming:?} became {again:?}");
});

/// Equal, except that floats may differ: serde_json's float parsing is not correctly rounded
/// (its `float_roundtrip` feature is off), so a float in a payload may not survive printing
/// and parsing. Ids are compared exactly: they are integers or strings (see `message.rs`).
fn same_modulo_floats(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_modulo_floats(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_modulo_floats(v, w)))
        }
        _ => a == b,
    }
}
