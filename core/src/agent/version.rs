//! Protocol version negotiation for one connection: which version an `initialize` gets, and
//! whether a repeated `initialize` is accepted (the rules of the TS SDK 2.4.0's
//! `AgentProtocolRouter`, `protocol-router.d.ts`).
//!
//! Pure decisions only, so every transport (stdio, memory, `corvid serve`, the bridge) gets the
//! same answer through `Agent::initialize`, the one place that calls them.

/// The highest version Corvid speaks: 2, the v2 preview (SDK 2.4.0's `experimental/v2`).
/// `[acp] protocol_v2 = false` keeps a deployment at 1 ([`V1_ONLY`]).
pub(crate) const HIGHEST: u16 = 2;

/// The highest version with v2 turned off.
pub(crate) const V1_ONLY: u16 = 1;

/// The version an `initialize` asking for `requested` gets: the highest Corvid speaks at or
/// below it, with v1-only endpoints' legacy fallback (0, or anything below 1) to 1.
pub(crate) fn select(requested: u16, highest: u16) -> u16 {
    requested.clamp(1, highest.max(1))
}

/// Why a repeated `initialize` is refused (-32600, invalid request).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RepeatRefused {
    /// A repeat must ask for the selected version or newer.
    #[error("this connection speaks protocol version {selected}; a repeated initialize cannot ask for {requested}")]
    Lower { selected: u16, requested: u16 },
    /// A repeat comes before any other request, or not at all.
    #[error("a repeated initialize must come before any other request")]
    AfterOtherRequests,
}

/// A repeated `initialize` on a v2 connection: accepted (same selected version) when it asks
/// for v2 or newer before any other request; a lower one is refused. A v1 connection keeps
/// today's behaviour (every repeat answered), so v1 clients see no change.
pub(crate) fn repeat(selected: u16, requested: u16, other_requests_seen: bool) -> Result<u16, RepeatRefused> {
    if selected < 2 {
        return Ok(select(requested, selected));
    }
    if requested < selected {
        return Err(RepeatRefused::Lower { selected, requested });
    }
    if other_requests_seen {
        return Err(RepeatRefused::AfterOtherRequests);
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_takes_the_highest_at_or_below_the_request() {
        assert_eq!(select(0, 2), 1, "v0 keeps today's answer");
        assert_eq!(select(1, 2), 1);
        assert_eq!(select(2, 2), 2);
        assert_eq!(select(7, 2), 2);
        assert_eq!(select(7, 1), 1, "a v1-only agent answers 1 to anything");
        assert_eq!(select(0, 1), 1);
    }

    #[test]
    fn by_default_2_and_newer_get_2_and_with_v2_off_everything_gets_1() {
        let by_default: Vec<u16> = [0, 1, 2, 3, u16::MAX].iter().map(|r| select(*r, HIGHEST)).collect();
        assert_eq!(by_default, [1, 1, 2, 2, 2]);
        for requested in [0, 1, 2, 3, u16::MAX] {
            assert_eq!(select(requested, V1_ONLY), 1);
        }
    }

    #[test]
    fn v2_repeats_follow_the_router_rules() {
        assert_eq!(repeat(2, 2, false), Ok(2));
        assert_eq!(repeat(2, 5, false), Ok(2));
        assert_eq!(repeat(2, 1, false), Err(RepeatRefused::Lower { selected: 2, requested: 1 }));
        assert_eq!(repeat(2, 2, true), Err(RepeatRefused::AfterOtherRequests));
    }

    #[test]
    fn v1_repeats_are_answered_as_before() {
        assert_eq!(repeat(1, 0, true), Ok(1));
        assert_eq!(repeat(1, 2, true), Ok(1));
    }
}
