//! Classifying one incoming frame as a JSON-RPC request, notification or response.

use serde_json::{Map, Value};

/// A request id as the peer sent it (string, number or null), echoed back verbatim.
pub type RequestId = Value;

#[derive(Debug)]
pub enum Incoming {
    Request { id: RequestId, method: String, params: Option<Value> },
    Notification { method: String, params: Option<Value> },
    Response { id: RequestId, outcome: Result<Value, Value> },
}

/// Why a frame is not a usable message. The id is kept when it could be read, so the error
/// response reaches the request that caused it.
#[derive(Debug)]
pub enum FrameError {
    /// Not JSON at all (-32700).
    Parse(String),
    /// JSON, but not a valid JSON-RPC 2.0 message (-32600).
    Invalid { id: Option<RequestId>, reason: String },
}

pub fn parse(frame: &[u8]) -> Result<Incoming, FrameError> {
    let value: Value = serde_json::from_slice(frame).map_err(|e| FrameError::Parse(parse_error_text(&e)))?;
    classify(value)
}

fn parse_error_text(e: &serde_json::Error) -> String {
    if e.is_eof() { format!("parse error: truncated JSON ({e})") } else { format!("parse error: {e}") }
}

fn classify(value: Value) -> Result<Incoming, FrameError> {
    let Value::Object(mut obj) = value else {
        let reason = match value {
            Value::Array(_) => "batch requests are not supported by ACP; send one message per line",
            _ => "a JSON-RPC message must be a JSON object",
        };
        return Err(FrameError::Invalid { id: None, reason: reason.into() });
    };
    let id = obj.remove("id");
    // Integers only (ACP's ids are int64): a fractional or huge number is held as an f64,
    // which does not always print back as the number the client sent, so the client could
    // not match the response to its request.
    let id_ok = match &id {
        None | Some(Value::String(_) | Value::Null) => true,
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        Some(_) => false,
    };
    if !id_ok {
        return Err(FrameError::Invalid { id: None, reason: "`id` must be a string, an integer or null".into() });
    }
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => return Err(FrameError::Invalid { id, reason: "`jsonrpc` must be \"2.0\"".into() }),
    }
    let params = take_params(&mut obj).map_err(|reason| FrameError::Invalid { id: id.clone(), reason })?;
    match obj.remove("method") {
        Some(Value::String(method)) => Ok(match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        }),
        Some(_) => Err(FrameError::Invalid { id, reason: "`method` must be a string".into() }),
        None => {
            let Some(id) = id else {
                return Err(FrameError::Invalid { id: None, reason: "message has neither `method` nor `id`".into() });
            };
            match (obj.remove("result"), obj.remove("error")) {
                (Some(result), None) => Ok(Incoming::Response { id, outcome: Ok(result) }),
                (None, Some(error)) => Ok(Incoming::Response { id, outcome: Err(error) }),
                _ => Err(FrameError::Invalid {
                    id: Some(id),
                    reason: "a response must have exactly one of `result` and `error`".into(),
                }),
            }
        }
    }
}

fn take_params(obj: &mut Map<String, Value>) -> Result<Option<Value>, String> {
    match obj.remove("params") {
        None | Some(Value::Null) => Ok(None),
        Some(p @ (Value::Object(_) | Value::Array(_))) => Ok(Some(p)),
        Some(_) => Err("`params` must be an object or an array".into()),
    }
}

/// Best-effort recovery of a request id from the first bytes of an oversize message, so the
/// error can be routed to the request that is waiting for it. Looks only before `"params"`,
/// where SDKs put the envelope fields, so an `"id"` inside the params is never mistaken.
pub fn sniff_id(prefix: &[u8]) -> Option<RequestId> {
    let text = String::from_utf8_lossy(prefix);
    let head = text.split("\"params\"").next().unwrap_or("");
    let start = head.find("\"id\"")? + 4;
    let rest = head[start..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        let end = s.find('"')?;
        return Some(Value::String(s[..end].to_string()));
    }
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(rest.len());
    rest[..end].parse::<i64>().ok().map(Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_the_three_kinds() {
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{}}"#),
            Ok(Incoming::Request { method, .. }) if method == "x"
        ));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","method":"y"}"#), Ok(Incoming::Notification { .. })));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":"corvid-1","result":null}"#),
            Ok(Incoming::Response { outcome: Ok(Value::Null), .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":"corvid-1","error":{"code":1,"message":"m"}}"#),
            Ok(Incoming::Response { outcome: Err(_), .. })
        ));
    }

    #[test]
    fn rejects_what_is_not_a_request_object() {
        assert!(matches!(parse(b"{not json"), Err(FrameError::Parse(_))));
        assert!(matches!(parse(b"\xff\xfe"), Err(FrameError::Parse(_))));
        assert!(matches!(parse(b"[1,2]"), Err(FrameError::Invalid { .. })));
        assert!(matches!(parse(b"42"), Err(FrameError::Invalid { .. })));
        assert!(matches!(
            parse(br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#),
            Err(FrameError::Invalid { id: Some(id), .. }) if id == json!(3)
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            Err(FrameError::Invalid { id: None, .. })
        ));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","id":1,"method":7}"#), Err(FrameError::Invalid { .. })));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#),
            Err(FrameError::Invalid { .. })
        ));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0"}"#), Err(FrameError::Invalid { .. })));
    }

    /// Found by the `envelope` fuzz target: serde_json's float parsing is not correctly
    /// rounded, so the id `184233720387951.66` was echoed as `184233720387951.7`. Only integer
    /// ids are accepted now; the others are refused (-32600, id null) instead of mismatched.
    #[test]
    fn fractional_and_huge_ids_are_refused_integers_echoed_exactly() {
        for text in ["184233720387951.66160", "184233720387951.66", "1.0", "1e2", "18446744073709551616"] {
            let frame = format!(r#"{{"jsonrpc": "2.0", "id": {text}, "met": 0, "method":"code" }}"#);
            assert!(matches!(parse(frame.as_bytes()), Err(FrameError::Invalid { id: None, .. })), "{text}");
        }
        for text in ["-9223372036854775808", "18446744073709551615", "0"] {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"m"}}"#);
            let Ok(Incoming::Request { id, .. }) = parse(frame.as_bytes()) else { panic!("{text}: a request") };
            assert_eq!(id.to_string(), text);
        }
    }

    #[test]
    fn sniffs_ids_only_from_the_envelope() {
        assert_eq!(sniff_id(br#"{"jsonrpc":"2.0","id":42,"method":"session/prompt","params":{"#), Some(json!(42)));
        assert_eq!(sniff_id(br#"{"id" : "abc","method":"m","params":{"#), Some(json!("abc")));
        assert_eq!(sniff_id(br#"{"jsonrpc":"2.0","method":"m","params":{"id":5"#), None);
    }
}
