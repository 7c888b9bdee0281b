//! What a failed call says happened to it (`Error::outcome`), against a real server: the same
//! event reads the same for every call shape, and a call that never left the client says so.

use std::time::Duration;

use futures::StreamExt;
use wirecall::{Channel, Codec, Error, Outcome, Server};
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer};
use wirecall_test_support::{eventually, UserServiceClient, UserServiceServer, Users};

#[tokio::test]
async fn a_server_aborted_mid_call_ends_a_stream_and_a_unary_call_alike_as_may_have_run() {
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .serve(UserServiceServer::new(Users::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .codec(Codec::MessagePack)
        .without_timeout()
        .stream_window(4)
        .connect(server.local_addr())
        .await
        .unwrap();
    let feed = FeedClient::new(channel.clone());
    let users = UserServiceClient::new(channel.clone());
    let mut stream = feed.endless().await.unwrap();
    assert_eq!(stream.next().await.unwrap().unwrap(), 0);
    let slow = tokio::spawn(async move { users.sleep(60_000).await });
    eventually("the stream and the call are both sent", || {
        channel.in_flight() == 2
    })
    .await;

    server.abort();

    let stream_error = loop {
        match stream.next().await.expect("the stream ends with an error") {
            Ok(_) => continue,
            Err(error) => break error,
        }
    };
    let call_error = slow.await.unwrap().unwrap_err();
    for error in [&stream_error, &call_error] {
        assert!(
            matches!(error, Error::ConnectionClosed { code: None, .. }),
            "{error:?}"
        );
        assert_eq!(error.outcome(), Outcome::MaybeRan, "{error}");
    }
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_call_refused_during_the_reconnect_backoff_was_not_sent() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .max_reconnect_backoff(Duration::from_secs(30))
        .connect(server.local_addr())
        .await
        .unwrap();
    let users = UserServiceClient::new(channel.clone());
    users.get_user_id("ada".to_owned()).await.unwrap();
    server.shutdown().await;
    eventually("the client sees the connection close", || {
        channel.is_closed()
    })
    .await;

    // The first call dials again, and nothing listens any more.
    let first = users.get_user_id("ada".to_owned()).await.unwrap_err();
    assert!(matches!(first, Error::Connect { .. }), "{first:?}");
    assert_eq!(first.outcome(), Outcome::NotRun);
    // The next ones are refused while the channel waits to dial again: never written either.
    let next = users.get_user_id("ada".to_owned()).await.unwrap_err();
    match &next {
        Error::Unavailable {
            retry_after: Some(wait),
            ..
        } => assert!(*wait <= Duration::from_secs(30), "{next}"),
        other => panic!("expected Unavailable with a retry_after, got {other:?}"),
    }
    assert_eq!(next.outcome(), Outcome::NotRun);
    assert!(next.to_string().contains("not sent"), "{next}");
}

#[tokio::test]
async fn a_call_on_a_closed_channel_was_not_sent() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::connect(server.local_addr()).await.unwrap();
    let users = UserServiceClient::new(channel.clone());
    channel.close().await;
    let err = users.get_user_id("ada".to_owned()).await.unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable { reason, retry_after: None } if reason.contains("Channel::close")),
        "{err:?}"
    );
    assert_eq!(err.outcome(), Outcome::NotRun);
    server.shutdown().await;
}
