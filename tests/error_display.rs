//! Error messages print each cause once: a wrapped error is either in its parent's message or
//! returned by `source()`, never both (Rust API guidelines), so `anyhow`'s `{:#}` and a
//! source-chain walk do not repeat it.

use wirecall::{Channel, Codec, Error};

/// The chain as `{:#}` would print it, failing if a cause is repeated.
fn assert_each_cause_once(error: &(dyn std::error::Error + 'static)) -> String {
    let mut messages = vec![error.to_string()];
    let mut current = error.source();
    while let Some(source) = current {
        let text = source.to_string();
        let parent = messages.last().expect("a parent");
        assert!(
            !parent.contains(&text),
            "{parent:?} repeats its source {text:?}"
        );
        messages.push(text);
        current = source.source();
    }
    messages.join(": ")
}

#[tokio::test]
async fn a_refused_connection_names_the_os_error_once() {
    // A port that was just free: nothing listens there.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = Channel::connect(addr).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    let chain = assert_each_cause_once(&err);
    assert!(chain.contains("could not connect to"), "{chain}");
    assert!(chain.to_lowercase().contains("refused"), "{chain}");
}

#[test]
fn codec_errors_name_the_library_error_once() {
    #[wirecall::message]
    struct Probe {
        value: u32,
    }
    for codec in [Codec::Json, Codec::MessagePack, Codec::Protobuf] {
        let err = codec.decode::<Probe>(&[0xff, 0xff, 0xff]).unwrap_err();
        let chain = assert_each_cause_once(&err);
        assert!(chain.contains("decoding failed: "), "{chain}");
        let err = Error::from(err);
        assert_each_cause_once(&err);
    }
}

#[tokio::test]
async fn a_failed_handshake_names_its_cause_once() {
    // A listener that answers the hello with garbage.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let (mut stream, _) = listener.accept().await.unwrap();
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
    });
    let err = Channel::connect(addr).await.unwrap_err();
    assert!(matches!(err, Error::Negotiation(_)), "{err:?}");
    assert_each_cause_once(&err);
}

#[test]
fn an_open_circuit_says_which_method_and_when_calls_go_through_again() {
    let method = wirecall::method_id("Users", "find");
    let open = Error::CircuitOpen {
        method,
        endpoint: Some("127.0.0.1:7000".to_owned()),
        retry_after: std::time::Duration::from_secs(5),
    };
    let chain = assert_each_cause_once(&open);
    assert!(
        chain.contains(&format!("method {method} on endpoint 127.0.0.1:7000")),
        "{chain}"
    );
    assert!(chain.contains("fail fast for another 5s"), "{chain}");
    let testing = Error::CircuitOpen {
        method,
        endpoint: None,
        retry_after: std::time::Duration::ZERO,
    };
    let chain = assert_each_cause_once(&testing);
    assert!(chain.contains("trial calls"), "{chain}");
    assert!(!chain.contains("endpoint 1"), "{chain}");
}

#[test]
fn a_refused_handshake_names_its_cause_first() {
    use wirecall::NegotiationError;
    let cases = [
        (
            NegotiationError::AuthenticationFailed,
            "authentication failed: ",
        ),
        (NegotiationError::Busy, "the server is busy "),
        (
            NegotiationError::PeerSpeaksTls(*b"\x16\x03\x01\x00"),
            "the peer speaks TLS: ",
        ),
        (
            NegotiationError::NothingToOffer,
            "codec negotiation failed: ",
        ),
        (NegotiationError::TimedOut, "handshake failed: "),
        (NegotiationError::BadMagic(*b"HTTP"), "handshake failed: "),
    ];
    for (refusal, start) in cases {
        let err = Error::from(refusal);
        let chain = assert_each_cause_once(&err);
        assert!(
            chain.starts_with(start),
            "{chain:?} should start with {start:?}"
        );
        if !start.starts_with("codec") {
            assert!(!chain.contains("codec negotiation"), "{chain}");
        }
    }
}

#[tokio::test]
async fn a_wrong_token_reads_as_an_authentication_failure() {
    #[wirecall::service]
    trait Ping {
        async fn ping(&self) -> u32;
    }
    struct Pong;
    impl Ping for Pong {
        async fn ping(&self) -> u32 {
            1
        }
    }
    let server = wirecall::Server::builder()
        .serve(PingServer::new(Pong))
        .token("the right one")
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let err = Channel::builder()
        .token("a wrong one")
        .connect(server.local_addr())
        .await
        .unwrap_err();
    let message = format!("{err}");
    assert!(message.starts_with("authentication failed"), "{message}");
    server.shutdown().await;
}
