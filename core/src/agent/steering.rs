//! `_session/steering`: a message sent into the running turn, the contract claude-agent-acp and
//! codex-acp offer (advertised as `InitializeResponse._meta.steering.supported`). The turn takes
//! it in at its next model request (`Turn::take_in_steering`), stores and shows it like any user
//! message, and only then is the request answered. Without a running turn it is refused with
//! -32602 (`idleBehavior: "promptRequired"`): the message belongs in `session/prompt`. A turn
//! that ends before taking it in (cancelled, failed, out of requests) answers it with an error,
//! so the client knows it was not read.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use super::params::parse;
use super::turn::UserPrompt;
use super::{Agent, AgentError, prompt};
use crate::rpc::RpcError;

pub const METHOD: &str = "_session/steering";

/// The request's params.
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRequest {
    pub session_id: String,
    pub prompt: Vec<acp::ContentBlock>,
}

/// A message waiting in a session for its turn's next model request.
pub struct Steer {
    pub prompt: UserPrompt,
    /// Answered once the turn has taken the message in; dropped when the turn ends without it.
    pub taken: oneshot::Sender<()>,
}

/// Parses the params as the handler does (a plain-string `prompt` allowed, like `session/prompt`).
pub fn parse_request(params: Option<Value>) -> Result<SteeringRequest, RpcError> {
    let mut params = params.unwrap_or(Value::Null);
    prompt::normalize(&mut params);
    parse(METHOD, Some(params))
}

fn idle(session_id: &str) -> AgentError {
    AgentError::invalid_params(
        METHOD,
        format!("no turn is running in session {session_id}: send the message with session/prompt instead"),
    )
}

impl Agent {
    pub(super) fn steer(self: &Arc<Self>, params: Option<Value>) -> BoxFuture<'static, Result<Value, AgentError>> {
        let this = self.clone();
        async move {
            let req = parse_request(params)?;
            let session = this.sessions.get(&req.session_id)?;
            if !session.turn_running() {
                return Err(idle(&req.session_id));
            }
            let prompt = this.user_prompt(&session, req.prompt).await?;
            let (taken, was_taken) = oneshot::channel();
            if session.steer(Steer { prompt, taken }).is_err() {
                return Err(idle(&req.session_id));
            }
            match was_taken.await {
                Ok(()) => Ok(Value::Object(serde_json::Map::new())),
                Err(_) => Err(AgentError::SteeringMissed(req.session_id)),
            }
        }
        .boxed()
    }
}
