//! Where a URL leads: the addresses its host resolves to, and whether any of them is the
//! user's own (loopback, a private network, link-local). Such a fetch reaches services that
//! trust the machine they run beside (a database's admin page, a router, a cloud's metadata
//! endpoint), so it always asks; and the connection is made only to the addresses checked here
//! (`reqwest`'s per-name override), so a name that resolves elsewhere a moment later (DNS
//! rebinding) cannot slip past the question.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::Url;

/// How long a host's resolution may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// A URL's host, resolved.
#[derive(Debug, Clone)]
pub struct Target {
    /// `host:port`, what the question names and an "always" answer is scoped to.
    pub host: String,
    /// The host's name when it is one (an IP literal needs no resolving), for the override.
    pub name: Option<String>,
    pub addrs: Vec<SocketAddr>,
    /// Any of the addresses is the user's own (or the name says so: `localhost`).
    pub local: bool,
}

/// Why a URL cannot be fetched at all.
#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    #[error("only http and https URLs can be fetched, not `{0}:`")]
    Scheme(String),
    #[error("the URL names no host")]
    NoHost,
    #[error("{host} could not be resolved: {reason}")]
    Resolve { host: String, reason: String },
}

/// `host:port` of a URL (the port its scheme implies when none is written).
pub fn host_of(url: &Url) -> Result<String, AddressError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(AddressError::Scheme(url.scheme().to_string()));
    }
    let host = url.host_str().filter(|h| !h.is_empty()).ok_or(AddressError::NoHost)?;
    let port = url.port_or_known_default().unwrap_or(80);
    Ok(format!("{host}:{port}"))
}

/// Whether the host is the user's own by what it is written as, before any resolving: an IP
/// literal of such an address, or `localhost` and names under it (RFC 6761).
pub fn local_by_name(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => is_local(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_local(IpAddr::V6(ip)),
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

/// Resolves the URL's host (an IP literal as it is).
pub async fn resolve(url: &Url) -> Result<Target, AddressError> {
    let host = host_of(url)?;
    let port = url.port_or_known_default().unwrap_or(80);
    let (name, addrs) = match url.host() {
        Some(url::Host::Ipv4(ip)) => (None, vec![SocketAddr::new(IpAddr::V4(ip), port)]),
        Some(url::Host::Ipv6(ip)) => (None, vec![SocketAddr::new(IpAddr::V6(ip), port)]),
        Some(url::Host::Domain(name)) => {
            let failed = |reason: String| AddressError::Resolve { host: name.to_string(), reason };
            let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, port)))
                .await
                .map_err(|_| failed(format!("no answer within {} s", RESOLVE_TIMEOUT.as_secs())))?
                .map_err(|e| failed(e.to_string()))?;
            let addrs: Vec<SocketAddr> = found.collect();
            if addrs.is_empty() {
                return Err(failed("no addresses".into()));
            }
            (Some(name.to_string()), addrs)
        }
        None => return Err(AddressError::NoHost),
    };
    let local = local_by_name(url) || addrs.iter().any(|a| is_local(a.ip()));
    Ok(Target { host, name, addrs, local })
}

/// Whether an address is the user's own rather than the public internet's: loopback,
/// unspecified (`0.0.0.0` reaches the local host), private networks (RFC 1918, IPv6 unique
/// local), carrier-grade NAT (VPNs such as Tailscale live there), link-local (cloud metadata
/// endpoints), multicast and broadcast. IPv4 addresses carried in IPv6 (mapped, NAT64) count as
/// the address they carry.
pub fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_local_v4(v4),
        IpAddr::V6(v6) => is_local_v6(v6),
    }
}

fn is_local_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        // 100.64.0.0/10, shared address space (carrier-grade NAT, VPN overlays).
        || (a == 100 && (64..128).contains(&b))
        // 198.18.0.0/15, network benchmarking: used inside some local networks.
        || (a == 198 && (b == 18 || b == 19))
}

fn is_local_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_local_v4(v4);
    }
    let segments = ip.segments();
    // 64:ff9b::/96, NAT64: the IPv4 address in the last 32 bits.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = segments;
        return is_local_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    }
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // fc00::/7, unique local.
        || (segments[0] & 0xfe00) == 0xfc00
        // fe80::/10, link-local; fec0::/10, the old site-local.
        || (segments[0] & 0xffc0) == 0xfe80
        || (segments[0] & 0xffc0) == 0xfec0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(s: &str) -> bool {
        is_local(s.parse().expect("an address"))
    }

    #[test]
    fn the_user_s_own_addresses_are_told_from_public_ones() {
        for ip in [
            "127.0.0.1",
            "127.8.9.10",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "::ffff:127.0.0.1",
            "::ffff:192.168.0.1",
            "64:ff9b::a00:1",
            "ff02::1",
        ] {
            assert!(local(ip), "{ip} is the user's own");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.255.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2001:db8::1",
        ] {
            assert!(!local(ip), "{ip} is public");
        }
    }

    #[test]
    fn hosts_are_named_with_their_port_and_localhost_is_local_by_name() {
        let url = |s: &str| Url::parse(s).expect("a URL");
        assert_eq!(host_of(&url("https://example.com/a")).ok().as_deref(), Some("example.com:443"));
        assert_eq!(host_of(&url("http://example.com:8080")).ok().as_deref(), Some("example.com:8080"));
        assert_eq!(host_of(&url("http://[::1]:3000/")).ok().as_deref(), Some("[::1]:3000"));
        assert!(matches!(host_of(&url("file:///etc/passwd")), Err(AddressError::Scheme(s)) if s == "file"));
        assert!(matches!(host_of(&url("ftp://example.com/")), Err(AddressError::Scheme(_))));
        for local in
            ["http://localhost:1/", "http://LOCALHOST./", "http://app.localhost/", "http://127.0.0.1/", "http://[::1]/"]
        {
            assert!(local_by_name(&url(local)), "{local}");
        }
        for public in ["http://example.com/", "http://localhost.example.com/", "http://8.8.8.8/"] {
            assert!(!local_by_name(&url(public)), "{public}");
        }
        // Decimal and hex IPv4 spellings are parsed by the URL parser into the address.
        assert!(local_by_name(&url("http://2130706433/")), "127.0.0.1 written as a number");
        assert!(local_by_name(&url("http://0x7f.1/")));
    }

    #[tokio::test]
    async fn literal_addresses_resolve_to_themselves() {
        let target = resolve(&Url::parse("http://127.0.0.1:8080/x").expect("a URL")).await.expect("resolved");
        assert!(target.local && target.name.is_none());
        assert_eq!(target.addrs, ["127.0.0.1:8080".parse::<SocketAddr>().expect("addr")]);
        let target = resolve(&Url::parse("http://localhost:9/").expect("a URL")).await.expect("resolved");
        assert!(target.local && target.name.as_deref() == Some("localhost"));
    }
}
