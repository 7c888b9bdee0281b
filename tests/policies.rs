//! Per-method policies declared with `#[wirecall(..)]`, against real servers: the declared
//! deadline is the call's (and reaches the server) unless the caller's is shorter; the
//! concurrency limit fails the call over it at once; retries resend an idempotent call up to
//! their count, on a direct and on a balanced channel; a declared breaker opens per method
//! (per endpoint on a balanced channel, which then calls the healthy ones); a fallback
//! answers transport failures but never application errors; run-time overrides go over the
//! declaration in the documented order; reflection shows each method's declared policy.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tower::util::BoxLayer;
use tower::Service as _;
use wirecall::discovery::{Balance, Hedging, Registration, Registry, StaticRegistry};
use wirecall::policy::Policies;
use wirecall::reflect::ReflectionClient;
use wirecall::server::{Reply, Request};
use wirecall::{
    BoxError, CallContext, CallError, Channel, Error, ErrorCode, Next, RunningServer, Server,
};
use wirecall_test_support::{eventually, quiet_panics_starting_with};

/// The message of every panic the handlers inject: the test binary does not print those.
const INJECTED: &str = "injected failure";

#[wirecall::message]
#[derive(Clone, PartialEq)]
struct Missing {
    id: u64,
}

#[wirecall::service]
#[wirecall(timeout = "2s")]
trait Guarded {
    /// The milliseconds left of the call's deadline when the handler started.
    #[wirecall(timeout = "300ms")]
    async fn deadline_seen(&self) -> u64;
    /// The same, for a method with only the trait's default.
    async fn default_deadline_seen(&self) -> u64;
    /// Sleeps `millis`.
    #[wirecall(timeout = "200ms")]
    async fn sleep(&self, millis: u64);
    /// Waits until the test lets it go; returns how many were holding.
    #[wirecall(concurrency = 50)]
    async fn hold(&self) -> u64;
    /// Counts the call; a balanced channel sends it elsewhere when an endpoint refuses it, and
    /// an endpoint that keeps refusing leaves the method's rotation.
    #[idempotent]
    #[wirecall(breaker(min_calls = 4, open = "60s"))]
    async fn failover(&self) -> u64;
    /// Counts the call.
    #[idempotent]
    #[wirecall(retries = 2)]
    async fn retried(&self) -> u64;
    /// Counts the call, and fails it (the handler panics) unless the backend is healthy.
    #[wirecall(breaker(min_calls = 4, open = "60s"))]
    async fn broken(&self) -> u64;
    /// Fails like `broken`, with a fallback that answers once its circuit is open.
    #[wirecall(breaker(min_calls = 2, open = "60s"), fallback = broken_fallback)]
    async fn broken_with_fallback(&self) -> u64;
    /// `Err(Missing)` for id 0, a name otherwise; `cached_name` answers when no answer comes.
    #[wirecall(fallback = cached_name)]
    async fn name(&self, id: u64) -> Result<String, Missing>;
}

/// `name`'s fallback: a stale answer naming why it was needed.
async fn cached_name(error: Error, id: u64) -> Result<Result<String, Missing>, Error> {
    let why = match error {
        Error::ConnectionClosed { .. } => "closed",
        Error::Connect { .. } => "connect",
        _ => "other",
    };
    Ok(Ok(format!("cached {id} ({why})")))
}

/// `broken_with_fallback`'s fallback: 0, for an open circuit only.
async fn broken_fallback(error: Error) -> Result<u64, Error> {
    match error {
        Error::CircuitOpen { .. } => Ok(0),
        other => Err(other),
    }
}

#[derive(Clone)]
struct Backend {
    healthy: bool,
    calls: Arc<AtomicU64>,
    holding: Arc<AtomicU64>,
    gate: Arc<Semaphore>,
}

impl Backend {
    fn new(healthy: bool) -> Self {
        Self {
            healthy,
            calls: Arc::new(AtomicU64::new(0)),
            holding: Arc::new(AtomicU64::new(0)),
            gate: Arc::new(Semaphore::new(0)),
        }
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

fn remaining_ms() -> u64 {
    let remaining = CallContext::current()
        .and_then(|context| context.remaining())
        .expect("the call has a deadline");
    remaining.as_millis() as u64
}

impl Guarded for Backend {
    async fn deadline_seen(&self) -> u64 {
        remaining_ms()
    }

    async fn default_deadline_seen(&self) -> u64 {
        remaining_ms()
    }

    async fn sleep(&self, millis: u64) {
        tokio::time::sleep(Duration::from_millis(millis)).await;
    }

    async fn hold(&self) -> u64 {
        let holding = self.holding.fetch_add(1, Ordering::SeqCst) + 1;
        self.gate.acquire().await.unwrap().forget();
        self.holding.fetch_sub(1, Ordering::SeqCst);
        holding
    }

    async fn retried(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::SeqCst) + 1
    }

    async fn broken(&self) -> u64 {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.healthy {
            panic!("{INJECTED} on call {n}");
        }
        n
    }

    async fn failover(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::SeqCst) + 1
    }

    async fn broken_with_fallback(&self) -> u64 {
        self.broken().await
    }

    async fn name(&self, id: u64) -> Result<String, Missing> {
        match id {
            0 => Err(Missing { id }),
            _ => Ok(format!("user {id}")),
        }
    }
}

/// A server layer that refuses the next `shed` calls as overloaded before they run, counting
/// every call it sees in `seen`.
#[derive(Clone, Default)]
struct Shedder {
    shed: Arc<AtomicUsize>,
    seen: Arc<AtomicUsize>,
}

impl Shedder {
    fn shed_next(&self, calls: usize) {
        self.shed.store(calls, Ordering::SeqCst);
    }

    fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }

    fn layer(&self) -> BoxLayer<Next<Request, Reply>, Request, Reply, BoxError> {
        let shedder = self.clone();
        BoxLayer::new(tower::layer::layer_fn(
            move |inner: Next<Request, Reply>| {
                let shedder = shedder.clone();
                tower::service_fn(move |request: Request| {
                    shedder.seen.fetch_add(1, Ordering::SeqCst);
                    let refuse = shedder
                        .shed
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    let mut inner = inner.clone();
                    async move {
                        if refuse {
                            return Err(BoxError::from(CallError::Overloaded(
                                "shed by the test".to_owned(),
                            )));
                        }
                        inner.call(request).await
                    }
                })
            },
        ))
    }
}

async fn serve(backend: &Backend, shedder: &Shedder, registry: Option<&Registry>) -> RunningServer {
    quiet_panics_starting_with(INJECTED);
    let builder = Server::builder()
        .serve(GuardedServer::new(backend.clone()))
        .layer(shedder.layer());
    let builder = match registry {
        Some(registry) => builder.register(registry.clone(), Registration::bound_address()),
        None => builder,
    };
    builder.bind("127.0.0.1:0").await.unwrap()
}

/// Servers for `backends` behind `shedders`, registered in one static registry, and a client
/// over a balanced channel that knows every one of them. Without hedging: these tests count
/// the calls each server ran, and a hedge of a call slow on a loaded machine would run it
/// twice (`tests/fault_lab.rs` is where hedging is tested).
async fn fleet(
    backends: &[Backend],
    shedders: &[Shedder],
    balance: Balance,
) -> (Vec<RunningServer>, GuardedClient) {
    let registry = Registry::new(StaticRegistry::new());
    let mut servers = Vec::new();
    for (backend, shedder) in backends.iter().zip(shedders) {
        servers.push(serve(backend, shedder, Some(&registry)).await);
    }
    let channel = Channel::balanced()
        .balance(balance)
        .hedging(Hedging::Off)
        .discover(&registry, "Guarded")
        .await
        .unwrap();
    eventually("every endpoint to be known", || {
        channel.endpoints().len() == servers.len()
    })
    .await;
    (servers, GuardedClient::new(channel))
}

async fn client(server: &RunningServer) -> GuardedClient {
    GuardedClient::connect(server.local_addr()).await.unwrap()
}

#[tokio::test]
async fn a_declared_timeout_is_the_deadline_the_server_sees_unless_the_caller_s_is_shorter() {
    let backend = Backend::new(true);
    let server = serve(&backend, &Shedder::default(), None).await;
    let client = client(&server).await;

    // The channel's own deadline is 30 s: the method's 300 ms wins, and so does the trait's 2 s.
    let seen = client.deadline_seen().await.unwrap();
    assert!((150..=300).contains(&seen), "{seen} ms");
    let seen = client.default_deadline_seen().await.unwrap();
    assert!((1_500..=2_000).contains(&seen), "{seen} ms");
    // A shorter deadline of the caller's wins over the policy; a longer one does not.
    let seen = client
        .with_timeout(Duration::from_millis(100))
        .deadline_seen()
        .await
        .unwrap();
    assert!(seen <= 100, "{seen} ms");
    let seen = client
        .with_timeout(Duration::from_secs(60))
        .deadline_seen()
        .await
        .unwrap();
    assert!(seen <= 300, "{seen} ms");

    match client.sleep(2_000).await {
        Err(Error::Timeout { after }) => assert_eq!(after, Duration::from_millis(200)),
        other => panic!("expected the policy's timeout, got {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn the_call_over_the_concurrency_limit_fails_at_once_without_reaching_the_server() {
    let backend = Backend::new(true);
    let server = serve(&backend, &Shedder::default(), None).await;
    let client = client(&server).await;

    let held: Vec<_> = (0..50)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.hold().await })
        })
        .collect();
    eventually("50 calls to hold", || {
        backend.holding.load(Ordering::SeqCst) == 50
    })
    .await;
    match client.hold().await {
        Err(Error::ConcurrencyLimit {
            service,
            method,
            limit,
        }) => {
            assert_eq!(
                (service.as_str(), method.as_str(), limit),
                ("Guarded", "hold", 50)
            );
        }
        other => panic!("expected the concurrency limit, got {other:?}"),
    }
    assert_eq!(
        backend.holding.load(Ordering::SeqCst),
        50,
        "the 51st call was not sent"
    );
    // Another method has no limit.
    client.deadline_seen().await.unwrap();

    backend.gate.add_permits(50);
    for call in held {
        call.await.unwrap().unwrap();
    }
    // The places are given back.
    backend.gate.add_permits(1);
    client.hold().await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn an_idempotent_method_is_sent_again_up_to_its_retries_on_a_direct_channel() {
    let backend = Backend::new(true);
    let shedder = Shedder::default();
    let server = serve(&backend, &shedder, None).await;
    let client = client(&server).await;

    shedder.shed_next(2);
    assert_eq!(
        client.retried().await.unwrap(),
        1,
        "the third attempt ran, once"
    );
    assert_eq!(shedder.seen(), 3);

    // Refused more often than the retries allow: three attempts, then the server's error.
    shedder.shed_next(10);
    match client.retried().await {
        Err(Error::Remote {
            code: ErrorCode::Overloaded,
            ..
        }) => {}
        other => panic!("expected the server's refusal, got {other:?}"),
    }
    assert_eq!(shedder.seen(), 6, "one call and two retries");
    assert_eq!(backend.calls(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_declared_breaker_opens_for_its_method_and_fails_fast_naming_the_endpoint() {
    let backend = Backend::new(false);
    let server = serve(&backend, &Shedder::default(), None).await;
    let client = client(&server).await;

    for _ in 0..4 {
        assert!(matches!(
            client.broken().await,
            Err(Error::HandlerPanicked { .. })
        ));
    }
    match client.broken().await {
        Err(Error::CircuitOpen {
            endpoint,
            retry_after,
            ..
        }) => {
            assert_eq!(endpoint, Some(server.local_addr().to_string()));
            assert!(retry_after > Duration::from_secs(50), "{retry_after:?}");
        }
        other => panic!("expected an open circuit, got {other:?}"),
    }
    assert_eq!(backend.calls(), 4, "the open circuit sent nothing");
    // The breaker is per method: the others still go through.
    client.deadline_seen().await.unwrap();

    // A panic is the server's answer, not a reason for the fallback; the open circuit is.
    for _ in 0..2 {
        assert!(matches!(
            client.broken_with_fallback().await,
            Err(Error::HandlerPanicked { .. })
        ));
    }
    assert_eq!(client.broken_with_fallback().await.unwrap(), 0);
    assert_eq!(backend.calls(), 6);
    server.shutdown().await;
}

#[tokio::test]
async fn a_fallback_answers_transport_failures_but_never_application_errors() {
    let backend = Backend::new(true);
    let server = serve(&backend, &Shedder::default(), None).await;
    let client = client(&server).await;

    assert_eq!(client.name(7).await.unwrap(), Ok("user 7".to_owned()));
    // The service's own error is an answer.
    assert_eq!(client.name(0).await.unwrap(), Err(Missing { id: 0 }));

    server.shutdown().await;
    // The server is gone: the connection closed, then reconnecting fails.
    let answer = client.name(7).await.unwrap().unwrap();
    assert!(answer.starts_with("cached 7 ("), "{answer}");
    assert_ne!(
        answer, "cached 7 (other)",
        "a transport error reached the fallback"
    );
    // A method without a fallback still fails.
    assert!(client.deadline_seen().await.is_err());
}

#[tokio::test]
async fn run_time_policies_go_over_the_declared_ones() {
    let backend = Backend::new(true);
    let server = serve(&backend, &Shedder::default(), None).await;
    let policies = Policies::parse(
        "Guarded.deadline_seen timeout=100ms\n\
         Guarded.* concurrency=1\n\
         Guarded.hold concurrency=3 # the method's entry wins over the service's",
    )
    .unwrap();
    let channel = Channel::builder()
        .policies(policies)
        .connect(server.local_addr())
        .await
        .unwrap();
    let client = GuardedClient::new(channel);

    let seen = client.deadline_seen().await.unwrap();
    assert!(seen <= 100, "{seen} ms");
    // The trait's 2 s stays where nothing overrides it.
    let seen = client.default_deadline_seen().await.unwrap();
    assert!(seen > 1_000, "{seen} ms");

    let held: Vec<_> = (0..3)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.hold().await })
        })
        .collect();
    eventually("three calls to hold", || {
        backend.holding.load(Ordering::SeqCst) == 3
    })
    .await;
    assert!(matches!(
        client.hold().await,
        Err(Error::ConcurrencyLimit { limit: 3, .. })
    ));
    backend.gate.add_permits(3);
    for call in held {
        call.await.unwrap().unwrap();
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_balanced_channel_s_breaker_is_per_endpoint_and_sends_calls_to_the_healthy_ones() {
    let backends = [Backend::new(true), Backend::new(false), Backend::new(true)];
    let shedders: Vec<Shedder> = (0..3).map(|_| Shedder::default()).collect();
    let (servers, client) = fleet(&backends, &shedders, Balance::RoundRobin).await;

    // Until its circuit opens, the failing endpoint's calls fail (a panic is an answer, not
    // a reason to fail over); after, it is out of picking for `broken`.
    let mut failed = 0;
    for _ in 0..30 {
        if client.broken().await.is_err() {
            failed += 1;
        }
    }
    assert_eq!(
        backends[1].calls(),
        4,
        "the failing endpoint got calls until its circuit opened"
    );
    assert_eq!(failed, 4);
    for _ in 0..20 {
        client.broken().await.unwrap();
    }
    assert_eq!(backends[1].calls(), 4);
    assert_eq!(backends[0].calls() + backends[2].calls(), 26 + 20);
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_breaker_moves_an_idempotent_method_off_a_refusing_endpoint_with_no_failed_call() {
    let backends = [Backend::new(true), Backend::new(true), Backend::new(true)];
    let shedders = [Shedder::default(), Shedder::default(), Shedder::default()];
    // The second server refuses every call as overloaded: never run, so sent elsewhere.
    shedders[1].shed_next(usize::MAX);
    let (servers, client) = fleet(&backends, &shedders, Balance::RoundRobin).await;

    for _ in 0..60 {
        client
            .failover()
            .await
            .expect("no call fails: the refused ones went elsewhere");
    }
    assert_eq!(backends[1].calls(), 0);
    assert_eq!(
        shedders[1].seen(),
        4,
        "the refusing endpoint saw calls until its circuit opened, then none"
    );
    assert_eq!(backends[0].calls() + backends[2].calls(), 60);
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn retries_never_exceed_the_retry_budget_under_a_total_outage() {
    let backends: Vec<Backend> = (0..3).map(|_| Backend::new(true)).collect();
    let shedders: Vec<Shedder> = (0..3).map(|_| Shedder::default()).collect();
    for shedder in &shedders {
        shedder.shed_next(usize::MAX);
    }
    let (servers, client) = fleet(&backends, &shedders, Balance::PowerOfTwo).await;

    let calls = 300;
    let started = std::time::Instant::now();
    for _ in 0..calls {
        assert!(client.retried().await.is_err());
    }
    let seen: usize = shedders.iter().map(Shedder::seen).sum();
    // `retries = 2` alone would allow 900 attempts; the budget allows 20 % of the calls plus
    // 10 per second (over its 10 s window).
    let seconds = started.elapsed().as_secs() as usize + 1;
    let budget = calls / 5 + 10 * (10 + seconds);
    println!("total outage: {calls} calls, {seen} attempts (budget {budget} retries)");
    assert!(seen >= calls, "every call was sent once: {seen}");
    assert!(
        seen <= calls + budget,
        "{seen} attempts for {calls} calls, more than the budget's {budget} retries"
    );
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn retries_bound_the_failover_of_a_balanced_channel() {
    let backends: Vec<Backend> = (0..4).map(|_| Backend::new(true)).collect();
    let shedders: Vec<Shedder> = (0..4).map(|_| Shedder::default()).collect();
    for shedder in &shedders {
        shedder.shed_next(100);
    }
    let (servers, client) = fleet(&backends, &shedders, Balance::PowerOfTwo).await;

    // Every endpoint refuses: one attempt and two retries, not one per endpoint.
    assert!(client.retried().await.is_err());
    let attempts: usize = shedders.iter().map(Shedder::seen).sum();
    assert_eq!(attempts, 3);
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn reflection_shows_each_method_s_declared_policy() {
    let server = serve(&Backend::new(true), &Shedder::default(), None).await;
    let reflection = ReflectionClient::connect(server.local_addr())
        .await
        .unwrap();
    let schema = reflection
        .describe("Guarded".to_owned())
        .await
        .unwrap()
        .unwrap();
    let policy = |name: &str| {
        schema
            .methods
            .iter()
            .find(|method| method.name == name)
            .map(|method| method.policy.clone())
            .unwrap()
    };
    assert_eq!(policy("deadline_seen"), "timeout=300ms");
    assert_eq!(policy("default_deadline_seen"), "timeout=2s");
    assert_eq!(policy("hold"), "timeout=2s concurrency=50");
    assert_eq!(policy("retried"), "timeout=2s retries=2");
    assert_eq!(
        policy("broken"),
        "timeout=2s breaker=on breaker.min_calls=4 breaker.open=1m"
    );
    assert_eq!(policy("name"), "timeout=2s");
    server.shutdown().await;
}
