//! `[models."<id>"]`: what the user says of one model, over the catalog's entry (see
//! `catalog::ModelInfo::resolve`). The key matches like a catalog id: the longest key that
//! begins the model's name, so `[models."qwen2.5-coder"]` covers `qwen2.5-coder:7b` too.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ConfigError, DEFAULT_CURRENCY, Prices};
use crate::catalog::Reasoning;

/// One model's overrides; every field is optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOverride {
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    pub images: Option<bool>,
    pub reasoning: Option<Reasoning>,
    pub parallel_tool_calls: Option<bool>,
    pub prices: Option<Prices>,
}

/// The file's `[models."<id>"]` section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModelSection {
    context_window: Option<u64>,
    max_output_tokens: Option<u32>,
    images: Option<bool>,
    /// `none`, `budget` (Anthropic's thinking), `effort` or `always`.
    reasoning: Option<String>,
    parallel_tool_calls: Option<bool>,
    input_price_per_mtok: Option<f64>,
    output_price_per_mtok: Option<f64>,
    cache_write_price_per_mtok: Option<f64>,
    cache_read_price_per_mtok: Option<f64>,
    currency: Option<String>,
}

/// The sections, by model id.
pub(super) fn overrides(
    sections: BTreeMap<String, ModelSection>,
) -> Result<BTreeMap<String, ModelOverride>, ConfigError> {
    let mut models = BTreeMap::new();
    for (id, s) in sections {
        let reasoning = match s.reasoning.as_deref() {
            None => None,
            Some(name) => Some(
                serde_json::from_value::<Reasoning>(serde_json::Value::String(name.to_string())).map_err(|_| {
                    ConfigError::Invalid(format!(
                        "[models.\"{id}\"] reasoning = \"{name}\": expected none, budget, effort or always"
                    ))
                })?,
            ),
        };
        let priced = s.input_price_per_mtok.is_some() || s.output_price_per_mtok.is_some();
        let prices = priced.then(|| Prices {
            input_per_mtok: s.input_price_per_mtok.unwrap_or(0.0),
            output_per_mtok: s.output_price_per_mtok.unwrap_or(0.0),
            cache_write_per_mtok: s.cache_write_price_per_mtok,
            cache_read_per_mtok: s.cache_read_price_per_mtok,
            currency: s.currency.unwrap_or_else(|| DEFAULT_CURRENCY.into()),
        });
        let over = ModelOverride {
            context_window: s.context_window,
            max_output_tokens: s.max_output_tokens,
            images: s.images,
            reasoning,
            parallel_tool_calls: s.parallel_tool_calls,
            prices,
        };
        models.insert(id, over);
    }
    Ok(models)
}
