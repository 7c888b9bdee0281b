//! One call path for every caller: a channel's tower layers apply to its calls, raw calls and
//! one-way calls alike, on a direct [`Channel`] and on a balanced [`Channel`]. On a balanced
//! channel its own layers run once per call and the endpoint options' layers once per
//! attempt, failovers included.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tower::layer::util::Stack;
use tower::util::BoxLayer;
use tower::{Service, ServiceBuilder};
use wirecall::client::{Method, Reply, Request};
use wirecall::discovery::StaticRegistry;
use wirecall::discovery::{BalancedChannelBuilder, Registration, Registry};
use wirecall::{
    BoxError, CallContext, Channel, ChannelBuilder, Codec, Error, ErrorCode, Next, RunningServer,
};

const TENANT: &str = "x-tenant";

/// A channel layer, boxed so that helpers can return one.
type Boxed = BoxLayer<Next<Request, Reply>, Request, Reply, BoxError>;

#[wirecall::service]
trait Probe {
    /// The value of call metadata `key`.
    #[idempotent]
    async fn header(&self, key: String) -> Option<String>;
    /// Records the value of call metadata `key`.
    #[oneway]
    async fn note(&self, key: String);
}

/// What one server saw.
#[derive(Clone, Default)]
struct Seen {
    calls: Arc<AtomicUsize>,
    notes: Arc<Mutex<Vec<Option<String>>>>,
}

fn metadata_value(key: &str) -> Option<String> {
    CallContext::with_current(|call| call.metadata().get(key).map(str::to_owned)).flatten()
}

impl Probe for Seen {
    async fn header(&self, key: String) -> Option<String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        metadata_value(&key)
    }

    async fn note(&self, key: String) {
        self.notes.lock().unwrap().push(metadata_value(&key));
    }
}

/// Two servers of `Probe` in one registry.
struct Fleet {
    registry: Registry,
    servers: Vec<RunningServer>,
    seen: Vec<Seen>,
}

impl Fleet {
    async fn start() -> Self {
        let registry = Registry::new(StaticRegistry::new());
        let mut servers = Vec::new();
        let mut seen = Vec::new();
        for _ in 0..2 {
            let server_seen = Seen::default();
            let server = wirecall::Server::builder()
                .serve(ProbeServer::new(server_seen.clone()))
                .register(registry.clone(), Registration::bound_address())
                .bind("127.0.0.1:0")
                .await
                .unwrap();
            servers.push(server);
            seen.push(server_seen);
        }
        Self {
            registry,
            servers,
            seen,
        }
    }

    /// A balanced channel over both servers, once it knows both.
    async fn balanced(&self, builder: BalancedChannelBuilder) -> Channel {
        let channel = builder.discover(&self.registry, "Probe").await.unwrap();
        eventually("both endpoints to be known", || {
            channel.endpoints().len() == 2
        })
        .await;
        channel
    }

    /// A direct channel to the first server.
    async fn direct(&self, builder: ChannelBuilder) -> Channel {
        builder.connect(self.servers[0].local_addr()).await.unwrap()
    }

    fn calls(&self) -> usize {
        self.seen
            .iter()
            .map(|s| s.calls.load(Ordering::SeqCst))
            .sum()
    }

    fn notes(&self) -> Vec<Option<String>> {
        self.seen
            .iter()
            .flat_map(|s| s.notes.lock().unwrap().clone())
            .collect()
    }

    async fn stop(self) {
        for server in self.servers {
            server.shutdown().await;
        }
    }
}

/// Polls `condition` until it holds, failing after 10 s.
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A direct or a balanced channel, called the three ways a channel can be called: the same
/// calls on both, since they are the same type.
enum Via {
    Direct(Channel),
    Balanced(Channel),
}

impl Via {
    fn channel(&self) -> &Channel {
        match self {
            Via::Direct(channel) | Via::Balanced(channel) => channel,
        }
    }

    async fn call(&self) -> Result<Option<String>, Error> {
        ProbeClient::new(self.channel().clone())
            .header(TENANT.into())
            .await
    }

    async fn call_raw(&self) -> Result<Option<String>, Error> {
        static HEADER: Method = Method::new("Probe", "header").idempotent();
        let args = bytes::Bytes::from(format!(r#"{{"key":"{TENANT}"}}"#));
        let reply = self.channel().call_raw(&HEADER, Codec::Json, args).await?;
        let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
        Ok(reply["value"].as_str().map(str::to_owned))
    }

    async fn notify(&self) -> Result<(), Error> {
        ProbeClient::new(self.channel().clone())
            .note(TENANT.into())
            .await
    }
}

/// A layer that adds `x-tenant: acme` to every call's metadata.
fn add_tenant() -> tower::util::MapRequestLayer<fn(Request) -> Request> {
    tower::util::MapRequestLayer::new(|mut request: Request| {
        request.insert_metadata(TENANT, "acme").unwrap();
        request
    })
}

/// A layer that counts the requests passing through it.
fn counting(count: Arc<AtomicUsize>) -> Boxed {
    BoxLayer::new(tower::layer::layer_fn(
        move |inner: Next<Request, Reply>| {
            let count = Arc::clone(&count);
            tower::service_fn(move |request: Request| {
                count.fetch_add(1, Ordering::SeqCst);
                let mut inner = inner.clone();
                async move { inner.call(request).await }
            })
        },
    ))
}

/// A layer that sheds the first request passing through it as overloaded, before it is sent.
fn shed_first(count: Arc<AtomicUsize>) -> Boxed {
    BoxLayer::new(tower::layer::layer_fn(
        move |inner: Next<Request, Reply>| {
            let count = Arc::clone(&count);
            tower::service_fn(move |request: Request| {
                let first = count.fetch_add(1, Ordering::SeqCst) == 0;
                let mut inner = inner.clone();
                async move {
                    if first {
                        return Err(BoxError::from(tower::load_shed::error::Overloaded::new()));
                    }
                    inner.call(request).await
                }
            })
        },
    ))
}

/// A layer whose calls take ten seconds before they go on.
fn slow() -> Boxed {
    BoxLayer::new(tower::layer::layer_fn(|inner: Next<Request, Reply>| {
        tower::service_fn(move |request: Request| {
            let mut inner = inner.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                inner.call(request).await
            }
        })
    }))
}

fn layer_code<T: std::fmt::Debug>(result: Result<T, Error>) -> ErrorCode {
    match result {
        Err(Error::Layer { code, .. }) => code,
        other => panic!("expected a layer's error, got {other:?}"),
    }
}

/// The three ways of calling, each through the layers of `via`: every one carries the
/// metadata the layer added.
async fn the_metadata_layer_applies_to_every_kind_of_call(fleet: &Fleet, via: Via) {
    assert_eq!(via.call().await.unwrap().as_deref(), Some("acme"));
    assert_eq!(via.call_raw().await.unwrap().as_deref(), Some("acme"));
    via.notify().await.unwrap();
    eventually("the one-way call to arrive", || fleet.notes().len() == 1).await;
    assert_eq!(fleet.notes(), [Some("acme".to_owned())]);
}

#[tokio::test]
async fn a_metadata_layer_applies_to_direct_calls_raw_calls_and_one_way_calls() {
    let fleet = Fleet::start().await;
    let channel = fleet
        .direct(Channel::builder().codec(Codec::Json).layer(add_tenant()))
        .await;
    the_metadata_layer_applies_to_every_kind_of_call(&fleet, Via::Direct(channel)).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_balanced_channels_own_metadata_layer_applies_to_every_kind_of_call() {
    let fleet = Fleet::start().await;
    let channel = fleet
        .balanced(
            Channel::balanced()
                .channel(Channel::builder().codec(Codec::Json))
                .layer(add_tenant()),
        )
        .await;
    the_metadata_layer_applies_to_every_kind_of_call(&fleet, Via::Balanced(channel)).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_endpoint_options_metadata_layer_applies_to_every_kind_of_balanced_call() {
    let fleet = Fleet::start().await;
    let channel = fleet
        .balanced(
            Channel::balanced().channel(Channel::builder().codec(Codec::Json).layer(add_tenant())),
        )
        .await;
    the_metadata_layer_applies_to_every_kind_of_call(&fleet, Via::Balanced(channel)).await;
    fleet.stop().await;
}

/// A timeout layer over a layer that takes ten seconds fails each kind of call quickly with
/// the timeout's code, and nothing reaches a server.
async fn the_timeout_layer_applies_to_every_kind_of_call(fleet: &Fleet, via: Via) {
    let started = tokio::time::Instant::now();
    assert_eq!(layer_code(via.call().await), ErrorCode::DeadlineExceeded);
    assert_eq!(
        layer_code(via.call_raw().await),
        ErrorCode::DeadlineExceeded
    );
    assert_eq!(layer_code(via.notify().await), ErrorCode::DeadlineExceeded);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(fleet.calls(), 0);
    assert!(fleet.notes().is_empty());
}

fn timeout_over_slow() -> Boxed {
    BoxLayer::new(Stack::new(
        slow(),
        tower::timeout::TimeoutLayer::new(Duration::from_millis(50)),
    ))
}

#[tokio::test]
async fn a_timeout_layer_applies_to_direct_calls_raw_calls_and_one_way_calls() {
    let fleet = Fleet::start().await;
    let channel = fleet
        .direct(
            Channel::builder()
                .codec(Codec::Json)
                .layer(timeout_over_slow()),
        )
        .await;
    the_timeout_layer_applies_to_every_kind_of_call(&fleet, Via::Direct(channel)).await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_balanced_channels_own_timeout_layer_applies_to_every_kind_of_call() {
    let fleet = Fleet::start().await;
    let channel = fleet
        .balanced(
            Channel::balanced()
                .channel(Channel::builder().codec(Codec::Json))
                .layer(timeout_over_slow()),
        )
        .await;
    the_timeout_layer_applies_to_every_kind_of_call(&fleet, Via::Balanced(channel)).await;
    fleet.stop().await;
}

#[tokio::test]
async fn an_endpoint_options_timeout_layer_applies_to_every_kind_of_balanced_call() {
    let fleet = Fleet::start().await;
    let endpoint = Channel::builder()
        .codec(Codec::Json)
        .layer(timeout_over_slow());
    let channel = fleet.balanced(Channel::balanced().channel(endpoint)).await;
    // The timeout is not a reason to fail over: each kind fails once, with the layer's code.
    let via = Via::Balanced(channel);
    for result in [
        via.call().await.map(drop),
        via.call_raw().await.map(drop),
        via.notify().await,
    ] {
        match result {
            Err(Error::Endpoint { cause, .. }) => assert!(
                matches!(
                    *cause,
                    Error::Layer {
                        code: ErrorCode::DeadlineExceeded,
                        ..
                    }
                ),
                "{cause:?}"
            ),
            other => panic!("expected the endpoint's layer to time out, got {other:?}"),
        }
    }
    assert_eq!(fleet.calls(), 0);
    fleet.stop().await;
}

/// Load shedding over a rate limit of one call an hour: a second call is refused at once.
fn one_call_an_hour() -> Boxed {
    BoxLayer::new(
        ServiceBuilder::new()
            .load_shed()
            .rate_limit(1, Duration::from_secs(3600))
            .into_inner(),
    )
}

/// For each kind of call, a fresh channel from `open` lets the first through and sheds the
/// second.
async fn a_rate_limit_applies_to_every_kind_of_call<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Via>,
{
    let via = open().await;
    via.call().await.unwrap();
    assert_eq!(layer_code(via.call().await), ErrorCode::Overloaded);
    let via = open().await;
    via.call_raw().await.unwrap();
    assert_eq!(layer_code(via.call_raw().await), ErrorCode::Overloaded);
    let via = open().await;
    via.notify().await.unwrap();
    assert_eq!(layer_code(via.notify().await), ErrorCode::Overloaded);
}

#[tokio::test]
async fn a_rate_limit_layer_applies_to_direct_calls_raw_calls_and_one_way_calls() {
    let fleet = Fleet::start().await;
    a_rate_limit_applies_to_every_kind_of_call(|| async {
        Via::Direct(
            fleet
                .direct(
                    Channel::builder()
                        .codec(Codec::Json)
                        .layer(one_call_an_hour()),
                )
                .await,
        )
    })
    .await;
    fleet.stop().await;
}

#[tokio::test]
async fn a_balanced_channels_own_rate_limit_counts_every_call_of_the_channel() {
    let fleet = Fleet::start().await;
    a_rate_limit_applies_to_every_kind_of_call(|| async {
        Via::Balanced(
            fleet
                .balanced(
                    Channel::balanced()
                        .channel(Channel::builder().codec(Codec::Json))
                        .layer(one_call_an_hour()),
                )
                .await,
        )
    })
    .await;
    // Two endpoints, one limit: the second call was refused although the other endpoint was
    // idle, and the refused calls never reached a server.
    assert_eq!(fleet.calls(), 2);
    fleet.stop().await;
}

#[tokio::test]
async fn an_endpoint_options_rate_limit_limits_each_endpoint_and_calls_fail_over() {
    let fleet = Fleet::start().await;
    let endpoint = Channel::builder()
        .codec(Codec::Json)
        .layer(one_call_an_hour());
    let via = Via::Balanced(fleet.balanced(Channel::balanced().channel(endpoint)).await);
    // One call an hour per endpoint: two calls find room, the one shed on a used endpoint
    // fails over to the other; the third finds none.
    via.call().await.unwrap();
    via.call_raw().await.unwrap();
    match via.notify().await {
        Err(Error::Endpoint { cause, .. }) => assert!(
            matches!(
                *cause,
                Error::Layer {
                    code: ErrorCode::Overloaded,
                    ..
                }
            ),
            "{cause:?}"
        ),
        other => panic!("expected both endpoints to shed the call, got {other:?}"),
    }
    assert_eq!(fleet.calls(), 2);
    let per_server: Vec<usize> = fleet
        .seen
        .iter()
        .map(|s| s.calls.load(Ordering::SeqCst))
        .collect();
    assert_eq!(per_server, [1, 1]);
    fleet.stop().await;
}

#[tokio::test]
async fn a_failover_passes_the_per_attempt_layers_once_per_attempt_and_the_per_call_ones_once() {
    let fleet = Fleet::start().await;
    let per_call = Arc::new(AtomicUsize::new(0));
    let attempts = Arc::new(AtomicUsize::new(0));
    let shed = Arc::new(AtomicUsize::new(0));
    let endpoint = Channel::builder()
        .codec(Codec::Json)
        .layer(counting(Arc::clone(&attempts)))
        .layer(shed_first(Arc::clone(&shed)));
    let via = Via::Balanced(
        fleet
            .balanced(
                Channel::balanced()
                    .channel(endpoint)
                    .layer(counting(Arc::clone(&per_call))),
            )
            .await,
    );
    // The first attempt is shed before it is sent, so the call goes to the other endpoint.
    assert_eq!(via.call().await.unwrap(), None);
    assert_eq!(per_call.load(Ordering::SeqCst), 1);
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(fleet.calls(), 1);

    // A one-way call fails over the same way.
    shed.store(0, Ordering::SeqCst);
    via.notify().await.unwrap();
    assert_eq!(per_call.load(Ordering::SeqCst), 2);
    assert_eq!(attempts.load(Ordering::SeqCst), 4);
    eventually("the one-way call to arrive", || fleet.notes().len() == 1).await;
    fleet.stop().await;
}
