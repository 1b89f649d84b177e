//! Entry points for the fuzz targets in `fuzz/` (not a public API).
//!
//! They run the same steps the handlers run on a request's params before touching sessions,
//! the store or the network, so the fuzzer reaches the parsing code without an agent around it.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::methods::Method;
use super::params::{self, parse};
use super::{prompt, requested_agent, restore, steering};
use crate::rpc::RpcError;
use crate::tools::Jail;

/// Every method the agent answers (requests) or accepts (`session/cancel`): the dispatch
/// table's own list (`agent::methods`), so a new method cannot escape the fuzzer.
pub const METHODS: &[&str] = &super::methods::NAMES;

/// Every method of a v2 connection (the same table's v2 rows).
pub const V2_METHODS: &[&str] = &super::methods::V2_NAMES;

/// [`parse_params`] for a v2 connection: the v2 adapters' steps, then the v1 parsers they feed.
pub fn parse_params_v2(method: &str, params: Option<Value>) -> Result<(), RpcError> {
    use super::v2;
    use Method as V2;
    let params = params::normalize(params);
    let Some(known) = V2::from_name(method, true) else {
        return Err(RpcError::MethodNotFound(method.to_string()));
    };
    let v1 = |m: Method, params: Option<Value>| parse_params(m.name(), params);
    // Exhaustive, as above.
    match known {
        V2::Initialize => {
            v2::check_initialize(params.as_ref().unwrap_or(&Value::Null)).map_err(RpcError::from)?;
            let caps = params.as_ref().and_then(|p| p.get("capabilities")).cloned().unwrap_or(Value::Null);
            let _ = crate::editor::ClientFeatures::of_v2(&caps);
            Ok(())
        }
        V2::SessionNew => v1(Method::SessionNew, Some(v2::with_v1_lists(params))),
        V2::SessionResume => {
            let (params, _) = v2::resume_params(params).map_err(RpcError::from)?;
            v1(Method::SessionResume, Some(params))
        }
        V2::SessionPrompt => v1(Method::SessionPrompt, params),
        V2::SessionList => v1(Method::SessionList, params),
        V2::SessionClose => v1(Method::SessionClose, params),
        V2::SessionDelete => v1(Method::SessionDelete, params),
        V2::SessionSetConfigOption => v1(Method::SessionSetConfigOption, params),
        V2::SessionCancel => v1(Method::SessionCancel, params),
        V2::ToolCallCancel => round_trip::<v2::ToolCallCancelRequest>(method, params),
        V2::TerminalCancel => round_trip::<v2::TerminalCancelRequest>(method, params),
        V2::AuthLogin => v1(Method::Authenticate, params)
            .map_err(|e| RpcError::from(v2::renamed(e.into(), "authenticate", "auth/login"))),
        V2::AuthLogout => {
            v1(Method::Logout, params).map_err(|e| RpcError::from(v2::renamed(e.into(), "logout", "auth/logout")))
        }
        V2::Authenticate
        | V2::Logout
        | V2::SessionLoad
        | V2::SessionStop
        | V2::SessionSetMode
        | V2::SessionFork
        | V2::SessionSetTitle
        | V2::SessionArchive
        | V2::SessionUnarchive
        | V2::SessionStatus
        | V2::PermissionsList
        | V2::PermissionsRevoke
        | V2::SessionSteering => Err(RpcError::MethodNotFound(method.to_string())),
    }
}

/// Parses `params` the way the handler of `method` does (aliases, agent alias fields, prompt
/// shorthands, list cursors). Accepted params must also survive a serialize/parse round trip
/// unchanged, since some are stored and replayed: this panics when they do not.
pub fn parse_params(method: &str, params: Option<Value>) -> Result<(), RpcError> {
    let mut params = params::normalize(params);
    let Some(known) = Method::from_name(method, false) else {
        return Err(RpcError::MethodNotFound(method.to_string()));
    };
    // Exhaustive: a method added to the table does not compile until it is fuzzed here too.
    match known {
        Method::Initialize => round_trip::<acp::InitializeRequest>(method, params),
        Method::Authenticate => round_trip::<acp::AuthenticateRequest>(method, params),
        Method::Logout => round_trip::<acp::LogoutRequest>(method, params),
        Method::SessionNew => {
            requested_agent(method, &mut params)?;
            round_trip::<acp::NewSessionRequest>(method, params)
        }
        Method::SessionLoad => {
            requested_agent(method, &mut params)?;
            round_trip::<acp::LoadSessionRequest>(method, params)
        }
        Method::SessionResume => {
            requested_agent(method, &mut params)?;
            round_trip::<acp::ResumeSessionRequest>(method, params)
        }
        Method::SessionList => {
            let req: acp::ListSessionsRequest = parse(method, params.clone())?;
            req.cursor.as_deref().map(restore::decode_cursor).transpose()?;
            round_trip::<acp::ListSessionsRequest>(method, params)
        }
        Method::SessionDelete => round_trip::<acp::DeleteSessionRequest>(method, params),
        Method::SessionClose | Method::SessionStop => round_trip::<acp::CloseSessionRequest>(method, params),
        Method::SessionPrompt => {
            let mut params = params.unwrap_or(Value::Null);
            prompt::normalize(&mut params);
            round_trip::<acp::PromptRequest>(method, Some(params))
        }
        Method::SessionCancel => round_trip::<acp::CancelNotification>(method, params),
        Method::SessionSetMode => round_trip::<acp::SetSessionModeRequest>(method, params),
        Method::SessionSetConfigOption => {
            let req: acp::SetSessionConfigOptionRequest = parse(method, params.clone())?;
            let _ = req.value.as_value_id();
            round_trip::<acp::SetSessionConfigOptionRequest>(method, params)
        }
        Method::PermissionsList => parse::<restore::RuleListRequest>(method, params).map(drop),
        Method::PermissionsRevoke => parse::<restore::RuleRevokeRequest>(method, params).map(drop),
        Method::SessionSteering => steering::parse_request(params).map(drop),
        Method::SessionFork => {
            requested_agent(method, &mut params)?;
            round_trip::<acp::ForkSessionRequest>(method, params)
        }
        Method::SessionSetTitle => round_trip::<acp::SetSessionTitleRequest>(method, params),
        Method::SessionArchive => round_trip::<acp::ArchiveSessionRequest>(method, params),
        Method::SessionUnarchive => round_trip::<acp::UnarchiveSessionRequest>(method, params),
        Method::SessionStatus => round_trip::<acp::SessionStatusRequest>(method, params),
        Method::AuthLogin | Method::AuthLogout | Method::ToolCallCancel | Method::TerminalCancel => {
            Err(RpcError::MethodNotFound(method.to_string()))
        }
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(method: &str, params: Option<Value>) -> Result<(), RpcError> {
    let first: T = parse(method, params)?;
    let once = serde_json::to_value(&first).map_err(|e| RpcError::Internal(e.to_string()))?;
    let again: T = match parse(method, Some(once.clone())) {
        Ok(v) => v,
        Err(e) => panic!("{method}: accepted params do not parse again once serialized: {e}\n{once}"),
    };
    let twice = serde_json::to_value(&again).map_err(|e| RpcError::Internal(e.to_string()))?;
    assert!(same_modulo_floats(&once, &twice), "{method}: params change across a round trip: {once} became {twice}");
    Ok(())
}

/// Equal, except that floats may differ: serde_json's float parsing is not correctly rounded
/// (`float_roundtrip` is off), so a float in `_meta` may not survive printing and parsing.
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

/// What a prompt became: the model's text and the uploaded images.
pub struct PromptContent {
    pub text: String,
    pub images: Vec<PathBuf>,
}

/// `session/prompt`'s params through normalization, parsing and content conversion (which
/// writes uploads under `uploads` and reads links through `jail`).
pub fn prompt_content(params: Value, uploads: &Path, jail: &Jail) -> Result<PromptContent, RpcError> {
    let mut params = params;
    prompt::normalize(&mut params);
    let req: acp::PromptRequest = parse("session/prompt", Some(params))?;
    let content = prompt::convert(&req.prompt, uploads, jail)?;
    Ok(PromptContent { text: content.text, images: content.images.into_iter().map(|i| i.path).collect() })
}
