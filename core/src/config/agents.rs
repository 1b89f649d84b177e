//! Agent aliases: the `[agents.<alias>]` profiles, and the configuration a session of one
//! sees.

use std::collections::BTreeMap;

use super::file::AgentSection;
use super::{Config, ConfigError, ProviderConfig};
use crate::provider::{ProviderKind, UnknownProvider};

/// One `[agents.<alias>]` entry: overrides of the provider and the session's behaviour.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentProfile {
    pub model: Option<String>,
    pub kind: Option<ProviderKind>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// Appended to Corvid's own system prompt.
    pub system_prompt: Option<String>,
    /// Permission mode new sessions start in (one of the session modes).
    pub default_mode: Option<String>,
    /// The tools offered to the model; `None`: all of them.
    pub tools: Option<Vec<String>>,
    pub enabled: bool,
}

/// The profiles of the file's `[agents.<alias>]` sections, by alias.
pub(super) fn profiles(
    sections: BTreeMap<String, AgentSection>,
) -> Result<BTreeMap<String, AgentProfile>, ConfigError> {
    let mut agents = BTreeMap::new();
    for (alias, a) in sections {
        let kind = a
            .kind
            .as_deref()
            .map(str::parse::<ProviderKind>)
            .transpose()
            .map_err(|UnknownProvider(name)| UnknownProvider(format!("{name} (in [agents.{alias}])")))?;
        let profile = AgentProfile {
            model: a.model,
            kind,
            base_url: a.base_url,
            api_key: a.api_key,
            system_prompt: a.system_prompt,
            default_mode: a.default_mode,
            tools: a.tools,
            enabled: a.enabled.unwrap_or(true),
        };
        agents.insert(alias, profile);
    }
    Ok(agents)
}

impl Config {
    /// This configuration as seen by sessions of agent `alias`: its provider overrides
    /// applied (a changed kind or base URL starts from that provider's defaults).
    pub fn for_agent(&self, profile: &AgentProfile) -> Config {
        let mut config = self.clone();
        let overrides = profile.kind.is_some() || profile.base_url.is_some() || profile.api_key.is_some();
        if overrides || profile.model.is_some() {
            let base = self.provider.clone();
            let kind = profile.kind.or(base.as_ref().map(|p| p.kind)).unwrap_or(ProviderKind::OpenAi);
            let same_kind = base.as_ref().is_some_and(|p| p.kind == kind);
            let base_url = profile
                .base_url
                .clone()
                .or_else(|| base.as_ref().filter(|_| same_kind).map(|p| p.base_url.clone()))
                .unwrap_or_else(|| kind.default_base_url().to_string());
            let same_endpoint = same_kind && base.as_ref().is_some_and(|p| p.base_url == base_url);
            let api_key = profile
                .api_key
                .clone()
                .or_else(|| base.as_ref().filter(|_| same_endpoint).and_then(|p| p.api_key.clone()));
            let (model, models) = match &profile.model {
                Some(m) => (Some(m.clone()), vec![m.clone()]),
                None if same_endpoint => {
                    (base.as_ref().and_then(|p| p.model.clone()), base.map(|p| p.models).unwrap_or_default())
                }
                None => (None, Vec::new()),
            };
            config.provider = Some(ProviderConfig { kind, base_url, api_key, model, models });
        }
        config
    }
}
