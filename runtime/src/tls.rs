//! TLS with rustls (ring provider), ALPN id `wirecall`. A TLS stream is one more
//! [`Transport`](crate::transport::Transport): framing and negotiation run unchanged on top.
//!
//! ```no_run
//! # fn run(cert_pem: &[u8], key_pem: &[u8], ca_pem: &[u8]) -> Result<(), wirecall_runtime::Error> {
//! use wirecall_runtime::tls::{ClientTlsConfig, ServerTlsConfig};
//!
//! let server_tls = ServerTlsConfig::new(cert_pem, key_pem)?;
//! let client_tls = ClientTlsConfig::new(ca_pem, "localhost")?;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::error::Error;

/// The ALPN protocol id both sides announce.
pub const ALPN_PROTOCOL: &[u8] = b"wirecall";

/// The server's certificate chain and key, and optionally the CA that client certificates
/// must chain to (mutual TLS).
#[derive(Clone)]
pub struct ServerTlsConfig {
    cert_chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    client_roots: Option<Arc<RootCertStore>>,
}

impl fmt::Debug for ServerTlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTlsConfig")
            .field("certificates", &self.cert_chain.len())
            .field("key", &"<redacted>")
            .field("client_certificate_required", &self.client_roots.is_some())
            .finish()
    }
}

impl ServerTlsConfig {
    /// The server's certificate chain (leaf first) and private key, both PEM.
    pub fn new(cert_chain_pem: impl AsRef<[u8]>, key_pem: impl AsRef<[u8]>) -> Result<Self, Error> {
        let config = Self {
            cert_chain: certificates(cert_chain_pem.as_ref(), "the server certificate chain")?,
            key: Arc::new(private_key(key_pem.as_ref())?),
            client_roots: None,
        };
        config.acceptor(false)?;
        Ok(config)
    }

    /// Requires every client to present a certificate that chains to a CA in `ca_pem`; the
    /// leaf reaches the authorisation hook as
    /// [`PeerIdentity::tls_client_certificate`](crate::server::PeerIdentity).
    pub fn require_client_certificate(mut self, ca_pem: impl AsRef<[u8]>) -> Result<Self, Error> {
        self.client_roots = Some(Arc::new(roots(ca_pem.as_ref(), "the client CA")?));
        self.acceptor(false)?;
        Ok(self)
    }

    /// The acceptor; `h2_too` also offers HTTP/2 by ALPN, for the gRPC door: a client that
    /// asks for `h2` is a gRPC caller, one that asks for `wirecall` (or for nothing) a wirecall
    /// one.
    pub(crate) fn acceptor(&self, h2_too: bool) -> Result<TlsAcceptor, Error> {
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(config_error)?;
        let builder = match &self.client_roots {
            Some(roots) => {
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::clone(roots), provider())
                        .build()
                        .map_err(|err| Error::Config(format!("client CA: {err}")))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(self.cert_chain.clone(), self.key.clone_key())
            .map_err(config_error)?;
        config.alpn_protocols = vec![ALPN_PROTOCOL.to_vec()];
        if h2_too {
            config.alpn_protocols.push(b"h2".to_vec());
        }
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// The CA a client trusts, the name it expects in the server's certificate, and optionally
/// its own certificate for mutual TLS.
#[derive(Clone)]
pub struct ClientTlsConfig {
    roots: Arc<RootCertStore>,
    server_name: ServerName<'static>,
    identity: Option<(Vec<CertificateDer<'static>>, Arc<PrivateKeyDer<'static>>)>,
    connector: TlsConnector,
}

impl fmt::Debug for ClientTlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTlsConfig")
            .field("server_name", &self.server_name)
            .field("client_certificate", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientTlsConfig {
    /// Trusts the CA certificates in `ca_pem` and expects `server_name` (a DNS name or an IP
    /// address) in the server's certificate.
    pub fn new(ca_pem: impl AsRef<[u8]>, server_name: impl Into<String>) -> Result<Self, Error> {
        let server_name = server_name.into();
        let server_name = ServerName::try_from(server_name.clone())
            .map_err(|_| Error::Config(format!("{server_name:?} is not a valid server name")))?;
        let roots = Arc::new(roots(ca_pem.as_ref(), "the CA")?);
        let connector = connector(&roots, None)?;
        Ok(Self {
            roots,
            server_name,
            identity: None,
            connector,
        })
    }

    /// Presents this certificate chain (leaf first) and key, both PEM, to servers that
    /// require client certificates.
    pub fn client_certificate(
        mut self,
        cert_pem: impl AsRef<[u8]>,
        key_pem: impl AsRef<[u8]>,
    ) -> Result<Self, Error> {
        let identity = (
            certificates(cert_pem.as_ref(), "the client certificate")?,
            Arc::new(private_key(key_pem.as_ref())?),
        );
        self.connector = connector(&self.roots, Some(&identity))?;
        self.identity = Some(identity);
        Ok(self)
    }

    pub(crate) fn connector(&self) -> &TlsConnector {
        &self.connector
    }

    pub(crate) fn server_name(&self) -> ServerName<'static> {
        self.server_name.clone()
    }
}

type Identity = (Vec<CertificateDer<'static>>, Arc<PrivateKeyDer<'static>>);

fn connector(
    roots: &Arc<RootCertStore>,
    identity: Option<&Identity>,
) -> Result<TlsConnector, Error> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(config_error)?
        .with_root_certificates(Arc::clone(roots));
    let mut config = match identity {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(config_error)?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![ALPN_PROTOCOL.to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

fn config_error(err: rustls::Error) -> Error {
    Error::Config(format!("TLS: {err}"))
}

fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| Error::Config(format!("{what} is not valid PEM: {err}")))?;
    if certs.is_empty() {
        return Err(Error::Config(format!("{what} contains no certificate")));
    }
    Ok(certs)
}

fn private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, Error> {
    // The message never echoes the PEM: it is a secret.
    PrivateKeyDer::from_pem_slice(pem)
        .map_err(|err| Error::Config(format!("the private key is not a valid PEM key: {err}")))
}

fn roots(pem: &[u8], what: &str) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(pem, what)? {
        roots
            .add(cert)
            .map_err(|err| Error::Config(format!("{what}: {err}")))?;
    }
    Ok(roots)
}
