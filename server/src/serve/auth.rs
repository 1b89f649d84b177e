//! Who may connect: the bearer token (read once, compared by digest in constant time) and
//! which addresses may be served with or without TLS and a token (fail closed).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context, bail};
use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

/// Subprotocol prefix carrying the token, for clients that cannot set headers (browsers).
const BEARER_PROTOCOL_PREFIX: &str = "bearer.";

/// The token from `--token-file` (trimmed) or `$CORVID_TOKEN`. Never logged.
pub fn read_token(file: Option<&Path>) -> anyhow::Result<Option<String>> {
    let token = match file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the token file {}", path.display()))?
                .trim()
                .to_string(),
        ),
        None => std::env::var("CORVID_TOKEN").ok().map(|t| t.trim().to_string()),
    };
    match token {
        Some(t) if t.is_empty() => bail!("the token is empty (check --token-file or CORVID_TOKEN)"),
        Some(t) if t.chars().any(|c| c.is_control() || c == ' ' || c == ',') => {
            bail!("the token must not contain spaces, commas or control characters")
        }
        other => Ok(other),
    }
}

/// Fail closed: what may listen where.
pub(super) fn check_exposure(
    addrs: &[SocketAddr],
    tls: bool,
    token: bool,
    no_auth: bool,
    listen: &str,
) -> anyhow::Result<()> {
    let loopback = addrs.iter().all(|a| a.ip().is_loopback());
    if !loopback {
        if no_auth {
            bail!(
                "refusing to serve {listen} with --no-auth: it is not a loopback address (--no-auth is loopback-only)"
            );
        }
        if !(tls && token) {
            bail!(
                "refusing to serve {listen} without TLS and a token: a non-loopback address needs both \
                 --tls-cert/--tls-key and --token-file (or CORVID_TOKEN)"
            );
        }
    } else if !token && !no_auth {
        bail!(
            "refusing to serve {listen} without a token: give --token-file (or CORVID_TOKEN), or pass --no-auth \
             to accept any local client"
        );
    }
    Ok(())
}

pub(super) fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Compares the SHA-256 digests (fixed length, whatever the token's) with `subtle`'s
/// constant-time equality, so timing says nothing about the token.
pub(super) fn token_matches(expected: &[u8; 32], presented: &str) -> bool {
    use subtle::ConstantTimeEq;
    let got = digest(presented.as_bytes());
    expected[..].ct_eq(&got[..]).into()
}

/// Every token the request presents: `Authorization: Bearer`, a `bearer.<token>`
/// subprotocol, or `?token=`.
pub(super) fn presented_tokens<'a>(headers: &'a HeaderMap, query: &'a HashMap<String, String>) -> Vec<&'a str> {
    let mut tokens = Vec::new();
    for value in headers.get_all(header::AUTHORIZATION) {
        if let Ok(v) = value.to_str()
            && let Some((scheme, t)) = v.split_once(' ')
            && scheme.eq_ignore_ascii_case("bearer")
        {
            tokens.push(t.trim());
        }
    }
    for value in headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        if let Ok(v) = value.to_str() {
            tokens.extend(v.split(',').filter_map(|p| p.trim().strip_prefix(BEARER_PROTOCOL_PREFIX)));
        }
    }
    if let Some(t) = query.get("token") {
        tokens.push(t.as_str());
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> Vec<SocketAddr> {
        vec![s.parse().expect("address")]
    }

    #[test]
    fn exposure_fails_closed() {
        let public = addr("0.0.0.0:0");
        assert!(check_exposure(&public, false, false, false, "x").is_err());
        assert!(check_exposure(&public, true, false, false, "x").is_err());
        assert!(check_exposure(&public, false, true, false, "x").is_err());
        assert!(check_exposure(&public, true, true, true, "x").is_err());
        assert!(check_exposure(&public, true, true, false, "x").is_ok());
        let local = addr("127.0.0.1:0");
        assert!(check_exposure(&local, false, false, false, "x").is_err());
        assert!(check_exposure(&local, false, false, true, "x").is_ok());
        assert!(check_exposure(&local, false, true, false, "x").is_ok());
        assert!(check_exposure(&addr("[::1]:0"), false, true, false, "x").is_ok());
    }

    #[test]
    fn tokens_compare_by_digest() {
        let expected = digest(b"s3cret");
        assert!(token_matches(&expected, "s3cret"));
        assert!(!token_matches(&expected, "s3cre"));
        assert!(!token_matches(&expected, ""));
        assert!(!token_matches(&expected, "s3cret\0"));
        assert!(!token_matches(&expected, &"s3cret".repeat(1000)), "any length compares as a 32-byte digest");
        // Tokens that differ only in their last byte take the same path as any other mismatch.
        assert!(!token_matches(&digest(b"aaaaaaaa"), "aaaaaaab"));
    }

    #[test]
    fn tokens_come_from_header_subprotocol_and_query() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer a".parse().expect("header"));
        headers.insert(header::SEC_WEBSOCKET_PROTOCOL, "corvid.acp.v1, bearer.b".parse().expect("header"));
        let query = HashMap::from([("token".to_string(), "c".to_string())]);
        assert_eq!(presented_tokens(&headers, &query), vec!["a", "b", "c"]);
    }
}
