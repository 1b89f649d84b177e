//! Certificate verification for the model providers' HTTPS, with the platform's trust store
//! loaded at the first TLS handshake instead of when the HTTP client is built.
//!
//! Why: reqwest's verifier reads the whole trust store when the client is built (on Debian the
//! bundle and then every file of `/etc/ssl/certs` again, ~300 files), which made the first
//! `session/new` of every process ~6 ms slower. A provider reached over plain HTTP (a local
//! Ollama, a loopback proxy) never needs it; one reached over HTTPS pays it once, during its
//! first connection, next to the network round trip. The verification itself is the same
//! platform verifier reqwest uses.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, Error, SignatureScheme};
use rustls_platform_verifier::Verifier;

/// The rustls configuration for the HTTP client: the platform's roots (loaded lazily), and
/// HTTP/1.1 offered by ALPN, the one HTTP version the client speaks (see the workspace's
/// reqwest features): a server must not pick HTTP/2 on a connection we cannot read it on.
pub(crate) fn client_config() -> Result<rustls::ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(LazyPlatformVerifier { provider: provider.clone(), inner: OnceLock::new() });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform verifier, built (trust store read) on first use.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    /// A store that cannot be read fails every handshake with the same error, as the eager
    /// verifier would have failed the client.
    inner: OnceLock<Result<Verifier, Error>>,
}

impl LazyPlatformVerifier {
    fn verifier(&self) -> Result<&Verifier, Error> {
        self.inner.get_or_init(|| Verifier::new(self.provider.clone())).as_ref().map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        self.verifier()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    /// Asked for every ClientHello, before any certificate: answered from the crypto provider
    /// (what the platform verifier answers too) so that it does not load the store.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn building_the_config_does_not_read_the_trust_store() {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let lazy = LazyPlatformVerifier { provider, inner: OnceLock::new() };
        assert!(!lazy.supported_verify_schemes().is_empty());
        assert!(lazy.inner.get().is_none(), "the ClientHello's schemes must not load the store");
        let _ = lazy.verifier();
        assert!(lazy.inner.get().is_some());
        assert!(client_config().is_ok());
    }
}
