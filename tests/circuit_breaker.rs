//! The circuit breaker layer against real servers: a method failing often enough opens its
//! circuit, calls then fail fast without being sent, a healed server closes it again after
//! the trial calls, an endpoint's breaker on a balanced channel takes a failing endpoint out
//! for the method, and application errors never count.
//!
//! Run with `--nocapture` to see the timelines of the circuits.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use wirecall::discovery::{Balance, Registration, Registry, StaticRegistry};
use wirecall::layers::{CircuitBreakerConfig, CircuitBreakerLayer};
use wirecall::{Channel, Error, RunningServer, Server};
use wirecall_test_support::quiet_panics_starting_with;

/// The message of every panic the handlers inject: the test binary does not print those.
const INJECTED: &str = "injected failure";

#[wirecall::message]
#[derive(Clone, PartialEq)]
struct Refusal {
    reason: String,
}

#[wirecall::service]
trait Flaky {
    /// Counts the call and returns its number; fails (the handler panics) as the server's
    /// mode says.
    #[idempotent]
    async fn work(&self) -> u64;
    /// Counts the call and refuses it with an application error.
    async fn refuse(&self) -> Result<u64, Refusal>;
}

/// How a backend answers `work`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    Healthy = 0,
    /// Calls numbered n fail when n % 5 < 3: three failures in every five calls.
    SixtyPercentFail = 1,
    AlwaysFail = 2,
}

/// One server's handler state: its mode and the calls that reached it.
#[derive(Clone)]
struct Backend {
    mode: Arc<AtomicU8>,
    calls: Arc<AtomicU64>,
}

impl Backend {
    fn new(mode: Mode) -> Self {
        Self {
            mode: Arc::new(AtomicU8::new(mode as u8)),
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    fn set_mode(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Flaky for Backend {
    async fn work(&self) -> u64 {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let fails = match self.mode.load(Ordering::SeqCst) {
            m if m == Mode::SixtyPercentFail as u8 => n % 5 < 3,
            m if m == Mode::AlwaysFail as u8 => true,
            _ => false,
        };
        if fails {
            panic!("{INJECTED} on call {n}");
        }
        n
    }

    async fn refuse(&self) -> Result<u64, Refusal> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        Err(Refusal {
            reason: format!("call {n} refused"),
        })
    }
}

async fn serve(backend: &Backend) -> RunningServer {
    quiet_panics_starting_with(INJECTED);
    Server::builder()
        .serve(FlakyServer::new(backend.clone()))
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

/// A client of `server` through a breaker with `config`.
async fn client_with_breaker(server: &RunningServer, config: CircuitBreakerConfig) -> FlakyClient {
    let channel = Channel::builder()
        .layer(CircuitBreakerLayer::new(config).unwrap())
        .connect(server.local_addr())
        .await
        .unwrap();
    FlakyClient::new(channel)
}

/// What happened to a circuit, and when, relative to the start of the test.
struct Timeline {
    start: Instant,
    events: Vec<(Duration, String)>,
}

impl Timeline {
    fn start() -> Self {
        Self {
            start: Instant::now(),
            events: Vec::new(),
        }
    }

    fn mark(&mut self, what: impl Into<String>) {
        self.events.push((self.start.elapsed(), what.into()));
    }

    fn print(&self, title: &str) {
        let mut text = format!("timeline of {title}:\n");
        for (at, what) in &self.events {
            let _ = writeln!(text, "  {:>9.3} ms  {what}", at.as_secs_f64() * 1000.0);
        }
        println!("{text}");
    }
}

/// Whether `result` is the breaker failing the call fast.
fn is_circuit_open<T>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(Error::CircuitOpen { .. }))
}

/// Calls `work` until a call is let through (not failed fast by an open circuit), failing
/// after 10 s; returns that call's result.
async fn first_call_let_through(client: &FlakyClient) -> Result<u64, Error> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let result = client.work().await;
        if !is_circuit_open(&result) {
            return result;
        }
        assert!(
            Instant::now() < deadline,
            "the circuit did not let a call through within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Polls `condition` until it holds, failing after 10 s.
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_method_failing_sixty_percent_of_calls_opens_once_the_minimum_of_calls_is_reached() {
    let backend = Backend::new(Mode::SixtyPercentFail);
    let server = serve(&backend).await;
    // The defaults (20 calls, 50 %) with an open window long enough to outlast the test.
    let config = CircuitBreakerConfig::default().open_window(Duration::from_secs(60));
    let client = client_with_breaker(&server, config).await;
    let mut timeline = Timeline::start();
    timeline.mark("first call sent (the server fails calls n with n % 5 < 3)");

    let mut sent = 0u64;
    let mut failed = 0u64;
    let opened = loop {
        let result = client.work().await;
        if let Err(Error::CircuitOpen {
            method,
            endpoint,
            retry_after,
        }) = result
        {
            break (method, endpoint, retry_after);
        }
        sent += 1;
        match result {
            Ok(_) => {}
            Err(Error::HandlerPanicked { .. }) => failed += 1,
            Err(other) => panic!("unexpected error {other:?}"),
        }
        assert!(sent <= 20, "the circuit did not open after 20 calls");
    };
    timeline.mark(format!(
        "circuit opened: call {} failed fast after {sent} calls sent, {failed} of them failed",
        sent + 1
    ));

    // 20 calls is the minimum; 12 of them (60 %) failed, at or above the 50 % threshold.
    assert_eq!((sent, failed), (20, 12));
    assert_eq!(backend.calls(), 20);
    let (method, endpoint, retry_after) = opened;
    assert_eq!(method, wirecall::method_id("Flaky", "work"));
    assert_eq!(endpoint, Some(server.local_addr().to_string()));
    assert!(retry_after > Duration::from_secs(50), "{retry_after:?}");

    // Open: every call fails at once, and none reaches the server.
    let started = Instant::now();
    for _ in 0..100 {
        let result = client.work().await;
        assert!(is_circuit_open(&result), "{result:?}");
    }
    let elapsed = started.elapsed();
    timeline.mark(format!("100 more calls failed fast in {elapsed:?}"));
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    assert_eq!(backend.calls(), 20, "a call reached the server");

    // The circuit is the method's: another method of the same channel still goes through.
    assert!(client.refuse().await.unwrap().is_err());
    assert_eq!(backend.calls(), 21);
    timeline.mark("another method of the channel still reached the server");
    timeline.print("a method failing 60 % of its calls");
    server.shutdown().await;
}

#[tokio::test]
async fn a_failed_trial_reopens_the_circuit_and_a_healed_server_closes_it() {
    let backend = Backend::new(Mode::AlwaysFail);
    let server = serve(&backend).await;
    let config = CircuitBreakerConfig::default()
        .minimum_calls(5)
        .open_window(Duration::from_millis(200))
        .trial_calls(3);
    let client = client_with_breaker(&server, config).await;
    let mut timeline = Timeline::start();
    timeline.mark("first call sent (the server fails every call)");

    for _ in 0..5 {
        let result = client.work().await;
        assert!(
            matches!(result, Err(Error::HandlerPanicked { .. })),
            "{result:?}"
        );
    }
    assert!(is_circuit_open(&client.work().await));
    timeline.mark("circuit opened after 5 failed calls");

    // The open window passes; the first trial still fails, which opens the circuit again.
    let trial = first_call_let_through(&client).await;
    assert!(
        matches!(trial, Err(Error::HandlerPanicked { .. })),
        "{trial:?}"
    );
    timeline.mark("half-open: the first trial call reached the server and failed");
    assert_eq!(backend.calls(), 6);
    match client.work().await {
        Err(Error::CircuitOpen { retry_after, .. }) => assert!(
            retry_after > Duration::from_millis(100),
            "a reopened circuit waits a whole open window again, not {retry_after:?}"
        ),
        other => panic!("expected the circuit open again, got {other:?}"),
    }
    timeline.mark("circuit open again for another open window");

    backend.set_mode(Mode::Healthy);
    timeline.mark("server healed");
    let first = first_call_let_through(&client).await.unwrap();
    timeline.mark(format!(
        "half-open: trial call 1 succeeded (server call {first})"
    ));
    for trial in 2..=3 {
        let n = client.work().await.unwrap();
        timeline.mark(format!("trial call {trial} succeeded (server call {n})"));
    }
    timeline.mark("circuit closed after 3 successful trials");

    // Closed: every call goes through, more than a half-open circuit would let through.
    for _ in 0..20 {
        client.work().await.unwrap();
    }
    assert_eq!(backend.calls(), 6 + 3 + 20);
    timeline.mark("20 more calls went through");
    timeline.print("a server failing every call, then healed");
    server.shutdown().await;
}

#[tokio::test]
async fn an_endpoint_breaker_takes_a_failing_endpoint_out_of_a_balanced_channel_for_the_method() {
    let registry = Registry::new(StaticRegistry::new());
    let backends = [
        Backend::new(Mode::Healthy),
        Backend::new(Mode::AlwaysFail),
        Backend::new(Mode::Healthy),
    ];
    let mut servers = Vec::new();
    for backend in &backends {
        quiet_panics_starting_with(INJECTED);
        let server = Server::builder()
            .serve(FlakyServer::new(backend.clone()))
            .register(registry.clone(), Registration::bound_address())
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        servers.push(server);
    }
    let failing = &backends[1];
    let config = CircuitBreakerConfig::default()
        .minimum_calls(5)
        .open_window(Duration::from_secs(60));
    let channel = Channel::balanced()
        .balance(Balance::RoundRobin)
        .channel(Channel::builder().layer(CircuitBreakerLayer::new(config).unwrap()))
        .discover(&registry, "Flaky")
        .await
        .unwrap();
    eventually("the three endpoints to be known", || {
        channel.endpoints().len() == 3
    })
    .await;
    let client = FlakyClient::new(channel);

    // Until its breaker opens, the calls that land on the failing endpoint fail (a panic is
    // an answer, not a reason to fail over).
    let deadline = Instant::now() + Duration::from_secs(10);
    while failing.calls() < 5 {
        let _ = client.work().await;
        assert!(
            Instant::now() < deadline,
            "the failing endpoint got no calls"
        );
    }
    let failing_calls = failing.calls();
    assert_eq!(failing_calls, 5);

    // Its circuit is open: every call succeeds, on the two healthy endpoints.
    for call in 0..30 {
        let result = client.work().await;
        assert!(result.is_ok(), "call {call}: {result:?}");
    }
    assert_eq!(
        failing.calls(),
        failing_calls,
        "the failing endpoint got a call"
    );
    assert!(backends[0].calls() > 10 && backends[2].calls() > 10);

    // Only that method: the failing endpoint still serves the others.
    let before = failing.calls();
    for _ in 0..6 {
        assert!(client.refuse().await.unwrap().is_err());
    }
    assert!(
        failing.calls() > before,
        "the other method left the endpoint too"
    );
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn application_errors_never_open_the_circuit() {
    let backend = Backend::new(Mode::Healthy);
    let server = serve(&backend).await;
    // The most eager breaker: one counted failure after one call would open it.
    let config = CircuitBreakerConfig::default()
        .minimum_calls(1)
        .error_threshold_percent(0);
    let client = client_with_breaker(&server, config).await;
    for n in 1..=50 {
        let refusal = client.refuse().await.unwrap().unwrap_err();
        assert_eq!(refusal.reason, format!("call {n} refused"));
    }
    assert_eq!(backend.calls(), 50);
    server.shutdown().await;
}
