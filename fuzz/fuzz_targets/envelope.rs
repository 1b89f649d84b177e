//! JSON-RPC envelope classification of one frame, and request-id sniffing on oversize prefixes.
//!
//! Properties: never panics; a frame is a parse error exactly when it is not JSON; whatever is
//! classified rebuilds into a frame that classifies the same way.
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
    assert_eq!(format!("{incoming:?}"), format!("{again:?}"), "classification is stable");
});
