//! Params of every agent-side method, through the same normalization and parsing as the
//! handlers (first byte: the method, its high bit choosing the ACP v2 table; the rest: the
//! params as JSON).
//!
//! Properties: never panics; refusals are -32602 naming the method; accepted params survive a
//! serialize/parse round trip unchanged (checked inside `parse_params`).
#![no_main]

use corvid_core::agent::fuzzing::{METHODS, V2_METHODS, parse_params, parse_params_v2};
use corvid_core::rpc::RpcError;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let [which, json @ ..] = data else { return };
    let v2 = which & 0x80 != 0;
    let table = if v2 { V2_METHODS } else { METHODS };
    let method = table[usize::from(which & 0x7f) % table.len()];
    let params = if json.is_empty() {
        None
    } else {
        match serde_json::from_slice::<Value>(json) {
            // The envelope only lets objects, arrays and null through as params.
            Ok(Value::Null) => None,
            Ok(v @ (Value::Object(_) | Value::Array(_))) => Some(v),
            _ => return,
        }
    };
    let parsed = if v2 { parse_params_v2(method, params) } else { parse_params(method, params) };
    match parsed {
        Ok(()) => {}
        Err(RpcError::InvalidParams(message)) => {
            assert!(message.starts_with(&format!("{method}: ")), "{message}");
        }
        Err(other) => panic!("{method}: unexpected error kind {other:?}"),
    }
});
