//! Server streams end to end, against a real server over TCP: every item shape in every
//! codec, credit flow control, and each way a stream ends (its end, an application error, a
//! panic, the caller dropping it, its deadline, the connection's end, an older peer).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use wirecall::{Channel, Codec, Error, ErrorCode, RunningServer, Server};
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer, Refused, Tick};
use wirecall_test_support::{eventually, eventually_async, quiet_panics_starting_with};

async fn serve(feed: FeedImpl) -> RunningServer {
    Server::builder()
        .serve(FeedServer::new(feed))
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

async fn client(server: &RunningServer, codec: Codec, window: u32) -> FeedClient {
    let channel = Channel::builder()
        .codec(codec)
        .stream_window(window)
        .connect(server.local_addr())
        .await
        .unwrap();
    FeedClient::new(channel)
}

#[tokio::test]
async fn every_item_shape_streams_in_every_codec() {
    let server = serve(FeedImpl::default()).await;
    for codec in Codec::available() {
        let feed = client(&server, codec, 4).await;
        let numbers: Vec<u64> = feed
            .numbers(10)
            .await
            .unwrap()
            .map(|item| item.unwrap())
            .collect()
            .await;
        assert_eq!(numbers, (0..10).collect::<Vec<_>>(), "{codec}");

        let empty: Vec<_> = feed.numbers(0).await.unwrap().collect().await;
        assert!(empty.is_empty(), "{codec}");

        // An application error is the last item, and the stream ends after it.
        let ticks: Vec<_> = feed.ticks(5, 3, 2).await.unwrap().collect().await;
        assert_eq!(ticks.len(), 3, "{codec}");
        for (n, tick) in ticks[..2].iter().enumerate() {
            let tick = tick.as_ref().unwrap().as_ref().unwrap();
            assert_eq!(
                (tick.n, &tick.body[..]),
                (n as u64, &[7u8, 7, 7][..]),
                "{codec}"
            );
        }
        assert_eq!(
            ticks[2].as_ref().unwrap().as_ref().unwrap_err(),
            &Refused {
                reason: "item 2 refused".to_owned()
            },
            "{codec}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_consumer_that_stops_reading_pauses_the_producer_and_not_the_connection() {
    let feed_impl = FeedImpl::default();
    let stats = Arc::clone(&feed_impl.stats);
    let server = serve(feed_impl).await;
    let window = 8;
    let feed = client(&server, Codec::MessagePack, window).await;
    let mut endless = feed.endless().await.unwrap();
    for expected in 0..3 {
        assert_eq!(endless.next().await.unwrap().unwrap(), expected);
    }
    // Three taken, and at most one window ahead of the consumer: the producer waits for
    // credit (half a window is granted back once half is taken, so it may be one grant on).
    let bound = 3 + u64::from(window) + 1;
    eventually("the producer fills the window", || {
        stats.produced.load(Ordering::SeqCst) >= 3 + u64::from(window / 2)
    })
    .await;
    // Other calls on the same connection go on meanwhile.
    for n in 0..100 {
        assert_eq!(feed.add(n, 1).await.unwrap(), n + 1);
    }
    let produced = stats.produced.load(Ordering::SeqCst);
    assert!(
        produced <= bound,
        "the producer ran ahead of its credit: {produced} items for a window of {window}"
    );
    // Reading on takes the rest, in order.
    for expected in 3..200 {
        assert_eq!(endless.next().await.unwrap().unwrap(), expected);
    }
    drop(endless);
    eventually("the server drops the producer", || {
        stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    eventually("the server forgets the call", || server.in_flight() == 0).await;
    server.shutdown().await;
}

#[tokio::test]
async fn dropping_the_stream_stops_the_producer_on_the_server() {
    let feed_impl = FeedImpl::default();
    let stats = Arc::clone(&feed_impl.stats);
    let server = serve(feed_impl).await;
    let feed = client(&server, Codec::Json, 4).await;
    let mut endless = feed.endless().await.unwrap();
    assert_eq!(endless.next().await.unwrap().unwrap(), 0);
    assert!(stats.running.load(Ordering::SeqCst));
    drop(endless);
    eventually("the server drops the producer", || {
        stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    eventually("the server forgets the call", || server.in_flight() == 0).await;
    // The connection carries on.
    assert_eq!(feed.add(2, 3).await.unwrap(), 5);
    server.shutdown().await;
}

#[tokio::test]
async fn the_deadline_bounds_the_whole_stream() {
    let feed_impl = FeedImpl::default();
    let stats = Arc::clone(&feed_impl.stats);
    let server = serve(feed_impl).await;
    let feed = client(&server, Codec::MessagePack, 16).await;
    let timeout = Duration::from_millis(300);
    let mut endless = feed.with_timeout(timeout).endless().await.unwrap();
    let started = tokio::time::Instant::now();
    let mut items = 0u64;
    let error = loop {
        match endless.next().await.expect("the stream ends with an error") {
            Ok(n) => {
                assert_eq!(n, items);
                items += 1;
            }
            Err(error) => break error,
        }
    };
    assert!(
        matches!(error, Error::Timeout { after } if after == timeout),
        "{error}"
    );
    assert!(started.elapsed() >= timeout);
    assert!(items > 0);
    // One error, then the end.
    assert!(endless.next().await.is_none());
    eventually("the server drops the producer", || {
        stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_panicking_producer_ends_the_stream_with_one_error() {
    quiet_panics_starting_with("feed panicked");
    let server = serve(FeedImpl::default()).await;
    let feed = client(&server, Codec::Protobuf, 4).await;
    let items: Vec<_> = feed.panics_after(3).await.unwrap().collect().await;
    assert_eq!(items.len(), 4);
    for (n, item) in items[..3].iter().enumerate() {
        assert_eq!(*item.as_ref().unwrap(), n as u64);
    }
    assert!(
        matches!(&items[3], Err(Error::HandlerPanicked { message, .. }) if message.contains("feed panicked")),
        "{:?}",
        items[3]
    );
    server.shutdown().await;
}

/// A TCP proxy in front of `target` for one connection; aborting the returned task drops
/// both of its sockets: the connection is lost, as when a network link goes down.
async fn proxy(
    target: std::net::SocketAddr,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut inbound, _) = listener.accept().await.unwrap();
        let mut outbound = tokio::net::TcpStream::connect(target).await.unwrap();
        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
    });
    (addr, task)
}

#[tokio::test]
async fn connection_loss_ends_every_open_stream_with_connection_closed() {
    let feed_impl = FeedImpl::default();
    let stats = Arc::clone(&feed_impl.stats);
    let server = serve(feed_impl).await;
    let (addr, link) = proxy(server.local_addr()).await;
    let channel = Channel::builder()
        .codec(Codec::MessagePack)
        .stream_window(4)
        .reconnect(false)
        .connect(addr)
        .await
        .unwrap();
    let feed = FeedClient::new(channel);
    let mut streams = Vec::new();
    for _ in 0..3 {
        let mut stream = feed.endless().await.unwrap();
        // The producers share one count: the first item's number is not known.
        stream.next().await.unwrap().unwrap();
        streams.push(stream);
    }
    link.abort();
    for mut stream in streams {
        let error = loop {
            match stream.next().await.expect("the stream ends with an error") {
                Ok(_) => continue,
                Err(error) => break error,
            }
        };
        assert!(matches!(error, Error::ConnectionClosed { .. }), "{error}");
        assert!(stream.next().await.is_none());
    }
    // The server's side ended too: every producer was dropped.
    eventually("the server drops the producers", || {
        stats.dropped.load(Ordering::SeqCst) == 3
    })
    .await;
    server.shutdown().await;
}

#[tokio::test]
async fn an_older_peer_is_never_sent_a_stream_frame() {
    // A server of protocol version 2: the client refuses before sending anything.
    let old_server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .max_protocol_version(2)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let feed = client(&old_server, Codec::MessagePack, 4).await;
    let error = feed.numbers(3).await.unwrap_err();
    assert!(
        matches!(error, Error::StreamsUnsupported { version: 2, .. }),
        "{error}"
    );
    assert_eq!(feed.add(1, 2).await.unwrap(), 3);
    old_server.shutdown().await;

    // A client of version 2 at a version 3 server: the same.
    let server = serve(FeedImpl::default()).await;
    let channel = Channel::builder()
        .max_protocol_version(2)
        .connect(server.local_addr())
        .await
        .unwrap();
    let feed = FeedClient::new(channel);
    assert!(matches!(
        feed.numbers(3).await.unwrap_err(),
        Error::StreamsUnsupported { version: 2, .. }
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn a_thousand_streams_share_one_connection() {
    let server = serve(FeedImpl::default()).await;
    let feed = client(&server, Codec::MessagePack, 8).await;
    let mut streams = Vec::new();
    for _ in 0..1_000 {
        streams.push(feed.numbers(20).await.unwrap());
    }
    let sums = futures::future::join_all(
        streams
            .into_iter()
            .map(|stream| stream.fold(0u64, |sum, item| async move { sum + item.unwrap() })),
    )
    .await;
    assert!(sums.iter().all(|&sum| sum == (0..20).sum::<u64>()));
    assert_eq!(feed.channel().in_flight(), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_call_to_a_unary_method_is_refused_with_its_shape() {
    let server = serve(FeedImpl::default()).await;
    let channel = Channel::connect(server.local_addr()).await.unwrap();
    let add = wirecall::client::Method::new("Feed", "add");
    // The unary `add` opened as a stream: one error, naming the method's shape.
    #[wirecall::message]
    struct AddArgs {
        a: u64,
        b: u64,
    }
    let stream = channel
        .open_stream::<AddArgs, NumbersItem>(&add, AddArgs { a: 1, b: 2 })
        .await
        .unwrap();
    let items: Vec<_> = stream.collect().await;
    assert_eq!(items.len(), 1);
    match &items[0] {
        Err(Error::Remote { code, message }) => {
            assert_eq!(*code, ErrorCode::BadRequest);
            assert!(message.contains("add is a unary method"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // And the streaming `numbers` called as a unary method.
    let numbers = wirecall::client::Method::new("Feed", "numbers");
    #[wirecall::message]
    struct NumbersArgs {
        count: u64,
    }
    let error = channel
        .call::<NumbersArgs, NumbersItem>(&numbers, NumbersArgs { count: 1 })
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Remote { code: ErrorCode::BadRequest, message } if message.contains("numbers is a server-streaming method")),
        "{error}"
    );
    server.shutdown().await;
}

/// The item message of `Feed.numbers`, written by hand as the macro generates it.
#[wirecall::message]
struct NumbersItem {
    value: u64,
}

impl wirecall::stream::ItemMessage for NumbersItem {
    type Item = u64;

    fn from_item(value: u64) -> (Self, bool) {
        (Self { value }, false)
    }

    fn into_item(self) -> Result<u64, Error> {
        Ok(self.value)
    }
}

#[tokio::test]
async fn a_balanced_channel_opens_each_stream_on_one_endpoint() {
    use wirecall::discovery::{Balance, Registration, Registry, StaticRegistry};

    let registry = Registry::new(StaticRegistry::new());
    let mut servers = Vec::new();
    let mut stats = Vec::new();
    for _ in 0..2 {
        let feed = FeedImpl::default();
        stats.push(Arc::clone(&feed.stats));
        let server = Server::builder()
            .serve(FeedServer::new(feed))
            .register(registry.clone(), Registration::bound_address())
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        servers.push(server);
    }
    let balanced = wirecall::Channel::balanced()
        .balance(Balance::RoundRobin)
        .discover(&registry, "Feed")
        .await
        .unwrap();
    eventually("both endpoints are known", || {
        balanced.endpoints().len() == 2
    })
    .await;
    let feed = FeedClient::new(balanced);
    // Round robin: two streams, one on each endpoint, each whole from its own producer.
    let mut first = feed.endless().await.unwrap();
    let mut second = feed.endless().await.unwrap();
    for expected in 0..10 {
        assert_eq!(first.next().await.unwrap().unwrap(), expected);
        assert_eq!(second.next().await.unwrap().unwrap(), expected);
    }
    assert!(stats.iter().all(|s| s.running.load(Ordering::SeqCst)));
    drop((first, second));
    eventually("both producers are dropped", || {
        stats.iter().all(|s| s.dropped.load(Ordering::SeqCst) == 1)
    })
    .await;
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_server_shutting_down_ends_its_streams_after_the_grace_period() {
    let feed_impl = FeedImpl::default();
    let stats = Arc::clone(&feed_impl.stats);
    let server = Server::builder()
        .serve(FeedServer::new(feed_impl))
        .shutdown_grace_period(Duration::from_millis(300))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let feed = client(&server, Codec::MessagePack, 4).await;
    let mut endless = feed.endless().await.unwrap();
    assert_eq!(endless.next().await.unwrap().unwrap(), 0);
    let started = tokio::time::Instant::now();
    let shutdown = tokio::spawn(server.shutdown());
    let error = loop {
        match endless.next().await.expect("the stream ends with an error") {
            Ok(_) => continue,
            Err(error) => break error,
        }
    };
    // Stopped half-way, the stream may have run: it ends as a call stopped the same way does,
    // with the connection closed without the goodbye that says "never ran".
    assert!(
        matches!(error, Error::ConnectionClosed { code: None, .. }),
        "{error:?}"
    );
    assert_eq!(error.outcome(), wirecall::Outcome::MaybeRan);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "ran for the grace period"
    );
    assert!(endless.next().await.is_none());
    shutdown.await.unwrap();
    assert_eq!(stats.dropped.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_client_stream_uploads_in_every_codec() {
    let server = serve(FeedImpl::default()).await;
    for codec in Codec::available() {
        let feed = client(&server, codec, 4).await;
        let sum = feed.sum(futures::stream::iter(0..1_000u64)).await.unwrap();
        assert_eq!(sum, (0..1_000).sum::<u64>(), "{codec}");
        // An empty upload is an upload too.
        assert_eq!(
            feed.sum(futures::stream::empty()).await.unwrap(),
            0,
            "{codec}"
        );
        // A result reply.
        let under = feed
            .sum_until(100, futures::stream::iter([1u64, 2, 3]))
            .await
            .unwrap();
        assert_eq!(under, Ok(6), "{codec}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_bidirectional_stream_echoes_while_it_uploads_in_every_codec() {
    let server = serve(FeedImpl::default()).await;
    for codec in Codec::available() {
        let feed = client(&server, codec, 4).await;
        let ticks = (0..100u64).map(|n| Tick {
            n,
            body: bytes::Bytes::from(vec![1u8; 16]),
        });
        let doubled: Vec<u64> = feed
            .doubled(futures::stream::iter(ticks))
            .await
            .unwrap()
            .map(|tick| tick.unwrap().n)
            .collect()
            .await;
        assert_eq!(
            doubled,
            (0..100).map(|n| n * 2).collect::<Vec<_>>(),
            "{codec}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn an_early_answer_reaches_the_caller_while_it_still_uploads() {
    let server = serve(FeedImpl::default()).await;
    let feed = client(&server, Codec::MessagePack, 4).await;
    // An endless upload, counted as the client's upload task takes its items.
    let taken = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Arc::clone(&taken);
    let endless = futures::stream::iter(1u64..).inspect(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let answer = tokio::time::timeout(Duration::from_secs(10), feed.sum_until(10, endless))
        .await
        .expect("the answer comes although the upload never ends")
        .unwrap();
    assert_eq!(
        answer,
        Err(Refused {
            reason: "the sum passed 10".to_owned()
        })
    );
    // The upload stopped: the client takes no more items once the answer is in.
    let after_answer = taken.load(Ordering::SeqCst);
    assert_eq!(feed.add(1, 1).await.unwrap(), 2);
    assert!(
        taken.load(Ordering::SeqCst) <= after_answer + 1,
        "the upload went on after the answer"
    );
    // At most the server's window (32) plus what was in flight was ever taken.
    assert!(after_answer <= 5 + 32 + 1, "{after_answer} items taken");
    server.shutdown().await;
}

#[tokio::test]
async fn an_upload_waits_for_the_servers_credit() {
    let server = serve(FeedImpl::default()).await;
    let feed = client(&server, Codec::MessagePack, 4).await;
    // `doubled` maps each tick as its output is read: a caller that never reads the output
    // leaves the server's window of 4 output items full, so the server stops taking the
    // upload, and the client's upload stops taking items from the caller's stream.
    let taken = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Arc::clone(&taken);
    let ticks = futures::stream::iter(0u64..).map(move |n| {
        counted.fetch_add(1, Ordering::SeqCst);
        Tick {
            n,
            body: bytes::Bytes::new(),
        }
    });
    let mut output = feed.doubled(ticks).await.unwrap();
    eventually("the upload starts", || taken.load(Ordering::SeqCst) > 0).await;
    // Other calls go on; meanwhile the upload stays bounded.
    for n in 0..50 {
        assert_eq!(feed.add(n, 1).await.unwrap(), n + 1);
    }
    let bound = 4 + 1 + 32 + 1 + 1;
    let seen = taken.load(Ordering::SeqCst);
    assert!(
        seen <= bound,
        "the upload ran ahead of the credit: {seen} items"
    );
    // Reading the output lets it all move again.
    for expected in 0..100u64 {
        assert_eq!(output.next().await.unwrap().unwrap().n, expected * 2);
    }
    drop(output);
    server.shutdown().await;
}

#[tokio::test]
async fn server_layers_and_metadata_apply_to_opening_a_stream() {
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .layer(tower::filter::AsyncFilterLayer::new(
            |call: wirecall::server::Request| async move {
                match call.metadata().get("tenant") {
                    Some(_) => Ok(call),
                    None => Err(wirecall::CallError::PermissionDenied(
                        "no tenant".to_owned(),
                    )),
                }
            },
        ))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::connect(server.local_addr()).await.unwrap();
    // Refused by the layer: one error item, and the handler never ran.
    let refused: Vec<_> = FeedClient::new(channel.clone())
        .numbers(3)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(refused.len(), 1);
    assert!(
        matches!(refused[0], Err(Error::PermissionDenied { .. })),
        "{:?}",
        refused[0]
    );
    // With the metadata the layer wants, the stream opens.
    let tenant = FeedClient::new(channel.with_metadata("tenant", "acme").unwrap());
    let numbers: Vec<u64> = tenant
        .numbers(3)
        .await
        .unwrap()
        .map(|n| n.unwrap())
        .collect()
        .await;
    assert_eq!(numbers, [0, 1, 2]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_over_the_connections_limit_is_refused_and_the_rest_go_on() {
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .max_streams_per_connection(2)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let feed = client(&server, Codec::MessagePack, 4).await;
    let mut first = feed.endless().await.unwrap();
    let mut second = feed.endless().await.unwrap();
    first.next().await.unwrap().unwrap();
    second.next().await.unwrap().unwrap();
    let refused: Vec<_> = feed.numbers(3).await.unwrap().collect().await;
    assert!(
        matches!(
            &refused[..],
            [Err(Error::Remote {
                code: ErrorCode::Overloaded,
                ..
            })]
        ),
        "{refused:?}"
    );
    // Calls are counted apart, and the open streams go on.
    assert_eq!(feed.add(1, 2).await.unwrap(), 3);
    first.next().await.unwrap().unwrap();
    // A stream that ends gives its place back.
    drop(second);
    eventually_async("a new stream opens once one ended", || async {
        let numbers: Vec<_> = feed.numbers(2).await.unwrap().collect().await;
        numbers.iter().all(|n| n.is_ok()) && numbers.len() == 2
    })
    .await;
    drop(first);
    server.shutdown().await;
}
