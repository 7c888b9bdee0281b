//! The event bus against a real RabbitMQ (feature `rabbitmq`): the scenarios every back-end
//! passes, and what only a broker shows: a restart mid-stream, a deep queue, bad input
//! through the alternate exchange.
//!
//! `WIRECALL_RABBITMQ` is the broker's AMQP URL; `WIRECALL_RABBITMQ_RESTART` is a shell
//! command that restarts that broker on the same port and data (`.ci/run` starts a node with
//! `.ci/rabbitmq start DIR` and sets it to `bash .ci/rabbitmq restart DIR`). The tests fail,
//! never skip, when either is missing or the broker does not answer.
#![cfg(feature = "rabbitmq")]

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use wirecall::events::metrics::DUPLICATES_SKIPPED;
use wirecall::events::{EventBus, HandledOnce, PublishError, PublishOutcome, RabbitMqConfig};
use wirecall_test_support::events::{
    self, quick_config, unique, user, Recorder, UserEventsPublisher, UserEventsSubscriber, CONTRACT,
};
use wirecall_test_support::eventually_within;

/// Every test publishes to the one `UserEvents` exchange, and every subscription receives
/// every event of its contract, so tests that ran side by side would see each other's events:
/// they take turns. (A tokio mutex: each test has its own runtime.)
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn broker_url() -> String {
    std::env::var("WIRECALL_RABBITMQ").unwrap_or_else(|_| {
        panic!(
            "set WIRECALL_RABBITMQ to a RabbitMQ AMQP URL (e.g. amqp://guest:guest@127.0.0.1:5672/%2f); \
             `.ci/rabbitmq start DIR` starts one"
        )
    })
}

async fn bus() -> EventBus {
    let config = RabbitMqConfig::new(broker_url())
        .reconnect_delays(Duration::from_millis(100), Duration::from_secs(1));
    EventBus::connect_rabbitmq(config)
        .await
        .unwrap_or_else(|error| panic!("the broker in WIRECALL_RABBITMQ does not answer: {error}"))
}

/// The shared tests use one test runtime each; several threads, so that a publisher and the
/// consumers of one test run side by side as in separate processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscriptions_each_get_every_event() {
    let _turn = ONE_AT_A_TIME.lock().await;
    events::two_subscriptions_each_get_every_event(&bus().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_consumers_share_one_subscription() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (a, b, c) = (bus().await, bus().await, bus().await);
    events::three_consumers_share_one_subscription([&a, &b, &c]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_subscriber_receives_everything_later() {
    let _turn = ONE_AT_A_TIME.lock().await;
    events::offline_subscriber_receives_everything_later(&bus().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_twice_then_succeeding_succeeds_once() {
    let _turn = ONE_AT_A_TIME.lock().await;
    events::failing_twice_then_succeeding_succeeds_once(&bus().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_event_ends_in_dead_letters() {
    let _turn = ONE_AT_A_TIME.lock().await;
    events::poison_event_ends_in_dead_letters(&bus().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_ends_in_dead_letters() {
    let _turn = ONE_AT_A_TIME.lock().await;
    events::bad_input_ends_in_dead_letters(&bus().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_and_trace_context_travel() {
    let _turn = ONE_AT_A_TIME.lock().await;
    events::metadata_and_trace_context_travel(&bus().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_is_a_connect_error_not_a_hang() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let error = EventBus::rabbitmq(&format!("amqp://127.0.0.1:{port}/%2f"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("could not connect"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Peak RSS of this process so far (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// What the consumer of the deep-queue test may hold at its peak, above the process's
/// footprint before it started consuming: prefetch bounds what it holds, not the queue's
/// depth. The book's "Events" chapter quotes this bound.
const CONSUMER_PEAK_RSS_BOUND_KIB: u64 = 64 * 1024;

/// 100,000 events wait in one subscription's queue; one consumer drains them with bounded
/// memory (peak RSS measured from the start of consumption, after `/proc/self/clear_refs`
/// reset the peak).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_events_with_bounded_consumer_memory() {
    let _turn = ONE_AT_A_TIME.lock().await;
    const COUNT: i32 = 100_000;
    let bus = bus().await;
    let name = unique("deep");
    bus.declare_with(CONTRACT, &name, quick_config())
        .await
        .unwrap();
    let publisher = UserEventsPublisher::new(&bus);
    futures::stream::iter(0..COUNT)
        .map(|n| {
            let publisher = publisher.clone();
            async move { publisher.user_created(user(n)).await }
        })
        .buffer_unordered(256)
        .for_each(|published| async move { published.expect("publish") })
        .await;
    // Forget the peak of publishing: from here VmHWM is the consumer's.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = peak_rss_kib();
    let recorder = Recorder::new();
    let started = Instant::now();
    let _subscription = bus
        .subscribe_with(
            &name,
            UserEventsSubscriber::new(recorder.clone()),
            quick_config(),
        )
        .await
        .unwrap();
    eventually_within("100,000 events consumed", Duration::from_secs(180), || {
        recorder.log.distinct() == COUNT as usize
    })
    .await;
    let peak = peak_rss_kib();
    println!(
        "100,000 events consumed in {:?}; peak RSS {peak} KiB, {before} KiB before consuming, \
         growth {} KiB (bound {CONSUMER_PEAK_RSS_BOUND_KIB} KiB)",
        started.elapsed(),
        peak.saturating_sub(before)
    );
    assert!(
        peak.saturating_sub(before) < CONSUMER_PEAK_RSS_BOUND_KIB,
        "consumer peak RSS grew by {} KiB",
        peak.saturating_sub(before)
    );
    events::cleanup(&bus, &[&name]).await;
}

/// What one run of the broker-restart scenario saw.
#[derive(Debug)]
struct RestartRun {
    /// Publish calls, retries included.
    attempts: u64,
    /// Publish calls that failed (each was published again, with a new id): those made while
    /// the bus was disconnected, not the one in flight when the broker went, which the bus
    /// itself sent again.
    failed: u64,
    /// Failed publishes whose error said the event may have been published.
    maybe_published: usize,
    /// Events the test published under more than one id that reached the queue.
    published_twice: usize,
    /// Events whose publish was confirmed.
    confirmed: usize,
    /// Confirmed events never handled.
    lost: usize,
    /// Events handled, each counted once.
    distinct: usize,
    /// Handler runs beyond the first successful one per event.
    duplicates: u64,
}

impl std::fmt::Display for RestartRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} publish attempts, {} failed while the broker was away ({} said maybe \
             published, {} events reached the queue under two ids), {} confirmed, {} delivered \
             (distinct), {} duplicate handler runs, {} lost",
            self.attempts,
            self.failed,
            self.maybe_published,
            self.published_twice,
            self.confirmed,
            self.distinct,
            self.duplicates,
            self.lost
        )
    }
}

/// The broker restarts while events are being published and consumed. Every event whose
/// publish was confirmed is delivered at least once; handler runs beyond the first are
/// counted. With a handled-once `window` the consumer skips redeliveries of ids it handled.
async fn restart_mid_stream(restart: &str, window: Option<HandledOnce>) -> RestartRun {
    const COUNT: i32 = 3_000;
    // The bus sends an unconfirmed publish again with its id for longer than the broker
    // takes to come back, so a publish that fails here was not sent (`NotPublished`).
    let publishing = EventBus::connect_rabbitmq(
        RabbitMqConfig::new(broker_url())
            .reconnect_delays(Duration::from_millis(100), Duration::from_secs(1))
            .publish_retry_within(Duration::from_secs(120)),
    )
    .await
    .unwrap_or_else(|error| panic!("the broker in WIRECALL_RABBITMQ does not answer: {error}"));
    let consuming = bus().await;
    let name = unique("restart");
    let mut config = quick_config();
    config.handled_once = window;
    publishing
        .declare_with(CONTRACT, &name, config.clone())
        .await
        .unwrap();
    let recorder = Recorder::new();
    let _subscription = consuming
        .subscribe_with(&name, UserEventsSubscriber::new(recorder.clone()), config)
        .await
        .unwrap();

    // A failed publish no longer proves the outage: the bus rides it out by publishing the
    // event in flight again. Watch the connection instead (an outage lasts seconds).
    let outage_seen = tokio::spawn({
        let publishing = publishing.clone();
        async move {
            while publishing.is_connected() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    });
    let mut confirmed = HashSet::new();
    let (mut attempts, mut failed) = (0u64, 0u64);
    // The events one of whose failed publishes may have reached the queue all the same.
    let mut maybe_published = HashSet::new();
    let publisher = UserEventsPublisher::new(&publishing);
    let mut restarter = None;
    let mut published_after_restart = 0;
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut n = 0;
    // Publish at least COUNT events, and go on until 500 more were confirmed after the
    // restart command finished, so that the restart surely falls mid-stream.
    while n < COUNT || published_after_restart < 500 {
        if n == COUNT / 3 {
            let restart = restart.to_owned();
            restarter = Some(tokio::task::spawn_blocking(move || {
                std::process::Command::new("sh")
                    .arg("-c")
                    .arg(&restart)
                    .status()
                    .expect("run WIRECALL_RABBITMQ_RESTART")
            }));
        }
        // Publish `n` until the broker confirms it; an error means "maybe not stored", so
        // the same event is published again (with a new id).
        loop {
            assert!(Instant::now() < deadline, "publishing did not finish");
            attempts += 1;
            match publisher.user_created(user(n)).await {
                Ok(()) => {
                    confirmed.insert(n);
                    break;
                }
                Err(
                    error @ (PublishError::Disconnected
                    | PublishError::Broker(_)
                    | PublishError::Unconfirmed(_)
                    | PublishError::Nacked),
                ) => {
                    failed += 1;
                    if error.outcome() == PublishOutcome::MaybePublished {
                        maybe_published.insert(n);
                    }
                    // Waiting for the bus to reconnect; the failures are counted, not timed.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(other) => panic!("unexpected publish error: {other}"),
            }
        }
        n += 1;
        if restarter.as_ref().is_some_and(|task| task.is_finished()) {
            published_after_restart += 1;
        }
    }
    let status = restarter
        .expect("restarted")
        .await
        .expect("restart command ran");
    assert!(
        status.success(),
        "WIRECALL_RABBITMQ_RESTART failed: {status}"
    );
    assert!(
        outage_seen.is_finished(),
        "the publishing bus never lost its connection: the restart did not happen mid-stream"
    );

    eventually_within(
        "every confirmed event delivered after the restart",
        Duration::from_secs(120),
        || confirmed.iter().all(|&n| recorder.log.handled(n) > 0),
    )
    .await;
    let lost = confirmed
        .iter()
        .filter(|&&n| recorder.log.handled(n) == 0)
        .count();
    // An event published twice (an error, then the retry) that reached the queue twice must
    // have had an error saying it may have been published.
    let published_twice: Vec<i32> = (0..n).filter(|&n| recorder.log.publishes(n) > 1).collect();
    let said_not_published = published_twice
        .iter()
        .filter(|n| !maybe_published.contains(*n))
        .count();
    assert_eq!(
        said_not_published, 0,
        "a publish that failed as not published reached the queue"
    );
    assert_eq!(confirmed.len(), n as usize);
    outage_seen.abort();
    events::cleanup(&publishing, &[&name]).await;
    RestartRun {
        attempts,
        failed,
        maybe_published: maybe_published.len(),
        published_twice: published_twice.len(),
        confirmed: confirmed.len(),
        lost,
        distinct: recorder.log.distinct(),
        duplicates: recorder.log.duplicates(),
    }
}

/// Events per second one consumer drains from a queue of `count` waiting events, with or
/// without a handled-once window.
async fn consume_rate(bus: &EventBus, count: i32, window: Option<HandledOnce>) -> f64 {
    let name = unique("rate");
    let mut config = quick_config().prefetch(256);
    config.handled_once = window;
    bus.declare_with(CONTRACT, &name, config.clone())
        .await
        .unwrap();
    let publisher = UserEventsPublisher::new(bus);
    futures::stream::iter(0..count)
        .map(|n| {
            let publisher = publisher.clone();
            async move { publisher.user_created(user(n)).await }
        })
        .buffer_unordered(256)
        .for_each(|published| async move { published.expect("publish") })
        .await;
    let recorder = Recorder::new();
    let started = Instant::now();
    let subscription = bus
        .subscribe_with(&name, UserEventsSubscriber::new(recorder.clone()), config)
        .await
        .unwrap();
    eventually_within("the queue drained", Duration::from_secs(120), || {
        recorder.log.distinct() == count as usize
    })
    .await;
    let rate = f64::from(count) / started.elapsed().as_secs_f64();
    subscription.close().await;
    events::cleanup(bus, &[&name]).await;
    rate
}

/// The broker restarts mid-stream twice, once with the consumer's handled-once window off
/// and once with it on: no confirmed event is lost in either; with the window on, no event's
/// handler runs twice. The window's cost is measured on the same broker (a queue of 10,000
/// events drained with and without it, twice each, alternating) and printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_restart_mid_stream_loses_no_confirmed_event() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let restart = std::env::var("WIRECALL_RABBITMQ_RESTART").unwrap_or_else(|_| {
        panic!(
            "set WIRECALL_RABBITMQ_RESTART to a shell command that restarts the broker of \
             WIRECALL_RABBITMQ on the same port and data (`.ci/run` sets \
             `bash .ci/rabbitmq restart DIR`)"
        )
    });
    let skipped = skipped_duplicates_counter();
    let skipped_before = skipped.load();

    let off = restart_mid_stream(&restart, None).await;
    println!("broker restart, handled-once window off: {off}");
    let on = restart_mid_stream(&restart, Some(HandledOnce::in_memory())).await;
    let skipped_on = skipped.load() - skipped_before;
    println!("broker restart, handled-once window on: {on}; {skipped_on} redeliveries skipped");

    let bus = bus().await;
    let (mut rates_off, mut rates_on) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        rates_off.push(consume_rate(&bus, 10_000, None).await);
        rates_on.push(consume_rate(&bus, 10_000, Some(HandledOnce::in_memory())).await);
    }
    let mean = |rates: &[f64]| rates.iter().sum::<f64>() / rates.len() as f64;
    println!(
        "consume rate, 10,000 waiting events, prefetch 256: window off {rates_off:.0?} \
         events/s (mean {:.0}), window on {rates_on:.0?} events/s (mean {:.0})",
        mean(&rates_off),
        mean(&rates_on)
    );

    for run in [&off, &on] {
        assert_eq!(run.lost, 0, "confirmed events lost: {run:?}");
        assert_eq!(run.distinct, run.confirmed, "{run:?}");
        assert_eq!(
            run.maybe_published, 0,
            "the bus gave up an unconfirmed publish: {run:?}"
        );
    }
    assert_eq!(
        on.duplicates, 0,
        "a handler ran twice with the window on: {on:?}"
    );
}

/// The skipped-duplicates counter of a recorder installed for this process (the consumers
/// run on several threads, so a thread-local recorder would miss them).
fn skipped_duplicates_counter() -> &'static SkippedCounter {
    static COUNTER: std::sync::OnceLock<&'static SkippedCounter> = std::sync::OnceLock::new();
    COUNTER.get_or_init(|| {
        let counter: &'static SkippedCounter = Box::leak(Box::default());
        metrics::set_global_recorder(counter)
            .expect("no other test of this binary installs a metrics recorder");
        counter
    })
}

/// A metrics recorder that keeps only [`DUPLICATES_SKIPPED`], summed over its labels.
#[derive(Default, Debug)]
struct SkippedCounter(Arc<AtomicU64>);

impl SkippedCounter {
    fn load(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl metrics::Recorder for SkippedCounter {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }

    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        if key.name() == DUPLICATES_SKIPPED {
            metrics::Counter::from_arc(Arc::clone(&self.0))
        } else {
            metrics::Counter::noop()
        }
    }

    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }

    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}
