//! TLS for the servers (`vouch serve --tls-cert FILE --tls-key FILE`, and the gateway's
//! `tls_cert` / `tls_key`): rustls with the ring provider, and self-signed pairs for
//! `vouch tls-cert`. The clients' TLS (to a provider, to S3) takes the same provider once
//! [`install_provider`] has made it the process's default.
//!
//! Bearer tokens and S3 signatures travel in every request: over `http://` anyone on the path
//! reads them, so anything beyond loopback should be served over TLS. A client pins the
//! server's certificate (or its CA) and trusts nothing else.

use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A server's TLS settings, ready to accept connections.
pub type TlsConfig = Arc<rustls::ServerConfig>;

/// Why a TLS configuration or certificate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read { path: std::path::PathBuf, source: std::io::Error },
    #[error("{what}: {detail}")]
    Pem { what: &'static str, detail: String },
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(String),
    #[error("cannot make a certificate: {0}")]
    Generate(String),
}

/// The TLS configuration of a certificate chain and its private key, both PEM files.
pub fn load(cert: &Path, key: &Path) -> Result<TlsConfig, TlsError> {
    let read = |path: &Path| std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source });
    from_pem(&read(cert)?, &read(key)?)
}

/// The TLS configuration of a PEM certificate chain (leaf first) and PEM private key.
pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsConfig, TlsError> {
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem { what: "certificate", detail: e.to_string() })?;
    if certs.is_empty() {
        return Err(TlsError::Pem { what: "certificate", detail: "no CERTIFICATE section".into() });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| TlsError::Pem { what: "private key", detail: e.to_string() })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Makes ring the crypto of every TLS connection this process opens as a client: the HTTP
/// client (reqwest, in the vouch client and in object_store's S3 client) has no provider of
/// its own and takes rustls's process default. Call it before such a client is built; it is
/// cheap and does nothing once a default is set.
pub fn install_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err: another thread installed one in between, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A self-signed certificate and its private key (PEM), valid for `hosts` (DNS names or IP
/// addresses). Clients pin the certificate itself: `vouch init --ca cert.pem`.
pub fn self_signed(hosts: &[String]) -> Result<(String, String), TlsError> {
    if hosts.is_empty() {
        return Err(TlsError::Generate("name at least one host".into()));
    }
    let made = rcgen::generate_simple_self_signed(hosts.to_vec()).map_err(|e| TlsError::Generate(e.to_string()))?;
    Ok((made.cert.pem(), made.signing_key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_pair_loads_and_garbage_is_a_typed_error() {
        let (cert, key) = self_signed(&["localhost".into(), "127.0.0.1".into()]).unwrap();
        from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
        assert!(matches!(from_pem(b"not pem", key.as_bytes()), Err(TlsError::Pem { what: "certificate", .. })));
        assert!(matches!(from_pem(cert.as_bytes(), b""), Err(TlsError::Pem { what: "private key", .. })));
        let (_, other_key) = self_signed(&["localhost".into()]).unwrap();
        assert!(matches!(from_pem(cert.as_bytes(), other_key.as_bytes()), Err(TlsError::Config(_))));
        assert!(matches!(self_signed(&[]), Err(TlsError::Generate(_))));
    }
}
