//! A method's policy holds for its streams as for its calls, on a direct and a balanced
//! channel alike: the concurrency limit counts a stream for as long as it is open, the
//! circuit breaker counts a stream that fails, and a balanced channel's own layers see a
//! stream's open.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use wirecall::client::{Reply, Request};
use wirecall::discovery::{Registration, Registry, StaticRegistry};
use wirecall::stream::Streaming;
use wirecall::{CallContext, Channel, Error, Next, RunningServer, Server};
use wirecall_test_support::eventually;

/// Streams with policies.
#[wirecall::service]
pub trait Tap {
    /// 0, 1, 2, ... until the caller stops it; at most one open through a channel.
    #[wirecall(concurrency = 1)]
    async fn watch(&self) -> Streaming<u64>;
    /// One item, then a panic: the stream ends with an error. Its circuit opens after two.
    #[wirecall(breaker(min_calls = 2, threshold = 50, open = "60s"))]
    async fn flaky(&self) -> Streaming<u64>;
    /// The metadata value `x-tenant` of the call, as the stream's one item.
    async fn tenant(&self) -> Streaming<String>;
}

#[derive(Clone, Default)]
struct Taps {
    /// Streams of `flaky` the server opened.
    flaky_opened: Arc<AtomicUsize>,
}

impl Tap for Taps {
    async fn watch(&self) -> Streaming<u64> {
        Streaming::new(futures::stream::iter(0..))
    }

    async fn flaky(&self) -> Streaming<u64> {
        self.flaky_opened.fetch_add(1, Ordering::SeqCst);
        Streaming::from_iter((0..2u64).inspect(|&n| {
            if n == 1 {
                panic!("the tap breaks");
            }
        }))
    }

    async fn tenant(&self) -> Streaming<String> {
        let tenant =
            CallContext::with_current(|call| call.metadata().get("x-tenant").map(str::to_owned))
                .flatten()
                .unwrap_or_default();
        Streaming::from_iter([tenant])
    }
}

async fn serve(taps: Taps, registry: &Registry) -> RunningServer {
    Server::builder()
        .serve(TapServer::new(taps))
        .register(registry.clone(), Registration::bound_address())
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

/// A direct channel to `server` and a balanced channel over `registry`.
async fn both_channels(server: &RunningServer, registry: &Registry) -> [Channel; 2] {
    let direct = Channel::connect(server.local_addr()).await.unwrap();
    let balanced = Channel::balanced()
        .discover(registry, TapClient::SERVICE_NAME)
        .await
        .unwrap();
    [direct, balanced]
}

#[tokio::test]
async fn a_stream_holds_its_methods_concurrency_place_while_it_is_open() {
    let registry = Registry::new(StaticRegistry::new());
    let server = serve(Taps::default(), &registry).await;
    for channel in both_channels(&server, &registry).await {
        let taps = TapClient::new(channel);
        let mut open = taps.watch().await.unwrap();
        assert_eq!(open.next().await.unwrap().unwrap(), 0);
        // A second stream while the first is open: refused before anything is sent.
        let err = taps.watch().await.unwrap_err();
        assert!(
            matches!(&err, Error::ConcurrencyLimit { limit: 1, .. }),
            "{err:?}"
        );
        assert_eq!(err.outcome(), wirecall::Outcome::NotRun);
        // The first one ends (dropped): its place is free again.
        drop(open);
        let mut again = taps.watch().await.unwrap();
        assert_eq!(again.next().await.unwrap().unwrap(), 0);
    }
    server.shutdown().await;
}

#[tokio::test]
async fn streams_that_fail_open_their_methods_circuit() {
    wirecall_test_support::quiet_panics_starting_with("the tap breaks");
    let registry = Registry::new(StaticRegistry::new());
    let taps_impl = Taps::default();
    let opened = Arc::clone(&taps_impl.flaky_opened);
    let server = serve(taps_impl, &registry).await;
    for (round, channel) in both_channels(&server, &registry)
        .await
        .into_iter()
        .enumerate()
    {
        let taps = TapClient::new(channel);
        for _ in 0..2 {
            let items: Vec<_> = taps.flaky().await.unwrap().collect().await;
            assert_eq!(items.len(), 2, "{items:?}");
            assert!(
                matches!(&items[1], Err(Error::HandlerPanicked { .. })),
                "{items:?}"
            );
        }
        // Two failed streams of two: the circuit is open, and the next open fails at once
        // without reaching the server.
        let err = taps.flaky().await.unwrap_err();
        assert!(matches!(&err, Error::CircuitOpen { .. }), "{err:?}");
        assert_eq!(opened.load(Ordering::SeqCst), 2 * (round + 1));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_balanced_channels_own_layers_see_a_streams_open() {
    let registry = Registry::new(StaticRegistry::new());
    let server = serve(Taps::default(), &registry).await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&seen);
    let tenant_layer = tower::layer::layer_fn(move |inner: Next<Request, Reply>| {
        let counted = Arc::clone(&counted);
        tower::service_fn(move |mut request: Request| {
            let mut inner = inner.clone();
            let counted = Arc::clone(&counted);
            async move {
                assert!(request.is_stream());
                counted.fetch_add(1, Ordering::SeqCst);
                request.insert_metadata("x-tenant", "acme").unwrap();
                tower::Service::call(&mut inner, request).await
            }
        })
    });
    let channel = Channel::balanced()
        .layer(tenant_layer)
        .discover(&registry, TapClient::SERVICE_NAME)
        .await
        .unwrap();
    eventually("the endpoint is known", || channel.endpoints().len() == 1).await;
    let taps = TapClient::new(channel);
    let items: Vec<String> = taps
        .tenant()
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items, ["acme"]);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    server.shutdown().await;
}
