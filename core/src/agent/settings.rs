//! Changing a session's settings: `session/set_config_option` (mode, model, thought level)
//! and the legacy `session/set_mode`.

use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use super::modes::Mode;
use super::outbox;
use super::params::parse;
use super::session::{MODE_OPTION, MODEL_OPTION, Session, THOUGHT_LEVEL_OPTION};
use super::{Agent, AgentError, to_value};
use crate::event::{Event, v1};
use crate::store::batch::Record;

impl Agent {
    pub(super) async fn set_config_option(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "session/set_config_option";
        // `value` is an untagged enum flattened into the request: serde's own error names
        // neither the field nor what it takes.
        if let Some(v) = params.as_ref().and_then(|p| p.get("value"))
            && !(v.is_string() || v.is_boolean())
        {
            return Err(AgentError::invalid_params(
                M,
                format!("value: must be a value id (a string) or a boolean, got {v}"),
            ));
        }
        let req: acp::SetSessionConfigOptionRequest = parse(M, params)?;
        let session = self.sessions.get(&req.session_id.0)?;
        let Some(value) = req.value.as_value_id() else {
            return Err(AgentError::invalid_params(
                M,
                format!("value: `{}` takes a value id, not a boolean", req.config_id),
            ));
        };
        match req.config_id.0.as_ref() {
            MODEL_OPTION => {
                if !session.source.models.iter().any(|m| m.as_str() == value.0.as_ref()) {
                    let offered = session.source.models.join(", ");
                    return Err(AgentError::invalid_params(
                        M,
                        format!("value: `{value}` is not one of the models offered ({offered})"),
                    ));
                }
                session.state().model = value.0.to_string();
                self.outbox.push(Record::Model { session_id: session.id.clone(), model: value.0.to_string() }).await;
            }
            MODE_OPTION => {
                self.change_mode(&session, M, "value", &value.0).await?;
            }
            THOUGHT_LEVEL_OPTION => {
                let model = session.state().model.clone();
                if !session.offers_thought_level(&model) {
                    return Err(AgentError::invalid_params(
                        M,
                        format!("configId: `{THOUGHT_LEVEL_OPTION}` is not offered for model `{model}`"),
                    ));
                }
                if crate::provider::anthropic::thinking_budget(&value.0).is_none() {
                    let levels: Vec<&str> =
                        crate::provider::anthropic::THOUGHT_LEVELS.iter().map(|(id, ..)| *id).collect();
                    return Err(AgentError::invalid_params(
                        M,
                        format!("value: `{value}` is not a thought level (one of {})", levels.join(", ")),
                    ));
                }
                session.state().thought_level = value.0.to_string();
                self.outbox
                    .push(Record::ThoughtLevel { session_id: session.id.clone(), level: value.0.to_string() })
                    .await;
            }
            other => {
                return Err(AgentError::invalid_params(M, format!("configId: unknown config option `{other}`")));
            }
        }
        self.outbox.flush().await;
        to_value(&acp::SetSessionConfigOptionResponse::new(v1::config_options(&session.config_options())))
    }

    /// Legacy `session/set_mode`, kept in sync with the `mode` config option.
    pub(super) async fn set_mode(self: Arc<Self>, params: Option<Value>) -> Result<Value, AgentError> {
        const M: &str = "session/set_mode";
        let req: acp::SetSessionModeRequest = parse(M, params)?;
        let session = self.sessions.get(&req.session_id.0)?;
        self.change_mode(&session, M, "modeId", &req.mode_id.0).await?;
        let update = Event::ConfigOptions(session.config_options());
        outbox::emit(&self.outbox, &session, None, &update, true).await;
        self.outbox.flush().await;
        to_value(&acp::SetSessionModeResponse::new())
    }

    pub(super) async fn change_mode(
        &self,
        session: &Arc<Session>,
        method: &str,
        field: &str,
        id: &str,
    ) -> Result<(), AgentError> {
        let Some(mode) = Mode::from_id(id) else {
            let known: Vec<&str> = Mode::ALL.iter().map(|m| m.id()).collect();
            return Err(AgentError::invalid_params(
                method,
                format!("{field}: unknown mode `{id}` (one of {})", known.join(", ")),
            ));
        };
        session.state().mode = mode;
        self.outbox.push(Record::Mode { session_id: session.id.clone(), mode: mode.id().to_string() }).await;
        // Legacy clients follow modes through current_mode_update.
        let update = Event::Mode(mode.id().to_string());
        outbox::emit(&self.outbox, session, None, &update, true).await;
        Ok(())
    }
}
