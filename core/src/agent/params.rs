//! Deserializing request params into the official ACP types, with errors that name the field.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::rpc::RpcError;

/// Accepts ZeroClaw clients' `session_id` as an alias of `sessionId`.
pub fn normalize(params: Option<Value>) -> Option<Value> {
    match params {
        Some(Value::Object(mut map)) => {
            if !map.contains_key("sessionId")
                && let Some(id) = map.remove("session_id")
            {
                map.insert("sessionId".into(), id);
            }
            Some(Value::Object(map))
        }
        other => other,
    }
}

/// Parses `params` as `T`. On failure the -32602 message reads
/// `"<method>: <field path>: <problem>"`, e.g. `session/new: cwd: invalid type: integer ...`.
pub fn parse<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, RpcError> {
    let value = params.unwrap_or_else(|| Value::Object(Default::default()));
    // JSON-RPC allows positional params, and serde would map an array onto a struct's fields
    // in order; ACP's params are named, so an array is a client bug worth reporting.
    if value.is_array() {
        return Err(RpcError::invalid_params(method, "params must be an object (ACP params are named), not an array"));
    }
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            RpcError::invalid_params(method, inner)
        } else {
            RpcError::invalid_params(method, format!("{path}: {inner}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol_schema::v1 as acp;
    use serde_json::json;

    #[test]
    fn errors_name_the_method_and_field() {
        let e = parse::<acp::NewSessionRequest>("session/new", Some(json!({"mcpServers": []}))).expect_err("must fail");
        assert!(e.to_string().contains("session/new: missing field `cwd`"), "{e}");
        let e = parse::<acp::PromptRequest>(
            "session/prompt",
            Some(json!({"sessionId": "s", "prompt": [{"type": "text"}]})),
        )
        .expect_err("must fail");
        assert!(e.to_string().starts_with("session/prompt: prompt"), "{e}");
        let e = parse::<acp::InitializeRequest>("initialize", None).expect_err("must fail");
        assert!(e.to_string().contains("protocolVersion"), "{e}");
        let e = parse::<acp::InitializeRequest>("initialize", Some(json!([1]))).expect_err("positional");
        assert!(e.to_string().starts_with("initialize: params must be an object"), "{e}");
    }
}
