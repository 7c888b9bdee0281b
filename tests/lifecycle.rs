//! The server's and the channel's life cycle: running until a signal or a shutdown handle,
//! graceful stops, and closing a channel.

mod common;

use std::time::Duration;

use common::*;
use wirecall::{Channel, Error, Server};

/// How long one step of a start or a stop may take.
const SOON: Duration = PATIENCE;

#[tokio::test]
async fn run_until_serves_until_its_signal_then_stops_gracefully() {
    let (server, lab_state) = start_server().await;
    let addr = server.local_addr();
    let handle = server.shutdown_handle();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run_until(async {
        let _ = stopped.await;
    }));
    let lab = LabClient::connect(addr).await.unwrap();
    let held = tokio::spawn({
        let lab = lab.clone();
        async move { lab.hold().await }
    });
    assert_eq!(lab.add(40, 2).await.unwrap(), 42);
    eventually("the held call reaches its handler", || {
        lab_state.holds.started() == 1
    })
    .await;
    stop.send(()).unwrap();
    tokio::time::timeout(SOON, handle.shutting_down())
        .await
        .expect("the signal starts a shutdown");
    // The call in flight when the signal came is finished, not cut off: the server waits.
    assert!(!handle.is_stopped(), "stopped with a call running");
    lab_state.release(1);
    tokio::time::timeout(SOON, running)
        .await
        .expect("run_until returns after its signal")
        .unwrap();
    held.await.unwrap().unwrap();
    assert_eq!(lab_state.holds.finished(), 1);
    assert!(Channel::connect(addr).await.is_err(), "no longer accepting");
}

#[tokio::test]
async fn a_shutdown_handle_stops_a_running_server_from_another_task() {
    let (server, _lab) = start_server().await;
    let addr = server.local_addr();
    let handle = server.shutdown_handle();
    let running = tokio::spawn(server.run());
    let lab = LabClient::connect(addr).await.unwrap();
    assert_eq!(lab.add(1, 2).await.unwrap(), 3);
    assert!(!handle.is_stopped());

    tokio::time::timeout(SOON, handle.shutdown())
        .await
        .expect("the shutdown completes");
    assert!(handle.is_stopped());
    tokio::time::timeout(SOON, running)
        .await
        .expect("run returns once the server stopped")
        .unwrap();
    // A second request, from a clone, returns at once.
    tokio::time::timeout(SOON, handle.clone().shutdown())
        .await
        .unwrap();
    assert!(lab.add(1, 2).await.is_err());
}

#[tokio::test]
async fn stopped_resolves_when_the_server_is_shut_down_by_its_owner() {
    let (server, _lab) = start_server().await;
    let handle = server.shutdown_handle();
    let watcher = tokio::spawn(async move { handle.stopped().await });
    server.shutdown().await;
    tokio::time::timeout(SOON, watcher).await.unwrap().unwrap();
}

#[tokio::test]
async fn abort_stops_the_server_at_once() {
    let (server, lab_state) = start_server().await;
    let handle = server.shutdown_handle();
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    let held = tokio::spawn({
        let lab = lab.clone();
        async move { lab.hold().await }
    });
    eventually("the held call reaches its handler", || {
        lab_state.holds.started() == 1
    })
    .await;
    server.abort();
    let outcome = tokio::time::timeout(SOON, held).await.unwrap().unwrap();
    assert!(
        matches!(outcome, Err(Error::ConnectionClosed { .. })),
        "{outcome:?}"
    );
    tokio::time::timeout(SOON, handle.stopped()).await.unwrap();
    eventually("the held handler is stopped", || {
        lab_state.holds.stopped() == 1
    })
    .await;
}

#[tokio::test]
async fn serve_listener_is_async_like_bind() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::builder()
        .serve(LabServer::new(std::sync::Arc::new(LabImpl::default())))
        .serve_listener(listener)
        .await
        .unwrap();
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    assert_eq!(lab.add(2, 2).await.unwrap(), 4);
    server.shutdown().await;
}

#[cfg(unix)]
#[tokio::test]
async fn run_until_shutdown_signal_stops_on_sigterm() {
    use tokio::signal::unix::{signal, SignalKind};
    // This test's own SIGTERM listener keeps the process alive whatever the timing: once a
    // tokio listener exists, SIGTERM no longer ends the process.
    let mut own = signal(SignalKind::terminate()).unwrap();
    let (server, _lab) = start_server().await;
    let addr = server.local_addr();
    let running = tokio::spawn(server.run_until_shutdown_signal());
    let lab = LabClient::connect(addr).await.unwrap();
    assert_eq!(lab.add(1, 1).await.unwrap(), 2);
    let pid = std::process::id().to_string();
    let started = std::time::Instant::now();
    // The server installs its listener when its task first runs: signal until it has seen one.
    while !running.is_finished() {
        assert!(
            started.elapsed() < SOON,
            "the server did not stop on SIGTERM"
        );
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
        own.recv().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.await.unwrap();
    assert!(Channel::connect(addr).await.is_err(), "no longer accepting");
}

#[tokio::test]
async fn closing_a_channel_finishes_its_calls_then_waits_for_the_connection_to_close() {
    let (server, lab_state) = start_server().await;
    let channel = Channel::connect(server.local_addr()).await.unwrap();
    let lab = LabClient::new(channel.clone());
    assert_eq!(lab.add(1, 2).await.unwrap(), 3);
    assert_eq!(server.connection_count(), 1);

    let held = tokio::spawn({
        let lab = lab.clone();
        async move { lab.hold().await }
    });
    eventually("the held call reaches its handler", || {
        lab_state.holds.started() == 1
    })
    .await;
    let closing = tokio::spawn({
        let channel = channel.clone();
        async move { channel.close().await }
    });
    // Once close has begun, new calls fail at once, on every clone, and the channel does not
    // reconnect.
    eventually_async("new calls are refused", || async {
        match lab.add(1, 2).await {
            Ok(_) => false,
            Err(Error::Unavailable { reason, .. }) if reason.contains("Channel::close") => true,
            Err(err) => panic!("{err}"),
        }
    })
    .await;
    // The call in flight is finished before the connection closes: close waits for it.
    assert!(!closing.is_finished(), "closed with a call in flight");
    assert!(!channel.is_closed());
    lab_state.release(1);
    tokio::time::timeout(SOON, closing)
        .await
        .expect("close returns")
        .unwrap();
    held.await.unwrap().unwrap();
    assert!(channel.is_closed());
    let err = lab.add(1, 2).await.unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable { reason, .. } if reason.contains("Channel::close")),
        "{err}"
    );
    eventually("the server sees the connection closed", || {
        server.connection_count() == 0
    })
    .await;
    // Closing again returns at once.
    tokio::time::timeout(Duration::from_secs(1), channel.close())
        .await
        .unwrap();
}

/// A connection's writer runs in the task that reads it: dropping the channel closes the
/// connection only once what was queued is written, so one-way calls sent just before the
/// drop still reach the server.
#[tokio::test]
async fn one_way_calls_queued_when_a_channel_is_dropped_still_reach_the_server() {
    const CALLS: u64 = 5_000;
    let (server, lab_state) = start_server().await;
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    // Sent together, so that most of them wait in the connection's queue when it is dropped.
    let sent = futures::future::join_all((0..CALLS).map(|_| lab.record(1))).await;
    assert!(
        sent.iter().all(Result::is_ok),
        "every one-way call was queued"
    );
    drop(lab);
    eventually("every one-way call reaches the server", || {
        lab_state.recorded.load(std::sync::atomic::Ordering::SeqCst) == CALLS
    })
    .await;
}

#[tokio::test]
async fn a_server_without_a_listener_serves_handed_over_streams_within_its_limits() {
    let server = Server::builder()
        .serve(LabServer::new(std::sync::Arc::new(LabImpl::default())))
        .max_connections(1)
        .start_without_listener()
        .await
        .unwrap();
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    server.serve_stream(server_end);
    let lab = LabClient::new(Channel::builder().connect_with(client_end).await.unwrap());
    assert_eq!(lab.add(20, 22).await.unwrap(), 42);
    assert_eq!(server.connection_count(), 1);

    // Over max_connections: a Busy hello, as from the listener.
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    server.serve_stream(server_end);
    let err = Channel::builder()
        .connect_with(client_end)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Negotiation(wirecall::NegotiationError::Busy)),
        "{err}"
    );
    server.shutdown().await;
}
