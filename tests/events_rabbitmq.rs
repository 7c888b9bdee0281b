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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use wirecall::events::{EventBus, PublishError, PublishOutcome, RabbitMqConfig};
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

/// The broker restarts while events are being published and consumed: every event whose
/// publish was confirmed is delivered at least once; duplicates are allowed, counted and
/// printed; losses must be zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_restart_mid_stream_loses_no_confirmed_event() {
    let _turn = ONE_AT_A_TIME.lock().await;
    const COUNT: i32 = 3_000;
    let restart = std::env::var("WIRECALL_RABBITMQ_RESTART").unwrap_or_else(|_| {
        panic!(
            "set WIRECALL_RABBITMQ_RESTART to a shell command that restarts the broker of \
             WIRECALL_RABBITMQ on the same port and data (`.ci/run` sets \
             `bash .ci/rabbitmq restart DIR`)"
        )
    });
    let (publishing, consuming) = (bus().await, bus().await);
    let name = unique("restart");
    publishing
        .declare_with(CONTRACT, &name, quick_config())
        .await
        .unwrap();
    let recorder = Recorder::new();
    let _subscription = consuming
        .subscribe_with(
            &name,
            UserEventsSubscriber::new(recorder.clone()),
            quick_config(),
        )
        .await
        .unwrap();

    let confirmed = Arc::new(Mutex::new(HashSet::new()));
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
            let restart = restart.clone();
            restarter = Some(tokio::task::spawn_blocking(move || {
                std::process::Command::new("sh")
                    .arg("-c")
                    .arg(&restart)
                    .status()
                    .expect("run WIRECALL_RABBITMQ_RESTART")
            }));
        }
        // Publish `n` until the broker confirms it; an error means "maybe not stored", so
        // the same event is published again (a source of counted duplicates).
        loop {
            assert!(Instant::now() < deadline, "publishing did not finish");
            attempts += 1;
            match publisher.user_created(user(n)).await {
                Ok(()) => {
                    confirmed.lock().unwrap().insert(n);
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
        failed > 0,
        "no publish failed: the restart did not interrupt publishing"
    );

    let confirmed = std::mem::take(&mut *confirmed.lock().unwrap());
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
    println!(
        "broker restart: {attempts} publish attempts, {failed} failed while the broker was \
         away ({} said maybe published, {} of them were), {} confirmed, {} delivered \
         (distinct), {} duplicates, {lost} lost",
        maybe_published.len(),
        published_twice.len(),
        confirmed.len(),
        recorder.log.distinct(),
        recorder.log.duplicates()
    );
    assert_eq!(
        said_not_published, 0,
        "a publish that failed as not published reached the queue"
    );
    assert_eq!(lost, 0);
    assert_eq!(confirmed.len(), n as usize);
    events::cleanup(&publishing, &[&name]).await;
}
