//! Panics, deadlines, hostile peers, and graceful shutdown.

mod common;

use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirecall::{Channel, Codec, Error, Server};

#[tokio::test]
async fn a_panicking_handler_fails_only_its_call() {
    let (server, _) = start_server().await;
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    let err = lab.panic_now("boom".to_owned()).await.unwrap_err();
    match err {
        Error::HandlerPanicked { message, .. } => assert_eq!(message, "boom"),
        other => panic!("expected HandlerPanicked, got {other:?}"),
    }
    assert_eq!(lab.add(1, 2).await.unwrap(), 3);
}

#[tokio::test]
async fn a_client_deadline_ends_the_call_early_and_the_server_stops_the_work() {
    let (server, lab_state) = start_server().await;
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    let started = Instant::now();
    let err = lab
        .with_timeout(Duration::from_millis(50))
        .sleep_ms(60_000)
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // Far sooner than the handler would have finished.
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    // The server reads the request before the client's Cancel, and its own clock for the
    // deadline starts when it reads the request: the handler starts however late that is.
    eventually("the call reaches its handler", || {
        lab_state.sleeps.started() == 1
    })
    .await;
    // The abandoned handler is stopped, not left to run to completion, and the connection is
    // still good.
    eventually("the handler is stopped", || lab_state.sleeps.stopped() == 1).await;
    assert_eq!(lab_state.sleeps.finished(), 0);
    assert_eq!(lab.add(2, 2).await.unwrap(), 4);
}

#[tokio::test]
async fn dropping_a_call_future_cancels_the_handler() {
    let (server, lab_state) = start_server().await;
    let lab = LabClient::new(
        Channel::builder()
            .without_timeout()
            .connect(server.local_addr())
            .await
            .unwrap(),
    );
    let call = tokio::spawn({
        let lab = lab.clone();
        async move { lab.sleep_ms(60_000).await }
    });
    eventually("the call reaches its handler", || {
        lab_state.sleeps.started() == 1
    })
    .await;
    // Aborting the task drops the call future: that is the cancellation under test.
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_eq!(lab.channel().in_flight(), 0);
    eventually("the handler is stopped", || lab_state.sleeps.stopped() == 1).await;
    assert_eq!(lab_state.sleeps.finished(), 0);
}

#[tokio::test]
async fn unknown_methods_are_reported_by_id() {
    // A server that only has UserService, called through the Lab client.
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    let err = lab.add(1, 1).await.unwrap_err();
    assert!(matches!(err, Error::UnknownMethod { .. }), "{err:?}");
}

#[tokio::test]
async fn an_oversized_call_is_refused_locally_before_sending() {
    let (server, _) = start_server().await;
    let channel = Channel::builder()
        .max_frame_len(1024)
        .connect(server.local_addr())
        .await
        .unwrap();
    let users = UserServiceClient::new(channel);
    let err = users.get_user_id("x".repeat(4096)).await.unwrap_err();
    assert!(
        matches!(err, Error::FrameTooLarge { max: 1024, .. }),
        "{err:?}"
    );
    assert_eq!(users.get_user_id("abc".to_owned()).await.unwrap(), 3);
}

#[tokio::test]
async fn an_oversized_reply_becomes_an_error_for_that_call() {
    let lab_state = std::sync::Arc::new(LabImpl::default());
    let server = Server::builder()
        .serve(LabServer::new(lab_state))
        .max_frame_len(64 * 1024)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    let err = lab.blob(1 << 20).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Remote {
                code: wirecall::ErrorCode::FrameTooLarge,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(lab.blob(16).await.unwrap().len(), 16);
}

/// The client announces its frame limit in its hello (protocol version 2): a reply larger
/// than the client accepts fails that one call on the server's side, with the limit named,
/// and the connection carries on. (Before the announcement the server sent the reply, the
/// client's reader refused the frame and every call on the connection failed.)
#[tokio::test]
async fn a_reply_over_the_clients_announced_limit_fails_only_that_call() {
    let lab_state = std::sync::Arc::new(LabImpl::default());
    let server = Server::builder()
        .serve(LabServer::new(lab_state))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .codec(Codec::MessagePack)
        .max_frame_len(4096)
        // Without reconnection a closed connection would fail the calls after the big one.
        .reconnect(false)
        .connect(server.local_addr())
        .await
        .unwrap();
    let lab = LabClient::new(channel);
    let slow = lab.blob(16);
    let (big, small) = tokio::join!(lab.blob(64 * 1024), slow);
    match big.unwrap_err() {
        Error::Remote {
            code: wirecall::ErrorCode::FrameTooLarge,
            message,
            ..
        } => assert!(message.contains("4096"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(small.unwrap().len(), 16);
    assert_eq!(lab.blob(1000).await.unwrap().len(), 1000);
}

/// The server announces its limit too: a request over it fails before it is sent, even when
/// the channel's own limit is larger.
#[tokio::test]
async fn a_request_over_the_servers_announced_limit_fails_locally() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .max_frame_len(2048)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::connect(server.local_addr()).await.unwrap();
    let users = UserServiceClient::new(channel);
    let err = users.get_user_id("x".repeat(4096)).await.unwrap_err();
    assert!(
        matches!(err, Error::FrameTooLarge { max: 2048, .. }),
        "{err:?}"
    );
    assert_eq!(users.get_user_id("abc".to_owned()).await.unwrap(), 3);
}

/// Reads everything the server sends until it closes, failing if that takes over 5 s.
async fn read_until_closed(socket: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut received))
        .await
        .expect("the server closes the connection")
        .unwrap_or_default();
    received
}

async fn handshaken_socket(addr: std::net::SocketAddr) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(b"WCAL\x01\x01\x02\x00").await.unwrap();
    let mut hello = [0u8; 11];
    socket.read_exact(&mut hello).await.unwrap();
    assert_eq!(
        &hello[..8],
        b"WCAL\x01\x00\x02\x03",
        "accepted with msgpack"
    );
    socket
}

async fn assert_still_serving(addr: std::net::SocketAddr) {
    let users = UserServiceClient::connect(addr).await.unwrap();
    assert_eq!(users.get_user(fanly()).await.unwrap(), fanly());
}

#[tokio::test]
async fn a_peer_with_the_wrong_magic_gets_a_malformed_verdict_and_a_close() {
    let (server, _) = start_server().await;
    let mut socket = TcpStream::connect(server.local_addr()).await.unwrap();
    socket.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let received = read_until_closed(&mut socket).await;
    // WCAL, the server's version, status 3 (malformed), no codec, then the server's codecs.
    assert_eq!(&received[..4], b"WCAL");
    assert_eq!(received[4], wirecall::PROTOCOL_VERSION);
    assert_eq!(&received[5..8], b"\x03\x00\x03");
    assert_still_serving(server.local_addr()).await;
}

#[tokio::test]
async fn a_peer_sending_garbage_frames_gets_an_error_frame_and_a_close() {
    let (server, _) = start_server().await;
    let mut socket = handshaken_socket(server.local_addr()).await;
    // A plausible length, then a frame kind that does not exist.
    let mut garbage = vec![0, 0, 0, 22, 99];
    garbage.extend_from_slice(&[0xAB; 21]);
    socket.write_all(&garbage).await.unwrap();
    let received = read_until_closed(&mut socket).await;
    assert_eq!(received[4], 3, "an Error frame");
    assert_eq!(
        &received[6..14],
        &[0; 8],
        "for the whole connection (request id 0)"
    );
    assert_eq!(&received[26..28], &[0, 6], "code 6: protocol violation");
    assert_still_serving(server.local_addr()).await;
}

#[tokio::test]
async fn a_four_gib_length_prefix_is_refused_without_allocating() {
    let (server, _) = start_server().await;
    let mut socket = handshaken_socket(server.local_addr()).await;
    socket.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
    let received = read_until_closed(&mut socket).await;
    assert_eq!(received[4], 3, "an Error frame");
    assert_eq!(&received[26..28], &[0, 5], "code 5: frame too large");
    let message = String::from_utf8_lossy(&received[28..]);
    assert!(message.contains("4294967295"), "{message}");
    assert_still_serving(server.local_addr()).await;
}

#[tokio::test]
async fn calls_in_flight_when_shutdown_starts_complete() {
    let (server, lab_state) = start_server().await;
    let addr = server.local_addr();
    let lab = LabClient::connect(addr).await.unwrap();
    let in_flight: Vec<_> = (0..10)
        .map(|_| {
            let lab = lab.clone();
            tokio::spawn(async move { lab.sleep_ms(200).await })
        })
        .collect();
    eventually("every call reaches its handler", || {
        lab_state.sleeps.started() == 10
    })
    .await;
    server.shutdown_within(Duration::from_secs(5)).await;
    // The shutdown waited for every call that was running when it began.
    assert_eq!(lab_state.sleeps.finished(), 10);
    for call in in_flight {
        assert_eq!(call.await.unwrap().unwrap(), 200);
    }
    // Afterwards the old connection is closed and nothing accepts: the channel's attempt to
    // reconnect fails.
    eventually("the client sees the connection close", || {
        lab.channel().is_closed()
    })
    .await;
    let err = lab.add(1, 1).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert!(Channel::connect(addr).await.is_err());
}

#[tokio::test]
async fn the_grace_period_bounds_shutdown() {
    let (server, lab_state) = start_server().await;
    let lab = LabClient::new(
        Channel::builder()
            .without_timeout()
            .connect(server.local_addr())
            .await
            .unwrap(),
    );
    let stuck = tokio::spawn(async move { lab.sleep_ms(60_000).await });
    eventually("the call reaches its handler", || {
        lab_state.sleeps.started() == 1
    })
    .await;
    let started = Instant::now();
    server.shutdown_within(Duration::from_millis(100)).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    // The grace period over, the server stopped the handler instead of waiting for it.
    eventually("the handler is stopped", || lab_state.sleeps.stopped() == 1).await;
    // Stopped half-way, the call may have run: the server does not say goodbye with
    // ShuttingDown, which tells a client its waiting calls never ran (and may be replayed).
    match stuck.await.unwrap().unwrap_err() {
        Error::ConnectionClosed { reason, code } => {
            assert_eq!(code, None, "{reason}");
            assert!(!reason.contains("ShuttingDown"), "{reason}")
        }
        err => panic!("expected ConnectionClosed, got {err:?}"),
    }
}

#[tokio::test]
async fn two_services_with_one_name_are_refused_at_start_up() {
    let err = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .serve(UserServiceServer::new(Users::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err:?}");
    assert!(err.to_string().contains("collides"), "{err}");
}

#[tokio::test]
async fn every_codec_reports_a_remote_decode_failure_as_bad_request() {
    // A Lab method called with UserService-shaped arguments on a hand-written channel call:
    // the server cannot decode them.
    let (server, _) = start_server().await;
    for codec in CODECS {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .unwrap();
        // `add` takes two i64; send a UserModel-shaped struct instead.
        let add = wirecall::client::Method::new("Lab", "add");
        let result: Result<Sum, Error> = channel.call(&add, Garbage::default()).await;
        match (codec, result) {
            // Protobuf and JSON skip unknown fields and default missing ones (the schema
            // evolution rule): a valid, empty call. MessagePack arrays have the wrong types.
            (Codec::Protobuf | Codec::Json, Ok(Sum { value: 0 })) => {}
            (_, Err(Error::Remote { code, .. })) => {
                assert_eq!(code, wirecall::ErrorCode::BadRequest, "{codec}")
            }
            (_, other) => panic!("{codec}: {other:?}"),
        }
    }
}

#[wirecall::message]
struct Garbage {
    text: String,
    flag: bool,
    more: Vec<String>,
}

#[wirecall::message]
struct Sum {
    value: i64,
}
