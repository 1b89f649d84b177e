//! The editor as the turn sees it: typed agent→client requests for one session.
//!
//! Every request has its deadline and races the turn's cancellation token, so a wait on the
//! editor ends the moment the user presses Stop; the request is then withdrawn with
//! `$/cancel_request` (dropping the request future does that, see `rpc::Peer::request`).
//! Answers are parsed into the schema crate's response types, never read by JSON pointer.
//! What to do when the editor fails (the fail-closed default) is the caller's choice: the
//! error says which of timeout, refusal, malformed answer, closed connection or cancel it was.

pub mod features;

use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

pub use features::ClientFeatures;

use crate::event::ToolPatch;
use crate::rpc::{Peer, RpcError};

/// Why a request to the editor gave no answer to work with.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    /// The turn was cancelled while waiting; the request was withdrawn.
    #[error("cancelled")]
    Cancelled,
    #[error("client did not answer {method} within {secs} s")]
    Timeout { method: &'static str, secs: u64 },
    /// The editor answered with a JSON-RPC error (`code` -32601: it does not implement it).
    #[error("client answered {method} with error {code}: {message}")]
    Refused { method: &'static str, code: i32, message: String },
    #[error("client's answer to {method} was not understood: {reason}")]
    Malformed { method: &'static str, reason: String },
    #[error("connection closed")]
    Closed,
}

impl EditorError {
    /// The editor does not implement the method at all.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, EditorError::Refused { code: -32601, .. })
    }
}

/// Deadlines of the requests, from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    /// Requests the editor answers by itself (files, terminals).
    pub request: Duration,
    /// Questions a person answers (permission, elicitation).
    pub question: Duration,
}

/// One session's editor, for one turn (its token) or for clean-up ([`EditorClient::detached`]).
#[derive(Clone)]
pub struct EditorClient {
    peer: Peer,
    session_id: String,
    features: ClientFeatures,
    deadlines: Deadlines,
    cancel: CancellationToken,
    on_question: Option<QuestionHook>,
}

/// Told `true` when a question to the user (a permission request) starts blocking the turn and
/// `false` once it is answered: ACP v2's `requires_action` and `running` states.
pub type QuestionHook = std::sync::Arc<dyn Fn(bool) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

impl EditorClient {
    pub fn new(
        peer: Peer,
        session_id: String,
        features: ClientFeatures,
        deadlines: Deadlines,
        cancel: CancellationToken,
    ) -> Self {
        Self { peer, session_id, features, deadlines, cancel, on_question: None }
    }

    pub fn on_question(mut self, hook: QuestionHook) -> Self {
        self.on_question = Some(hook);
        self
    }

    /// What the editor said it can do.
    pub fn features(&self) -> ClientFeatures {
        self.features
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The same editor with a token that never fires: for the clean-up a cancelled turn still
    /// owes (killing and releasing a terminal), which must not be cut short by that cancel.
    pub fn detached(&self) -> Self {
        Self { cancel: CancellationToken::new(), ..self.clone() }
    }

    async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
        deadline: Duration,
    ) -> Result<R, EditorError> {
        let answer = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(EditorError::Cancelled),
            answer = self.peer.request(method, params, deadline) => answer,
        };
        let value = answer.map_err(|e| match e {
            RpcError::Timeout { secs, .. } => EditorError::Timeout { method, secs },
            RpcError::Remote { error, .. } => EditorError::Refused { method, code: error.code, message: error.message },
            RpcError::Closed => EditorError::Closed,
            other => EditorError::Malformed { method, reason: other.to_string() },
        })?;
        serde_json::from_value(value).map_err(|e| EditorError::Malformed { method, reason: e.to_string() })
    }

    /// `fs/read_text_file`: the editor's text of `path` (unsaved changes included).
    pub async fn read_text_file(&self, path: PathBuf) -> Result<String, EditorError> {
        let request = acp::ReadTextFileRequest::new(self.session_id.clone(), path);
        let answer: acp::ReadTextFileResponse =
            self.call("fs/read_text_file", &request, self.deadlines.request).await?;
        Ok(answer.content)
    }

    /// `fs/write_text_file`.
    pub async fn write_text_file(&self, path: PathBuf, content: String) -> Result<(), EditorError> {
        let request = acp::WriteTextFileRequest::new(self.session_id.clone(), path, content);
        let _: serde_json::Value = self.call("fs/write_text_file", &request, self.deadlines.request).await?;
        Ok(())
    }

    /// `terminal/create` (built with [`EditorClient::session_id`]); returns the terminal id.
    pub async fn create_terminal(&self, request: &acp::CreateTerminalRequest) -> Result<String, EditorError> {
        let answer: acp::CreateTerminalResponse = self.call("terminal/create", request, self.deadlines.request).await?;
        Ok(answer.terminal_id.to_string())
    }

    /// `terminal/output`.
    pub async fn terminal_output(&self, terminal_id: &str) -> Result<acp::TerminalOutputResponse, EditorError> {
        let request = acp::TerminalOutputRequest::new(self.session_id.clone(), terminal_id.to_string());
        self.call("terminal/output", &request, self.deadlines.request).await
    }

    /// `terminal/wait_for_exit`, which may take as long as the command runs (`runs_for`).
    pub async fn wait_for_exit(
        &self,
        terminal_id: &str,
        runs_for: Duration,
    ) -> Result<acp::TerminalExitStatus, EditorError> {
        let request = acp::WaitForTerminalExitRequest::new(self.session_id.clone(), terminal_id.to_string());
        let answer: acp::WaitForTerminalExitResponse =
            self.call("terminal/wait_for_exit", &request, runs_for + self.deadlines.request).await?;
        Ok(answer.exit_status)
    }

    /// `terminal/kill`.
    pub async fn kill_terminal(&self, terminal_id: &str) -> Result<(), EditorError> {
        let request = acp::KillTerminalRequest::new(self.session_id.clone(), terminal_id.to_string());
        let _: serde_json::Value = self.call("terminal/kill", &request, self.deadlines.request).await?;
        Ok(())
    }

    /// `terminal/release`.
    pub async fn release_terminal(&self, terminal_id: &str) -> Result<(), EditorError> {
        let request = acp::ReleaseTerminalRequest::new(self.session_id.clone(), terminal_id.to_string());
        let _: serde_json::Value = self.call("terminal/release", &request, self.deadlines.request).await?;
        Ok(())
    }

    /// `session/request_permission` about `call` (as it would run): the answer (the option the
    /// user picked, or `cancelled`, and its `_meta`). `hunks` goes on the call's first diff as
    /// `_meta.corvid.hunks`: the change's hunks as the core numbers them, for a client that
    /// lets the user keep some (`tools::review`).
    pub async fn request_permission(
        &self,
        call: &ToolPatch,
        options: Vec<acp::PermissionOption>,
        hunks: Option<serde_json::Value>,
    ) -> Result<acp::RequestPermissionResponse, EditorError> {
        let mut tool_call = crate::event::v1::tool_call_update(call);
        if let Some(hunks) = hunks
            && let Some(diff) = tool_call.fields.content.iter_mut().flatten().find_map(|c| match c {
                acp::ToolCallContent::Diff(d) => Some(d),
                _ => None,
            })
        {
            let corvid = serde_json::Map::from_iter([("hunks".to_string(), hunks)]);
            diff.meta = Some(serde_json::Map::from_iter([("corvid".to_string(), serde_json::Value::Object(corvid))]));
        }
        self.asking().await;
        let answer: Result<acp::RequestPermissionResponse, _> = if self.features.v2 {
            let request = crate::event::v2::permission_request(&self.session_id, &tool_call, &options);
            self.call("session/request_permission", &request, self.deadlines.question).await
        } else {
            let request = acp::RequestPermissionRequest::new(self.session_id.clone(), tool_call, options);
            self.call("session/request_permission", &request, self.deadlines.question).await
        };
        self.answered(&answer).await;
        answer
    }

    /// `elicitation/create`: the user's action on the form. v1 and v2 spell the form request
    /// alike (docs/acp-v2-crate-vs-schema.md); over v2 it blocks the turn as a permission
    /// question does (`requires_action`).
    pub async fn elicit(&self, request: &acp::CreateElicitationRequest) -> Result<acp::ElicitationAction, EditorError> {
        self.asking().await;
        let answer: Result<acp::CreateElicitationResponse, _> =
            self.call("elicitation/create", request, self.deadlines.question).await;
        self.answered(&answer).await;
        Ok(answer?.action)
    }

    /// Tells the question hook that a question starts blocking the turn.
    async fn asking(&self) {
        if let Some(hook) = &self.on_question {
            hook(true).await;
        }
    }

    /// Tells the question hook that the question was answered; a cancelled turn goes idle
    /// instead (its end says so).
    async fn answered<T>(&self, answer: &Result<T, EditorError>) {
        if let Some(hook) = &self.on_question
            && !matches!(answer, Err(EditorError::Cancelled))
        {
            hook(false).await;
        }
    }
}
