//! Tokens, the authorisation hook, TLS (certificates made here with rcgen; no key is ever
//! committed) and Unix sockets, all through the public API and all bounded in time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use wirecall::{
    Channel, ClientTlsConfig, Error, NegotiationError, PeerIdentity, RunningServer, Server,
    ServerBuilder, ServerTlsConfig,
};

/// A small service with one harmless and one dangerous method.
#[wirecall::service]
pub trait Vault {
    /// Reads a value.
    async fn read(&self, key: String) -> String;
    /// Deletes a value.
    async fn delete(&self, key: String) -> bool;
}

struct Memory;

impl Vault for Memory {
    async fn read(&self, key: String) -> String {
        format!("value of {key}")
    }

    async fn delete(&self, _key: String) -> bool {
        true
    }
}

/// Every test finishes within this, or fails.
const LIMIT: Duration = Duration::from_secs(20);
/// The connect timeout of clients that are expected to fail.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

async fn bounded<F: std::future::Future>(test: F) -> F::Output {
    tokio::time::timeout(LIMIT, test)
        .await
        .expect("the test finishes in time")
}

fn vault() -> ServerBuilder {
    Server::builder().serve(VaultServer::new(Memory))
}

fn client() -> wirecall::ChannelBuilder {
    Channel::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .reconnect(false)
}

async fn read(channel: Channel) -> Result<String, Error> {
    VaultClient::new(channel).read("a".to_owned()).await
}

/// A throw-away CA with a server certificate for `localhost`, and client certificates on
/// request.
struct Pki {
    ca_pem: String,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

struct Issued {
    cert_pem: String,
    key_pem: String,
    der: Vec<u8>,
}

impl Pki {
    fn new(name: &str) -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let ca = params.self_signed(&ca_key).unwrap();
        Self {
            ca_pem: ca.pem(),
            ca,
            ca_key,
        }
    }

    fn issue(&self, names: &[&str], expired: bool) -> Issued {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, &names[0]);
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
        }
    }

    fn server_tls(&self) -> ServerTlsConfig {
        let server = self.issue(&["localhost"], false);
        ServerTlsConfig::new(&server.cert_pem, &server.key_pem).unwrap()
    }

    fn client_tls(&self) -> ClientTlsConfig {
        ClientTlsConfig::new(&self.ca_pem, "localhost").unwrap()
    }
}

async fn tls_server(pki: &Pki) -> RunningServer {
    vault()
        .tls(pki.server_tls())
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

// ---- tokens -------------------------------------------------------------------------------

#[tokio::test]
async fn the_right_token_lets_calls_through() {
    bounded(async {
        let server = vault().token("s3cret").bind("127.0.0.1:0").await.unwrap();
        assert_eq!(server.token(), Some("s3cret"));
        let channel = client()
            .token("s3cret")
            .connect(server.local_addr())
            .await
            .unwrap();
        assert_eq!(read(channel).await.unwrap(), "value of a");
    })
    .await;
}

#[tokio::test]
async fn a_wrong_token_is_refused_before_any_call() {
    bounded(async {
        let server = vault().token("s3cret").bind("127.0.0.1:0").await.unwrap();
        let err = client()
            .token("guess")
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert_authentication_failed(&err);
    })
    .await;
}

#[tokio::test]
async fn a_missing_token_is_refused() {
    bounded(async {
        let server = vault().token("s3cret").bind("127.0.0.1:0").await.unwrap();
        let err = client().connect(server.local_addr()).await.unwrap_err();
        assert_authentication_failed(&err);
    })
    .await;
}

#[tokio::test]
async fn a_generated_token_is_handed_to_the_caller() {
    bounded(async {
        let server = vault().generated_token().bind("127.0.0.1:0").await.unwrap();
        let token = server.token().expect("a token was generated").to_owned();
        assert_eq!(token.len(), 64);
        let channel = client()
            .token(token)
            .connect(server.local_addr())
            .await
            .unwrap();
        assert_eq!(read(channel).await.unwrap(), "value of a");
    })
    .await;
}

#[tokio::test]
async fn the_token_never_shows_in_errors_or_debug_output() {
    bounded(async {
        let secret = "correct-horse-battery-staple";
        let server = vault().token(secret).bind("127.0.0.1:0").await.unwrap();
        let builder = client().token(secret);
        assert!(!format!("{builder:?}").contains(secret));
        assert!(!format!("{:?}", vault().token(secret)).contains(secret));
        assert!(!format!("{server:?}").contains(secret));
        let wrong = "correct-horse-battery-stapler";
        let err = client()
            .token(wrong)
            .connect(server.local_addr())
            .await
            .unwrap_err();
        for shown in [err.to_string(), format!("{err:?}")] {
            assert!(!shown.contains("correct-horse"), "{shown}");
        }
    })
    .await;
}

#[tokio::test]
async fn repeated_failures_from_one_address_are_rate_limited() {
    bounded(async {
        let server = vault().token("s3cret").bind("127.0.0.1:0").await.unwrap();
        for _ in 0..5 {
            let refused = client().token("guess").connect(server.local_addr()).await;
            assert!(refused.is_err());
        }
        // The right token is now refused too, for the rest of the 10 s window.
        let err = client()
            .token("s3cret")
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert_authentication_failed(&err);
    })
    .await;
}

#[tokio::test]
async fn the_failure_limit_is_configurable_and_slides() {
    bounded(async {
        let server = vault()
            .token("s3cret")
            .auth_failure_limit(2, Duration::from_millis(600))
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = server.local_addr();
        // Each attempt waits for its verdict in `connect` (with early calls, a refusal after a
        // success would surface on the first call instead).
        let client = || client().early_calls(false);
        assert!(client().token("guess").connect(addr).await.is_err());
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(client().token("guess").connect(addr).await.is_err());
        // Two failures within 600 ms: even the right token is refused.
        let err = client().token("s3cret").connect(addr).await.unwrap_err();
        assert_authentication_failed(&err);
        // The first failure leaves the window; the second still counts. A fixed window
        // started at the first failure would now be empty.
        tokio::time::sleep(Duration::from_millis(300)).await;
        client().token("s3cret").connect(addr).await.unwrap();
        assert!(client().token("guess").connect(addr).await.is_err());
        let err = client().token("s3cret").connect(addr).await.unwrap_err();
        assert_authentication_failed(&err);
    })
    .await;
}

#[tokio::test]
async fn a_token_server_reveals_no_codecs_before_authentication() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    bounded(async {
        let guarded = vault().token("s3cret").bind("127.0.0.1:0").await.unwrap();
        let open = vault().bind("127.0.0.1:0").await.unwrap();
        // A bad magic, an empty codec list and an unknown version: each is refused before
        // the token is read.
        let hellos: [&[u8]; 3] = [b"HTTP/1.1", b"WCAL\x01\x00\x00", b"WCAL\x00\x01\x01\x00"];
        for hello in hellos {
            for (server, lists_codecs) in [(&guarded, false), (&open, true)] {
                let mut socket = tokio::net::TcpStream::connect(server.local_addr())
                    .await
                    .unwrap();
                socket.write_all(hello).await.unwrap();
                // The server closes with part of the hello unread, which may reset the
                // connection: keep what arrived before that.
                let mut reply = Vec::new();
                let mut chunk = [0u8; 64];
                while let Ok(read @ 1..) = socket.read(&mut chunk).await {
                    reply.extend_from_slice(&chunk[..read]);
                }
                assert_eq!(&reply[..4], b"WCAL", "{reply:02x?}");
                assert_ne!(reply[5], 0, "refused: {reply:02x?}");
                let listed = reply[7];
                assert_eq!(listed > 0, lists_codecs, "{hello:02x?} -> {reply:02x?}");
                // Then the version-2 extension block, empty in a refusal.
                assert_eq!(&reply[8 + listed as usize..], [0, 0], "{reply:02x?}");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn an_overlong_token_is_a_configuration_error() {
    bounded(async {
        let server = vault().bind("127.0.0.1:0").await.unwrap();
        let err = client()
            .token("x".repeat(256))
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
        let err = vault().token("").bind("127.0.0.1:0").await.unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
    })
    .await;
}

// ---- the authorisation hook ---------------------------------------------------------------

#[tokio::test]
async fn the_authorisation_hook_refuses_one_method_and_allows_another() {
    bounded(async {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let server = vault()
            .token("s3cret")
            .authorize(move |peer, target| {
                log.lock().unwrap().push((
                    peer.token_authenticated,
                    target.service.to_owned(),
                    target.method.to_owned(),
                ));
                target.method != "delete"
            })
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let vault = VaultClient::new(
            client()
                .token("s3cret")
                .connect(server.local_addr())
                .await
                .unwrap(),
        );
        assert_eq!(vault.read("k".to_owned()).await.unwrap(), "value of k");
        let err = vault.delete("k".to_owned()).await.unwrap_err();
        assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
        assert!(err.to_string().contains("permission denied"), "{err}");
        // The connection is still good after a refusal.
        assert_eq!(vault.read("j".to_owned()).await.unwrap(), "value of j");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![
                (true, "Vault".to_owned(), "read".to_owned()),
                (true, "Vault".to_owned(), "delete".to_owned()),
                (true, "Vault".to_owned(), "read".to_owned()),
            ]
        );
    })
    .await;
}

// ---- TLS ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_token_travels_inside_tls() {
    bounded(async {
        let pki = Pki::new("test CA");
        let server = vault()
            .tls(pki.server_tls())
            .token("s3cret")
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let channel = client()
            .tls(pki.client_tls())
            .token("s3cret")
            .connect(server.local_addr())
            .await
            .unwrap();
        assert_eq!(read(channel).await.unwrap(), "value of a");
        // Known to understand early calls by now: `connect` returns after the TLS handshake
        // without the server hello, and the refusal of the token fails the first call.
        let channel = client()
            .tls(pki.client_tls())
            .token("guess")
            .connect(server.local_addr())
            .await
            .unwrap();
        assert_authentication_failed(&read(channel).await.unwrap_err());
        let err = client()
            .tls(pki.client_tls())
            .token("guess")
            .early_calls(false)
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert_authentication_failed(&err);
    })
    .await;
}

#[tokio::test]
async fn a_plain_client_to_a_tls_server_fails_clearly_without_hanging() {
    bounded(async {
        let pki = Pki::new("test CA");
        let server = tls_server(&pki).await;
        let started = Instant::now();
        let err = client().connect(server.local_addr()).await.unwrap_err();
        assert!(started.elapsed() < CONNECT_TIMEOUT + Duration::from_secs(1));
        assert!(
            matches!(err, Error::Negotiation(NegotiationError::PeerSpeaksTls(_))),
            "{err}"
        );
        assert!(err.to_string().contains("TLS"), "{err}");
    })
    .await;
}

#[tokio::test]
async fn a_tls_client_to_a_plain_server_fails_clearly_without_hanging() {
    bounded(async {
        let pki = Pki::new("test CA");
        let server = vault().bind("127.0.0.1:0").await.unwrap();
        let started = Instant::now();
        let err = client()
            .tls(pki.client_tls())
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert!(started.elapsed() < CONNECT_TIMEOUT + Duration::from_secs(1));
        assert!(matches!(err, Error::Tls(_)), "{err}");
    })
    .await;
}

#[tokio::test]
async fn an_expired_server_certificate_is_refused() {
    bounded(async {
        let pki = Pki::new("test CA");
        let expired = pki.issue(&["localhost"], true);
        let server = vault()
            .tls(ServerTlsConfig::new(&expired.cert_pem, &expired.key_pem).unwrap())
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let err = client()
            .tls(pki.client_tls())
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Tls(_)), "{err}");
        assert!(err.to_string().contains("expired"), "{err}");
    })
    .await;
}

#[tokio::test]
async fn a_server_certificate_from_an_untrusted_ca_is_refused() {
    bounded(async {
        let pki = Pki::new("test CA");
        let stranger = Pki::new("someone else's CA");
        let server = tls_server(&pki).await;
        let err = client()
            .tls(stranger.client_tls())
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Tls(_)), "{err}");
        assert!(err.to_string().contains("UnknownIssuer"), "{err}");
    })
    .await;
}

#[tokio::test]
async fn a_required_client_certificate_that_is_absent_is_refused() {
    bounded(async {
        let pki = Pki::new("test CA");
        let server = vault()
            .tls(
                pki.server_tls()
                    .require_client_certificate(&pki.ca_pem)
                    .unwrap(),
            )
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let err = client()
            .tls(pki.client_tls())
            .connect(server.local_addr())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Tls(_)), "{err}");
    })
    .await;
}

#[tokio::test]
async fn a_client_certificate_reaches_the_authorisation_hook() {
    bounded(async {
        let pki = Pki::new("test CA");
        let alice = pki.issue(&["alice"], false);
        let bob = pki.issue(&["bob"], false);
        let allowed = alice.der.clone();
        let seen: Arc<Mutex<Option<PeerIdentity>>> = Arc::default();
        let log = Arc::clone(&seen);
        let server = vault()
            .tls(
                pki.server_tls()
                    .require_client_certificate(&pki.ca_pem)
                    .unwrap(),
            )
            .authorize(move |peer, _| {
                *log.lock().unwrap() = Some(peer.clone());
                peer.tls_client_certificate.as_deref() == Some(&allowed[..])
            })
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let as_alice = client()
            .tls(
                pki.client_tls()
                    .client_certificate(&alice.cert_pem, &alice.key_pem)
                    .unwrap(),
            )
            .connect(server.local_addr())
            .await
            .unwrap();
        assert_eq!(read(as_alice).await.unwrap(), "value of a");
        let peer = seen.lock().unwrap().clone().unwrap();
        assert_eq!(peer.tls_client_certificate, Some(alice.der.clone()));
        assert!(!peer.token_authenticated);
        assert!(peer.peer_addr.is_some());

        let as_bob = client()
            .tls(
                pki.client_tls()
                    .client_certificate(&bob.cert_pem, &bob.key_pem)
                    .unwrap(),
            )
            .connect(server.local_addr())
            .await
            .unwrap();
        let err = read(as_bob).await.unwrap_err();
        assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
    })
    .await;
}

#[tokio::test]
async fn bad_pem_is_a_configuration_error() {
    let err = ServerTlsConfig::new("not a certificate", "not a key").unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    let err = ClientTlsConfig::new("", "localhost").unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
}

// ---- Unix sockets -------------------------------------------------------------------------

#[cfg(unix)]
#[tokio::test]
async fn a_unix_socket_round_trip_and_reconnect() {
    bounded(async {
        let path = std::env::temp_dir().join(format!("wirecall-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let server = vault().token("s3cret").bind_unix(&path).await.unwrap();
        assert_eq!(server.unix_path(), Some(path.as_path()));
        let channel = Channel::builder()
            .token("s3cret")
            .connect_unix(&path)
            .await
            .unwrap();
        assert_eq!(channel.peer_addr(), None);
        let users = VaultClient::new(channel);
        assert_eq!(users.read("u".to_owned()).await.unwrap(), "value of u");
        server.shutdown_within(Duration::from_secs(1)).await;
        assert!(!path.exists(), "the socket file is removed at shutdown");

        // A new server on the same path: the channel dials it again.
        let server = vault().token("s3cret").bind_unix(&path).await.unwrap();
        let mut answer = users.read("v".to_owned()).await;
        for _ in 0..50 {
            if answer.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            answer = users.read("v".to_owned()).await;
        }
        assert_eq!(answer.unwrap(), "value of v");
        server.shutdown_within(Duration::from_secs(1)).await;
    })
    .await;
}

/// The handshake was refused for the token, with the typed error a caller can match on.
fn assert_authentication_failed(err: &Error) {
    assert!(
        matches!(
            err,
            Error::Negotiation(NegotiationError::AuthenticationFailed)
        ),
        "{err}"
    );
}
