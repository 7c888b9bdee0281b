//! Server limits and client recovery: reconnects, keepalive, idle cleanup, overload.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wirecall::{Channel, Error, ErrorCode, NegotiationError, Server};

async fn lab_server_on(addr: std::net::SocketAddr) -> wirecall::RunningServer {
    Server::builder()
        .serve(LabServer::new(Arc::new(LabImpl::default())))
        .bind(addr)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_channel_reconnects_after_the_server_restarts() {
    let server = lab_server_on("127.0.0.1:0".parse().unwrap()).await;
    let addr = server.local_addr();
    let lab = LabClient::new(
        Channel::builder()
            .max_reconnect_backoff(Duration::from_millis(100))
            .connect(addr)
            .await
            .unwrap(),
    );
    assert_eq!(lab.add(1, 1).await.unwrap(), 2);

    server.shutdown_within(Duration::from_millis(100)).await;
    // The dropped connection is noticed; calls fail with a typed error while nothing listens.
    eventually("the channel sees the connection close", || {
        lab.channel().is_closed()
    })
    .await;
    let err = lab.add(1, 1).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");

    let _restarted = lab_server_on(addr).await;
    // Within a few backoff periods the next call gets through on a new connection.
    eventually_async("a call gets through to the restarted server", || async {
        match lab.add(2, 3).await {
            Ok(sum) => {
                assert_eq!(sum, 5);
                true
            }
            Err(Error::Connect { .. } | Error::Unavailable { .. }) => false,
            Err(other) => panic!("unexpected {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_channel_without_reconnect_stays_closed() {
    let server = lab_server_on("127.0.0.1:0".parse().unwrap()).await;
    let lab = LabClient::new(
        Channel::builder()
            .reconnect(false)
            .connect(server.local_addr())
            .await
            .unwrap(),
    );
    server.shutdown_within(Duration::from_millis(100)).await;
    eventually("the channel sees the connection close", || {
        lab.channel().is_closed()
    })
    .await;
    // A reconnecting channel would try to connect, and fail with `Error::Connect`; this one
    // does not send the call at all.
    let err = lab.add(1, 1).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
}

/// A peer that completes the handshake and then never sends another byte.
async fn silent_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut hello = [0u8; 7];
        socket.read_exact(&mut hello).await.unwrap();
        socket.write_all(b"WCAL\x01\x00\x02\x01\x02").await.unwrap();
        // Hold the socket open, reading (and ignoring) whatever arrives.
        let mut sink = vec![0u8; 1024];
        while socket.read(&mut sink).await.unwrap_or(0) > 0 {}
    });
    addr
}

#[tokio::test]
async fn keepalive_detects_a_silent_server_and_fails_waiting_calls() {
    let addr = silent_server().await;
    let channel = Channel::builder()
        .codec(wirecall::Codec::MessagePack)
        .without_timeout()
        .reconnect(false)
        .keepalive(Duration::from_millis(100))
        .keepalive_timeout(Duration::from_millis(100))
        .connect(addr)
        .await
        .unwrap();
    let lab = LabClient::new(channel);
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(5), lab.add(1, 1))
        .await
        .expect("the call ends")
        .unwrap_err();
    assert!(matches!(err, Error::ConnectionClosed { .. }), "{err:?}");
    assert!(err.to_string().contains("ping"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn the_server_pings_an_idle_peer_and_closes_it_when_it_does_not_answer() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .idle_timeout(Duration::from_millis(100))
        .ping_timeout(Duration::from_millis(100))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let mut socket = TcpStream::connect(server.local_addr()).await.unwrap();
    socket.write_all(b"WCAL\x01\x01\x02\x00").await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut received))
        .await
        .expect("the server closes the idle connection")
        .unwrap();
    // Server hello (11 bytes), then a Ping frame, then an IdleTimeout error frame.
    let frames = &received[11..];
    assert_eq!(frames[4], 5, "a Ping first");
    let error = &frames[26..];
    assert_eq!(error[4], 3, "then an Error frame");
    assert_eq!(
        &error[26..28],
        &ErrorCode::IdleTimeout.to_u16().to_be_bytes()
    );
    eventually("the server counts the connection out", || {
        server.connection_count() == 0
    })
    .await;
}

#[tokio::test]
async fn an_idle_client_that_answers_pings_is_kept() {
    const IDLE: Duration = Duration::from_millis(50);
    // Ample for the client to answer on a loaded machine.
    const PING_TIMEOUT: Duration = Duration::from_millis(200);
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .idle_timeout(IDLE)
        .ping_timeout(PING_TIMEOUT)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let users = UserServiceClient::connect(server.local_addr())
        .await
        .unwrap();
    // The wait is the assertion: nothing is to happen. Over four idle periods and ping
    // timeouts the server pings the idle client again and again, and would have closed a
    // client that did not answer (as the test above shows it does).
    tokio::time::sleep(4 * (IDLE + PING_TIMEOUT)).await;
    assert!(!users.channel().is_closed());
    assert_eq!(server.connection_count(), 1);
    assert_eq!(users.get_user(fanly()).await.unwrap(), fanly());
}

#[tokio::test]
async fn a_quiet_client_that_answers_pings_keeps_its_long_call() {
    // The server pings a client silent for this long while its call runs...
    const WHILE_SERVING: Duration = Duration::from_millis(100);
    // ...and waits this long for the answer: ample on a loaded machine.
    const PING_TIMEOUT: Duration = Duration::from_secs(2);
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .keepalive_while_serving(WHILE_SERVING)
        .ping_timeout(PING_TIMEOUT)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    // A client that sends nothing while it waits (as a client with no keepalive of its own
    // does), but answers the server's pings.
    let channel = Channel::builder()
        .keepalive_while_waiting(Duration::from_secs(60))
        .connect(server.local_addr())
        .await
        .unwrap();
    let users = UserServiceClient::new(channel);
    // Several rounds of silence, ping and answer while the call runs.
    users.sleep(1_000).await.unwrap();
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test]
async fn calls_beyond_max_in_flight_get_an_overloaded_error() {
    let lab_state = Arc::new(LabImpl::default());
    let server = Server::builder()
        .serve(LabServer::new(Arc::clone(&lab_state)))
        .max_in_flight(2)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    // Two calls that run until released hold both slots for as long as the test needs.
    let held: Vec<_> = (0..2)
        .map(|_| {
            let lab = lab.clone();
            tokio::spawn(async move { lab.hold().await })
        })
        .collect();
    eventually("both held calls reach their handlers", || {
        lab_state.holds.started() == 2
    })
    .await;
    assert_eq!(server.in_flight(), 2);
    let err = lab.hold().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Remote {
                code: ErrorCode::Overloaded,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        lab_state.holds.started(),
        2,
        "the refused call ran no handler"
    );
    lab_state.release(2);
    for call in held {
        call.await.unwrap().unwrap();
    }
    eventually("the slots are free again", || server.in_flight() == 0).await;
    assert_eq!(lab.add(1, 1).await.unwrap(), 2);
}

#[tokio::test]
async fn connections_beyond_max_connections_are_refused_as_busy() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .max_connections(2)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let first = UserServiceClient::connect(server.local_addr())
        .await
        .unwrap();
    let _second = UserServiceClient::connect(server.local_addr())
        .await
        .unwrap();
    let err = Channel::builder()
        .early_calls(false)
        .connect(server.local_addr())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Negotiation(NegotiationError::Busy)),
        "{err:?}"
    );
    // With early calls (the server is known by now) `connect` does not wait for the
    // verdict, and the first call gets it.
    let early = UserServiceClient::connect(server.local_addr())
        .await
        .unwrap();
    let err = early.get_user(fanly()).await.unwrap_err();
    assert!(
        matches!(err, Error::Negotiation(NegotiationError::Busy)),
        "{err:?}"
    );
    assert_eq!(first.get_user(fanly()).await.unwrap(), fanly());
}

#[tokio::test]
async fn a_peer_that_never_reads_is_closed_when_writes_stall() {
    let server = Server::builder()
        .serve(LabServer::new(Arc::new(LabImpl::default())))
        .write_timeout(Duration::from_millis(300))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    let mut socket = raw_msgpack_connection(addr).await;
    // Ask for 1 MiB replies over and over without reading any of them.
    let _ = socket.write_all(&blob_requests(16, 1 << 20)).await;
    // The server gives up on the stalled connection instead of holding it forever.
    eventually("the stalled connection is closed", || {
        server.connection_count() == 0
    })
    .await;
    let users = LabClient::connect(addr).await.unwrap();
    assert_eq!(users.add(1, 2).await.unwrap(), 3);
}

/// A raw socket past a version 1 MessagePack handshake (hello sent, the server's read).
async fn raw_msgpack_connection(addr: std::net::SocketAddr) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(b"WCAL\x01\x01\x02\x00").await.unwrap();
    let mut hello = [0u8; 11];
    socket.read_exact(&mut hello).await.unwrap();
    socket
}

/// `count` Request frames (ids 1 to `count`) calling `Lab.blob(len)`, MessagePack-encoded.
fn blob_requests(count: u64, len: u32) -> Vec<u8> {
    let blob = wirecall::method_id("Lab", "blob").get();
    let mut requests = Vec::new();
    for id in 1..=count {
        requests.extend_from_slice(&(22u32 + 6).to_be_bytes());
        requests.push(1); // Request
        requests.push(0); // no flags
        requests.extend_from_slice(&id.to_be_bytes());
        requests.extend_from_slice(&blob.to_be_bytes());
        requests.extend_from_slice(&0u32.to_be_bytes()); // no deadline
        requests.extend_from_slice(&[0x91, 0xce]); // msgpack: [u32]
        requests.extend_from_slice(&len.to_be_bytes());
    }
    requests
}

/// Reads one frame off a raw socket: its kind, request id and length after the length prefix.
async fn read_raw_frame(socket: &mut TcpStream) -> (u8, u64, usize) {
    let len = socket.read_u32().await.unwrap() as usize;
    let mut frame = vec![0u8; len];
    socket.read_exact(&mut frame).await.unwrap();
    let request_id = u64::from_be_bytes(frame[2..10].try_into().unwrap());
    (frame[0], request_id, len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_reads_late_still_gets_every_reply() {
    // 16 MiB of replies to a peer that reads nothing for a while: they fill the connection's
    // write queue and both sockets, the server stops reading the connection and waits for
    // room, and once the peer reads, every reply arrives, once.
    let server = Server::builder()
        .serve(LabServer::new(Arc::new(LabImpl::default())))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let mut socket = raw_msgpack_connection(server.local_addr()).await;
    const CALLS: u64 = 64;
    socket
        .write_all(&blob_requests(CALLS, 256 * 1024))
        .await
        .unwrap();
    // Reading late is the scenario, not a wait for something: whatever the server has done
    // by now, every reply must arrive once the peer reads.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut answered = Vec::new();
    for _ in 0..CALLS {
        let (kind, request_id, len) =
            tokio::time::timeout(Duration::from_secs(10), read_raw_frame(&mut socket))
                .await
                .expect("every reply arrives");
        assert_eq!(kind, 2, "reply {request_id} is a Response");
        assert!(len > 256 * 1024, "reply {request_id} carries the blob");
        answered.push(request_id);
    }
    answered.sort_unstable();
    assert_eq!(answered, (1..=CALLS).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_wait_for_room_while_the_server_stops_reading_and_all_complete() {
    // Two slow calls take the connection's only two call slots, so the server stops reading
    // it; 16 MiB of requests behind them fill the sockets and the client's write queue, and
    // the calls that find the queue full wait for room. When the slow calls end, every call
    // completes with its own reply.
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .max_in_flight_per_connection(2)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let users = UserServiceClient::connect(server.local_addr())
        .await
        .unwrap();
    let slow = futures::future::join(users.sleep(300), users.sleep(300));
    let bulk = futures::future::join_all((0..64u32).map(|i| {
        let users = users.clone();
        async move {
            let len = 256 * 1024 + i;
            let data = wirecall::Bytes::from(vec![i as u8; len as usize]);
            (len, users.bulk(data).await)
        }
    }));
    let ((first, second), answers) =
        tokio::time::timeout(Duration::from_secs(20), futures::future::join(slow, bulk))
            .await
            .expect("every call ends");
    first.unwrap();
    second.unwrap();
    for (len, answer) in answers {
        assert_eq!(answer.unwrap(), len);
    }
}
