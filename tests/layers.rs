//! Ready-made tower layers on both sides, through the public API: timeout, concurrency limit,
//! rate limit and load shedding on the server and on the channel, an interceptor that refuses
//! calls from their metadata, a layer that adds metadata, and the error each one maps to;
//! channel layers around opening stream calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tower::ServiceBuilder;
use wirecall::{CallContext, CallError, Channel, Error, ErrorCode, RunningServer, ServerBuilder};

#[wirecall::service]
trait Work {
    /// Sleeps `ms` milliseconds and returns it.
    async fn sleep(&self, ms: u64) -> u64;
    /// The value of one metadata key of this call.
    async fn header(&self, key: String) -> Option<String>;
    /// `count` copies of the value of metadata key `key` (empty when absent), as a stream.
    async fn echo_header(&self, key: String, count: u64) -> wirecall::Streaming<String>;
    /// How many numbers were uploaded.
    async fn count(&self, numbers: wirecall::Streaming<u64>) -> u64;
}

/// Counts the calls running now and the most that ever ran at once.
#[derive(Clone, Default)]
struct Worker {
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Work for Worker {
    async fn sleep(&self, ms: u64) -> u64 {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        // Counts down also when the call is dropped mid-sleep.
        let _running = Running(Arc::clone(&self.running));
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.finished.fetch_add(1, Ordering::SeqCst);
        ms
    }

    async fn header(&self, key: String) -> Option<String> {
        CallContext::with_current(|call| call.metadata().get(&key).map(str::to_owned)).flatten()
    }

    async fn echo_header(&self, key: String, count: u64) -> wirecall::Streaming<String> {
        self.finished.fetch_add(1, Ordering::SeqCst);
        let value = self.header(key).await.unwrap_or_default();
        wirecall::Streaming::from_iter(std::iter::repeat_n(value, count as usize))
    }

    async fn count(&self, numbers: wirecall::Streaming<u64>) -> u64 {
        self.finished.fetch_add(1, Ordering::SeqCst);
        numbers.count().await as u64
    }
}

async fn start(
    worker: &Worker,
    configure: impl FnOnce(ServerBuilder) -> ServerBuilder,
) -> (RunningServer, WorkClient) {
    let builder = wirecall::Server::builder().serve(WorkServer::new(worker.clone()));
    let server = configure(builder).bind("127.0.0.1:0").await.unwrap();
    let client = WorkClient::connect(server.local_addr()).await.unwrap();
    (server, client)
}

fn remote_code(result: Result<u64, Error>) -> ErrorCode {
    match result {
        Err(Error::Remote { code, .. }) => code,
        other => panic!("expected a remote error, got {other:?}"),
    }
}

#[tokio::test]
async fn server_timeout_layer_fails_a_slow_call_with_deadline_exceeded() {
    let worker = Worker::default();
    let (server, client) = start(&worker, |b| {
        b.layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(50)))
    })
    .await;
    // The caller's own deadline (30 s) is far away: the error is the server's, not a Timeout.
    assert_eq!(
        remote_code(client.sleep(2_000).await),
        ErrorCode::DeadlineExceeded
    );
    assert_eq!(client.sleep(1).await.unwrap(), 1);
    // The timed-out handler was dropped, not left running.
    assert_eq!(worker.running.load(Ordering::SeqCst), 0);
    assert_eq!(worker.finished.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn server_concurrency_limit_layer_runs_one_call_at_a_time() {
    let worker = Worker::default();
    let (server, client) = start(&worker, |b| {
        b.layer(tower::limit::ConcurrencyLimitLayer::new(1))
    })
    .await;
    let calls = (0..6).map(|_| client.sleep(20));
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.unwrap(), 20);
    }
    assert_eq!(worker.peak.load(Ordering::SeqCst), 1);
    assert_eq!(worker.finished.load(Ordering::SeqCst), 6);
    assert_eq!(server.in_flight(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn server_rate_limit_layer_spreads_calls_over_windows() {
    let worker = Worker::default();
    // Not `Clone`: the server keeps one instance for all connections.
    let (server, client) = start(&worker, |b| {
        b.layer(tower::limit::RateLimitLayer::new(
            2,
            Duration::from_millis(150),
        ))
    })
    .await;
    let second = WorkClient::connect(server.local_addr()).await.unwrap();
    let started = Instant::now();
    let calls = (0..3).flat_map(|_| [client.sleep(0), second.sleep(0)]);
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.unwrap(), 0);
    }
    // Six calls at two per window, over both connections, need at least two more windows.
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn server_load_shed_layer_refuses_with_overloaded() {
    let worker = Worker::default();
    let (server, client) = start(&worker, |b| {
        b.layer(ServiceBuilder::new().load_shed().concurrency_limit(1))
    })
    .await;
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.sleep(300).await }
    });
    while worker.running.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(remote_code(client.sleep(0).await), ErrorCode::Overloaded);
    assert_eq!(slow.await.unwrap().unwrap(), 300);
    assert_eq!(client.sleep(0).await.unwrap(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn an_async_interceptor_refuses_calls_without_a_tenant() {
    let worker = Worker::default();
    let (server, client) = start(&worker, |b| {
        b.layer(tower::filter::AsyncFilterLayer::new(
            |call: wirecall::server::Request| async move {
                match call.metadata().get("tenant") {
                    Some(_) => Ok(call),
                    None => Err(CallError::PermissionDenied("no tenant".to_owned())),
                }
            },
        ))
    })
    .await;
    assert!(matches!(
        client.sleep(0).await,
        Err(Error::PermissionDenied { .. })
    ));
    let tenant = WorkClient::new(client.channel().with_metadata("tenant", "acme").unwrap());
    assert_eq!(tenant.sleep(0).await.unwrap(), 0);
    assert_eq!(worker.finished.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_layer_error_of_its_own_is_layer_failed_with_its_message() {
    let worker = Worker::default();
    let (server, client) = start(&worker, |b| {
        b.layer(tower::filter::FilterLayer::new(
            |_: wirecall::server::Request| -> Result<wirecall::server::Request, wirecall::BoxError> {
                Err("the moon is in the wrong phase".into())
            },
        ))
    })
    .await;
    match client.sleep(0).await {
        Err(Error::Remote { code, message }) => {
            assert_eq!(code, ErrorCode::LayerFailed);
            assert!(
                message.contains("the moon is in the wrong phase"),
                "{message}"
            );
        }
        other => panic!("expected LayerFailed, got {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn the_authorize_shorthand_runs_before_the_layers() {
    let worker = Worker::default();
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&seen);
    let (server, client) = start(&worker, move |b| {
        b.authorize(|_, target| target.method != "sleep")
            .layer(tower::util::MapRequestLayer::new(move |call| {
                counted.fetch_add(1, Ordering::SeqCst);
                call
            }))
    })
    .await;
    assert!(matches!(
        client.sleep(0).await,
        Err(Error::PermissionDenied { .. })
    ));
    assert_eq!(client.header("x".to_owned()).await.unwrap(), None);
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "only the authorised call reached the layer"
    );
    server.shutdown().await;
}

async fn channel(
    server: &RunningServer,
    configure: impl FnOnce(wirecall::ChannelBuilder) -> wirecall::ChannelBuilder,
) -> WorkClient {
    let channel: Channel = configure(Channel::builder())
        .connect(server.local_addr())
        .await
        .unwrap();
    WorkClient::new(channel)
}

#[tokio::test]
async fn channel_timeout_layer_fails_the_call_and_cancels_the_handler() {
    let worker = Worker::default();
    let (server, _) = start(&worker, |b| b).await;
    let client = channel(&server, |c| {
        c.layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(50)))
    })
    .await;
    match client.sleep(2_000).await {
        Err(Error::Layer { code, .. }) => assert_eq!(code, ErrorCode::DeadlineExceeded),
        other => panic!("expected a layer timeout, got {other:?}"),
    }
    // The dropped call sent a Cancel: the handler stops instead of finishing.
    let stopped = async {
        while server.in_flight() != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(1), stopped)
        .await
        .unwrap();
    assert_eq!(worker.finished.load(Ordering::SeqCst), 0);
    assert_eq!(client.sleep(1).await.unwrap(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn channel_concurrency_limit_layer_keeps_one_call_on_the_wire() {
    let worker = Worker::default();
    let (server, _) = start(&worker, |b| b).await;
    let client = channel(&server, |c| {
        c.layer(tower::limit::ConcurrencyLimitLayer::new(1))
    })
    .await;
    let calls = (0..5).map(|_| client.sleep(20));
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.unwrap(), 20);
    }
    assert_eq!(worker.peak.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn channel_rate_limit_layer_is_shared_by_every_handle() {
    let worker = Worker::default();
    let (server, _) = start(&worker, |b| b).await;
    let client = channel(&server, |c| {
        c.layer(tower::limit::RateLimitLayer::new(
            2,
            Duration::from_millis(150),
        ))
    })
    .await;
    let other_handle = WorkClient::new(client.channel().with_timeout(Duration::from_secs(5)));
    let started = Instant::now();
    let calls = (0..3).flat_map(|_| [client.sleep(0), other_handle.sleep(0)]);
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.unwrap(), 0);
    }
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn channel_load_shed_layer_fails_fast_with_overloaded() {
    let worker = Worker::default();
    let (server, _) = start(&worker, |b| b).await;
    let client = channel(&server, |c| {
        c.layer(ServiceBuilder::new().load_shed().concurrency_limit(1))
    })
    .await;
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.sleep(300).await }
    });
    while worker.running.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    match client.sleep(0).await {
        Err(Error::Layer { code, .. }) => assert_eq!(code, ErrorCode::Overloaded),
        other => panic!("expected a shed call, got {other:?}"),
    }
    assert_eq!(slow.await.unwrap().unwrap(), 300);
    // The shed call never reached the server.
    assert_eq!(worker.finished.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_channel_layer_can_add_metadata_and_wirecall_errors_pass_through() {
    let worker = Worker::default();
    let (server, _) = start(&worker, |b| b.max_in_flight(1)).await;
    let client = channel(&server, |c| {
        c.layer(tower::util::MapRequestLayer::new(
            |mut call: wirecall::client::Request| {
                call.insert_metadata("tenant", "acme").unwrap();
                call
            },
        ))
    })
    .await;
    assert_eq!(
        client.header("tenant".to_owned()).await.unwrap().as_deref(),
        Some("acme")
    );
    // A server error travels through the layers as the same wirecall error.
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.sleep(300).await }
    });
    while worker.running.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(remote_code(client.sleep(0).await), ErrorCode::Overloaded);
    assert_eq!(slow.await.unwrap().unwrap(), 300);
    server.shutdown().await;
}

#[tokio::test]
async fn channel_layers_see_stream_opens_and_their_metadata_reaches_the_server() {
    let worker = Worker::default();
    let (server, _) = start(&worker, |b| b).await;
    let opens = Arc::new(AtomicUsize::new(0));
    let client = channel(&server, |c| {
        let opens = Arc::clone(&opens);
        c.layer(tower::util::MapRequestLayer::new(
            move |mut call: wirecall::client::Request| {
                if call.is_stream() {
                    opens.fetch_add(1, Ordering::SeqCst);
                }
                call.insert_metadata("tenant", "acme").unwrap();
                call
            },
        ))
    })
    .await;
    let items: Vec<String> = client
        .echo_header("tenant".to_owned(), 3)
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items, ["acme", "acme", "acme"]);
    let uploaded = client.count(futures::stream::iter(0..5u64)).await.unwrap();
    assert_eq!(uploaded, 5);
    // A unary call is no stream open.
    assert_eq!(
        client.header("tenant".to_owned()).await.unwrap().as_deref(),
        Some("acme")
    );
    assert_eq!(
        opens.load(Ordering::SeqCst),
        2,
        "the server stream and the upload"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_channel_layer_that_refuses_a_stream_open_sends_nothing() {
    let worker = Worker::default();
    let (server, _) = start(&worker, |b| b).await;
    let client = channel(&server, |c| {
        c.layer(tower::filter::FilterLayer::new(
            |call: wirecall::client::Request| {
                if call.is_stream() {
                    Err("streams are not allowed here")
                } else {
                    Ok(call)
                }
            },
        ))
    })
    .await;
    let refused = client.echo_header("tenant".to_owned(), 3).await;
    assert!(
        matches!(&refused, Err(Error::Layer { code: ErrorCode::LayerFailed, cause })
            if cause.to_string().contains("streams are not allowed")),
        "{refused:?}"
    );
    let refused = client.count(futures::stream::iter(0..5u64)).await;
    assert!(matches!(refused, Err(Error::Layer { .. })), "{refused:?}");
    // Unary calls still pass, and no stream ever reached the server.
    assert_eq!(client.sleep(0).await.unwrap(), 0);
    assert_eq!(worker.finished.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}
