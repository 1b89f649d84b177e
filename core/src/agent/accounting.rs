//! Token and cost accounting: what each model request used, the session's running total
//! (reported in `usage_update`), and the per-session budgets that end a turn once crossed.
//!
//! The running total travels in the usage event itself (v1 puts it in `cost` and under
//! `_meta.corvid.sessionTokens`), so the ledger alone restores it on `session/load`.

use serde_json::Value;

use super::session::{Session, Spent};
use crate::catalog::ModelInfo;
use crate::config::{Config, Prices};
use crate::event::{Cost, Usage};
use crate::provider::TokenUsage;

/// Adds one request's usage to the session and returns the update that reports it. The
/// window and the prices are the model's (`model`: the catalog with the config over it).
pub fn record(session: &Session, model: &ModelInfo, used: &TokenUsage) -> Usage {
    let spent = {
        let mut state = session.state();
        state.spent.tokens += used.input_tokens + used.output_tokens;
        if let Some(prices) = &model.prices {
            state.spent.cost += prices.cost(used);
        }
        state.spent
    };
    Usage {
        // How full the context is after this request: what was sent plus the answer.
        used: used.input_tokens + used.output_tokens,
        size: model.context_window,
        cost: model.prices.as_ref().map(|p| Cost { amount: spent.cost, currency: p.currency.clone() }),
        session_tokens: spent.tokens,
        cache_read_tokens: used.cache_read_tokens,
        cache_write_tokens: used.cache_write_tokens,
    }
}

/// The spending recorded in a stored `usage_update` payload.
pub fn spent_from(payload: &str) -> Spent {
    let Ok(v) = serde_json::from_str::<Value>(payload) else { return Spent::default() };
    Spent {
        tokens: v.pointer("/_meta/corvid/sessionTokens").and_then(Value::as_u64).unwrap_or(0),
        cost: v.pointer("/cost/amount").and_then(Value::as_f64).unwrap_or(0.0),
    }
}

/// Why the session may not make another model request, if a budget is used up (`prices`:
/// the model's, for the cost limit).
pub fn exhausted(spent: Spent, config: &Config, prices: Option<&Prices>) -> Option<String> {
    if let Some(max) = config.budget.max_tokens
        && spent.tokens >= max
    {
        return Some(format!(
            "This session has used {} tokens, reaching its limit of {max} (`max_session_tokens` in [limits]). \
             Start a new session to go on (the limit counts every token sent and received, so /compact does \
             not reset it).",
            spent.tokens
        ));
    }
    if let (Some(max), Some(prices)) = (config.budget.max_cost, prices)
        && spent.cost >= max
    {
        return Some(format!(
            "This session has cost {:.4} {cur}, reaching its limit of {max} {cur} (`max_session_cost` in [limits]). \
             Start a new session or raise the limit.",
            spent.cost,
            cur = prices.currency
        ));
    }
    None
}
