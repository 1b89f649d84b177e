//! Token and cost accounting: what each model request used, the session's running total
//! (reported in `usage_update`), and the per-session budgets that end a turn once crossed.
//!
//! The running total travels in the `usage_update` itself (`cost`, and the token total under
//! `_meta.corvid.sessionTokens`), so the ledger alone restores it on `session/load`.

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use super::session::{Session, Spent};
use crate::config::Config;

/// Adds one request's usage to the session and returns the update that reports it.
pub fn record(session: &Session, config: &Config, input_tokens: u64, output_tokens: u64) -> acp::UsageUpdate {
    let spent = {
        let mut state = session.state();
        state.spent.tokens += input_tokens + output_tokens;
        if let Some(prices) = &config.prices {
            state.spent.cost += prices.cost(input_tokens, output_tokens);
        }
        state.spent
    };
    // How full the context is after this request: what was sent plus the answer.
    let mut update = acp::UsageUpdate::new(input_tokens + output_tokens, config.context_window);
    if let Some(prices) = &config.prices {
        update = update.cost(acp::Cost::new(spent.cost, prices.currency.clone()));
    }
    let mut meta = serde_json::Map::new();
    meta.insert("corvid".into(), serde_json::json!({ "sessionTokens": spent.tokens }));
    update.meta(meta)
}

/// The spending recorded in a stored `usage_update` payload.
pub fn spent_from(payload: &str) -> Spent {
    let Ok(v) = serde_json::from_str::<Value>(payload) else { return Spent::default() };
    Spent {
        tokens: v.pointer("/_meta/corvid/sessionTokens").and_then(Value::as_u64).unwrap_or(0),
        cost: v.pointer("/cost/amount").and_then(Value::as_f64).unwrap_or(0.0),
    }
}

/// Why the session may not make another model request, if a budget is used up.
pub fn exhausted(spent: Spent, config: &Config) -> Option<String> {
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
    if let (Some(max), Some(prices)) = (config.budget.max_cost, &config.prices)
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
