//! The event bus on its in-process back-end: the scenarios every back-end passes
//! (`tests/support/src/events.rs`), and what only in-process shows cheaply.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use wirecall::events::{
    metrics::DUPLICATES_SKIPPED, Envelope, EventBus, EventId, HandledIdFuture, HandledIdStore,
    HandledOnce, SubscriptionConfig,
};
use wirecall_test_support::events::{
    self, Recorder, Tap, UserEventsPublisher, UserEventsSubscriber, CONTRACT,
};
use wirecall_test_support::{eventually, eventually_async};

#[tokio::test]
async fn two_subscriptions_each_get_every_event() {
    events::two_subscriptions_each_get_every_event(&EventBus::in_process()).await;
}

#[tokio::test]
async fn three_consumers_share_one_subscription() {
    let bus = EventBus::in_process();
    events::three_consumers_share_one_subscription([&bus, &bus, &bus]).await;
}

#[tokio::test]
async fn offline_subscriber_receives_everything_later() {
    events::offline_subscriber_receives_everything_later(&EventBus::in_process()).await;
}

#[tokio::test]
async fn failing_twice_then_succeeding_succeeds_once() {
    events::failing_twice_then_succeeding_succeeds_once(&EventBus::in_process()).await;
}

#[tokio::test]
async fn poison_event_ends_in_dead_letters() {
    events::poison_event_ends_in_dead_letters(&EventBus::in_process()).await;
}

#[tokio::test]
async fn bad_input_ends_in_dead_letters() {
    events::bad_input_ends_in_dead_letters(&EventBus::in_process()).await;
}

#[tokio::test]
async fn metadata_and_trace_context_travel() {
    events::metadata_and_trace_context_travel(&EventBus::in_process()).await;
}

#[tokio::test]
async fn a_panicking_handler_is_retried_like_a_failing_one() {
    let bus = EventBus::in_process();
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            "panics",
            UserEventsSubscriber::new(recorder.clone()),
            events::quick_config(),
        )
        .await
        .unwrap();
    let mut user = events::user(1);
    user.name = "panic".to_owned();
    UserEventsPublisher::new(&bus)
        .user_created(user)
        .await
        .unwrap();
    eventually("the event succeeded on its second run", || {
        recorder.log.handled(1) == 1
    })
    .await;
    assert_eq!(recorder.log.runs(), 2);
}

#[tokio::test]
async fn events_travel_in_every_codec() {
    let bus = EventBus::in_process();
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe("codecs", UserEventsSubscriber::new(recorder.clone()))
        .await
        .unwrap();
    for (n, codec) in wirecall::Codec::ALL.into_iter().enumerate() {
        UserEventsPublisher::new(&bus)
            .with_codec(codec)
            .user_created(events::user(n as i32))
            .await
            .unwrap();
    }
    eventually("one event per codec", || recorder.log.distinct() == 3).await;
}

#[tokio::test]
async fn a_closed_subscription_leaves_its_events_for_the_next_consumer() {
    let bus = EventBus::in_process();
    let first = Recorder {
        delay: Duration::from_millis(1),
        ..Recorder::new()
    };
    let subscription = bus
        .subscribe("handover", UserEventsSubscriber::new(first.clone()))
        .await
        .unwrap();
    subscription.close().await;
    events::publish_range(&UserEventsPublisher::new(&bus), 0, 50).await;
    let second = Recorder::new();
    let _subscription = bus
        .subscribe("handover", UserEventsSubscriber::new(second.clone()))
        .await
        .unwrap();
    eventually("the next consumer got all 50", || {
        second.log.distinct() == 50
    })
    .await;
    assert_eq!(first.log.distinct(), 0);
}

#[tokio::test]
async fn invalid_subscription_names_are_refused() {
    let bus = EventBus::in_process();
    for name in ["", "has space", "slash/y"] {
        let error = bus
            .subscribe(name, UserEventsSubscriber::new(Recorder::new()))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("invalid subscription name"));
    }
}

// Handled once: the window of handled ids. Each test first publishes through a `Tap`
// subscription only, to get real envelopes with their ids; the subscription under test starts
// after that and sees only the copies the test publishes again with `publish_envelope`, as a
// redelivery or a publisher's retry would bring them.

/// A Prometheus recorder for this test's thread only (the tests run on current-thread
/// runtimes, so the bus's tasks count into it), and its handle.
fn local_metrics() -> (metrics::LocalRecorderGuard<'static>, PrometheusHandle) {
    let recorder: &'static _ = Box::leak(Box::new(PrometheusBuilder::new().build_recorder()));
    let handle = recorder.handle();
    (metrics::set_default_local_recorder(recorder), handle)
}

/// `subscription`'s skipped duplicates, as the recorder renders them (0 before the first).
fn skipped(metrics: &PrometheusHandle, subscription: &str) -> u64 {
    let label = format!("subscription=\"{subscription}\"");
    metrics
        .render()
        .lines()
        .filter(|line| line.starts_with(DUPLICATES_SKIPPED) && line.contains(&label))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Publishes users `users` through a `Tap` subscription and returns their envelopes.
async fn envelopes_of(bus: &EventBus, users: std::ops::Range<i32>) -> Vec<Envelope> {
    let tap = Tap::default();
    let _tap = bus.subscribe("tap", tap.clone()).await.unwrap();
    let count = users.len();
    events::publish_range(&UserEventsPublisher::new(bus), users.start, users.end).await;
    eventually("the tap saw every event", || tap.envelopes().len() == count).await;
    tap.envelopes()
}

async fn publish_again(bus: &EventBus, envelope: &Envelope, times: usize) {
    for _ in 0..times {
        bus.publish_envelope(envelope.clone()).await.unwrap();
    }
}

#[tokio::test]
async fn handled_once_acks_a_redelivered_id_without_running_the_handler() {
    let (_recorder, metrics) = local_metrics();
    let bus = EventBus::in_process();
    let [first] = envelopes_of(&bus, 1..2).await.try_into().unwrap();
    let (once, every) = (Recorder::new(), Recorder::new());
    let _once = bus
        .subscribe_with(
            "once",
            UserEventsSubscriber::new(once.clone()),
            SubscriptionConfig::default().handled_once(HandledOnce::in_memory()),
        )
        .await
        .unwrap();
    let _every = bus
        .subscribe("every", UserEventsSubscriber::new(every.clone()))
        .await
        .unwrap();
    publish_again(&bus, &first, 3).await;
    eventually("two copies skipped", || skipped(&metrics, "once") == 2).await;
    eventually("the window-less subscription ran all three", || {
        every.log.handled(1) == 3
    })
    .await;
    assert_eq!(once.log.handled(1), 1);
    assert_eq!(once.log.runs(), 1);
    assert_eq!(skipped(&metrics, "every"), 0);
}

#[tokio::test]
async fn handled_once_forgets_the_oldest_id_beyond_its_count() {
    let (_recorder, metrics) = local_metrics();
    let bus = EventBus::in_process();
    let envelopes = envelopes_of(&bus, 1..4).await;
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            "two-ids",
            UserEventsSubscriber::new(recorder.clone()),
            SubscriptionConfig::default()
                .prefetch(1)
                .handled_once(HandledOnce::in_memory_bounded(2, Duration::from_secs(600))),
        )
        .await
        .unwrap();
    for envelope in &envelopes {
        publish_again(&bus, envelope, 1).await;
    }
    eventually("users 1 to 3 handled", || recorder.log.distinct() == 3).await;
    // The window holds users 2 and 3 now: user 1 runs again, user 3 does not.
    publish_again(&bus, &envelopes[0], 1).await;
    publish_again(&bus, &envelopes[2], 1).await;
    eventually("user 3's copy skipped", || {
        skipped(&metrics, "two-ids") == 1
    })
    .await;
    eventually("user 1 handled again", || recorder.log.handled(1) == 2).await;
    assert_eq!(recorder.log.handled(3), 1);
}

#[tokio::test]
async fn handled_once_forgets_ids_older_than_its_age() {
    let (_recorder, metrics) = local_metrics();
    let bus = EventBus::in_process();
    let [first] = envelopes_of(&bus, 1..2).await.try_into().unwrap();
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            "a-second",
            UserEventsSubscriber::new(recorder.clone()),
            SubscriptionConfig::default()
                .prefetch(1)
                .handled_once(HandledOnce::in_memory_bounded(100, Duration::from_secs(1))),
        )
        .await
        .unwrap();
    publish_again(&bus, &first, 2).await;
    eventually("the second copy skipped", || {
        skipped(&metrics, "a-second") == 1
    })
    .await;
    assert_eq!(recorder.log.handled(1), 1);
    // A copy every 10 ms: those within the second are skipped, the first after it runs.
    let started = Instant::now();
    eventually_async("the id expired and a copy ran again", || {
        let (bus, first, log) = (&bus, &first, &recorder.log);
        async move {
            publish_again(bus, first, 1).await;
            log.handled(1) == 2
        }
    })
    .await;
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(skipped(&metrics, "a-second") > 1);
}

#[tokio::test]
async fn handled_once_still_retries_a_failing_handler() {
    let (_recorder, metrics) = local_metrics();
    let bus = EventBus::in_process();
    let [first] = envelopes_of(&bus, 1..2).await.try_into().unwrap();
    let recorder = Recorder {
        fail_first: 2,
        ..Recorder::new()
    };
    let _subscription = bus
        .subscribe_with(
            "flaky-once",
            UserEventsSubscriber::new(recorder.clone()),
            events::quick_config().handled_once(HandledOnce::in_memory()),
        )
        .await
        .unwrap();
    publish_again(&bus, &first, 1).await;
    eventually("handled on the third run", || recorder.log.handled(1) == 1).await;
    assert_eq!(recorder.log.runs(), 3);
    // Recorded once it succeeded: a later copy is skipped.
    publish_again(&bus, &first, 1).await;
    eventually("the copy skipped", || skipped(&metrics, "flaky-once") == 1).await;
    assert_eq!(recorder.log.runs(), 3);
}

#[tokio::test]
async fn handled_once_runs_two_concurrent_deliveries_of_one_id_once() {
    let (_recorder, metrics) = local_metrics();
    let bus = EventBus::in_process();
    let [first] = envelopes_of(&bus, 1..2).await.try_into().unwrap();
    let recorder = Recorder {
        delay: Duration::from_millis(50),
        ..Recorder::new()
    };
    let _subscription = bus
        .subscribe_with(
            "concurrent",
            UserEventsSubscriber::new(recorder.clone()),
            SubscriptionConfig::default().handled_once(HandledOnce::in_memory()),
        )
        .await
        .unwrap();
    // Both copies land in one batch of the consumer's prefetch (32): they start together.
    publish_again(&bus, &first, 2).await;
    eventually("the second copy waited and was skipped", || {
        skipped(&metrics, "concurrent") == 1
    })
    .await;
    assert_eq!(recorder.log.runs(), 1);
}

/// A store that remembers every id and counts its calls; clones share it.
#[derive(Clone, Default)]
struct CountingStore(Arc<Counts>);

#[derive(Default)]
struct Counts {
    handled: Mutex<HashSet<(String, EventId)>>,
    asked: AtomicU64,
}

impl HandledIdStore for CountingStore {
    fn contains<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, bool> {
        self.0.asked.fetch_add(1, Ordering::SeqCst);
        let found = self
            .0
            .handled
            .lock()
            .unwrap()
            .contains(&(scope.to_owned(), id));
        Box::pin(async move { Ok(found) })
    }

    fn record<'a>(&'a self, scope: &'a str, id: EventId) -> HandledIdFuture<'a, ()> {
        self.0
            .handled
            .lock()
            .unwrap()
            .insert((scope.to_owned(), id));
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn handled_once_keeps_its_ids_in_a_custom_store() {
    let bus = EventBus::in_process();
    let [first] = envelopes_of(&bus, 1..2).await.try_into().unwrap();
    let store = CountingStore::default();
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            "shared",
            UserEventsSubscriber::new(recorder.clone()),
            SubscriptionConfig::default()
                .prefetch(1)
                .handled_once(HandledOnce::store(store.clone())),
        )
        .await
        .unwrap();
    publish_again(&bus, &first, 3).await;
    eventually("the store was asked about all three copies", || {
        store.0.asked.load(Ordering::SeqCst) == 3
    })
    .await;
    eventually("the first copy handled", || recorder.log.handled(1) == 1).await;
    assert_eq!(recorder.log.runs(), 1);
    let handled = store.0.handled.lock().unwrap().clone();
    let scope = format!("{}.shared", CONTRACT.name);
    assert_eq!(handled, HashSet::from([(scope, first.id)]));
}

/// A subscriber whose handlers wait until `gathered` of them are running at once.
#[derive(Clone)]
struct Gathering {
    all_running: Arc<tokio::sync::Barrier>,
    done: Arc<AtomicU64>,
}

impl wirecall_test_support::events::UserEvents for Gathering {
    async fn user_created(&self, _user: wirecall_test_support::UserModel) -> Result<(), String> {
        self.all_running.wait().await;
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn user_renamed(&self, _user_id: i32, _name: String) {}
}

#[tokio::test]
async fn the_events_of_one_batch_are_handled_concurrently() {
    // Four events wait in the queue, so the consumer takes them as one batch (prefetch 32).
    // Each handler waits until all four run: handled one after another, none would finish.
    let bus = EventBus::in_process();
    bus.declare(CONTRACT, "gathering").await.unwrap();
    events::publish_range(&UserEventsPublisher::new(&bus), 0, 4).await;
    let gathering = Gathering {
        all_running: Arc::new(tokio::sync::Barrier::new(4)),
        done: Arc::default(),
    };
    let _subscription = bus
        .subscribe("gathering", UserEventsSubscriber::new(gathering.clone()))
        .await
        .unwrap();
    eventually("all four handlers finished", || {
        gathering.done.load(Ordering::SeqCst) == 4
    })
    .await;
}
