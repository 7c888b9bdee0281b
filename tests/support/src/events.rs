//! The `UserEvents` contract and the scenarios both event back-ends must pass: the
//! in-process tests (`tests/events.rs`) and the RabbitMQ ones (`tests/events_rabbitmq.rs`)
//! run the same functions on their own buses.
//!
//! Events carry a `UserModel` whose `user_id` is the publisher's sequence number, so a test
//! can count deliveries per published event; its `name` steers the [`Recorder`]: `poison`
//! always fails, `panic` panics on its first attempt.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wirecall::events::{
    ContractDescriptor, DeadLetterReason, Envelope, EventBus, EventContext, EventHandler, EventId,
    HandlerFuture, RetryPolicy, SubscribeError, SubscriptionConfig,
};

use crate::{eventually, eventually_async, UserModel};

/// What happens to users.
#[wirecall::events]
pub trait UserEvents {
    /// A user signed up.
    async fn user_created(&self, user: UserModel) -> Result<(), String>;
    /// A user changed their name.
    async fn user_renamed(&self, user_id: i32, name: String);
}

/// The contract's description.
pub const CONTRACT: &wirecall::events::ContractDescriptor = UserEventsPublisher::CONTRACT;

/// Quick retries, so that a test sees all attempts within a second.
pub const QUICK_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 3,
    first_delay: Duration::from_millis(50),
    max_delay: Duration::from_millis(200),
};

/// The consumer settings of the scenarios.
pub fn quick_config() -> SubscriptionConfig {
    SubscriptionConfig::default().retry(QUICK_RETRY)
}

/// `name` with a random suffix: RabbitMQ queues outlive a test run.
pub fn unique(name: &str) -> String {
    format!("{name}-{:08x}", EventId::random().0 as u32)
}

/// What a [`Recorder`] saw.
#[derive(Default, Debug)]
pub struct EventLog {
    /// Successful handlings per `user_id`.
    handled: Mutex<HashMap<i32, u32>>,
    /// The ids of the published events handled per `user_id`: more than one means the
    /// publisher's event reached a queue more than once (published again after an error).
    publishes: Mutex<HashMap<i32, HashSet<EventId>>>,
    /// Handler runs, failed ones included.
    runs: AtomicU64,
    /// The metadata entry `tenant` and whether a trace context came with the last event.
    last_context: Mutex<Option<EventContext>>,
}

impl EventLog {
    /// Distinct events handled successfully.
    pub fn distinct(&self) -> usize {
        self.handled.lock().unwrap().len()
    }

    /// Successful handlings beyond the first, over all events.
    pub fn duplicates(&self) -> u64 {
        self.handled
            .lock()
            .unwrap()
            .values()
            .map(|&count| u64::from(count.saturating_sub(1)))
            .sum()
    }

    /// How often the event with `user_id` was handled successfully.
    pub fn handled(&self, user_id: i32) -> u32 {
        self.handled
            .lock()
            .unwrap()
            .get(&user_id)
            .copied()
            .unwrap_or(0)
    }

    /// How many distinct publishes of the event with `user_id` were handled (a redelivery
    /// of one publish counts once).
    pub fn publishes(&self, user_id: i32) -> usize {
        self.publishes
            .lock()
            .unwrap()
            .get(&user_id)
            .map_or(0, HashSet::len)
    }

    /// Handler runs, failed ones included.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    /// The context of the last event handled.
    pub fn last_context(&self) -> Option<EventContext> {
        self.last_context.lock().unwrap().clone()
    }

    fn record(&self, user_id: i32) {
        *self.handled.lock().unwrap().entry(user_id).or_default() += 1;
        let context = EventContext::current();
        if let Some(context) = &context {
            self.publishes
                .lock()
                .unwrap()
                .entry(user_id)
                .or_default()
                .insert(context.id);
        }
        *self.last_context.lock().unwrap() = context;
    }
}

/// A subscriber that records what it handles and fails as told.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// Where it records.
    pub log: Arc<EventLog>,
    /// Fail every event's first `fail_first` attempts.
    pub fail_first: u32,
    /// Take this long per event.
    pub delay: Duration,
}

impl Recorder {
    /// A recorder that never fails.
    pub fn new() -> Self {
        Self::default()
    }
}

impl UserEvents for Recorder {
    async fn user_created(&self, user: UserModel) -> Result<(), String> {
        self.log.runs.fetch_add(1, Ordering::Relaxed);
        let attempt = EventContext::current().map_or(0, |context| context.attempt);
        if user.name == "poison" {
            return Err(format!("poison pill for user {}", user.user_id));
        }
        if user.name == "panic" && attempt == 1 {
            panic!("the handler panicked on purpose");
        }
        if attempt <= self.fail_first {
            return Err(format!("transient failure on attempt {attempt}"));
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.log.record(user.user_id);
        Ok(())
    }

    async fn user_renamed(&self, user_id: i32, _name: String) {
        self.log.runs.fetch_add(1, Ordering::Relaxed);
        self.log.record(user_id);
    }
}

/// A subscriber that keeps every event it is handed, id included, so that a test can publish
/// the very same event again (what a redelivery or a publisher's retry looks like).
#[derive(Clone, Debug, Default)]
pub struct Tap {
    envelopes: Arc<Mutex<Vec<Envelope>>>,
}

impl Tap {
    /// What it has been handed so far, oldest first.
    pub fn envelopes(&self) -> Vec<Envelope> {
        self.envelopes.lock().unwrap().clone()
    }
}

impl EventHandler for Tap {
    fn contract(&self) -> &'static ContractDescriptor {
        CONTRACT
    }

    fn handle(&self, event: &str, codec: wirecall::Codec, payload: bytes::Bytes) -> HandlerFuture {
        let context = EventContext::current().expect("a handler runs inside its event's context");
        let mut envelope = Envelope::new(CONTRACT.name, event.to_owned(), codec, payload);
        envelope.id = context.id;
        envelope.timestamp = context.timestamp;
        self.envelopes.lock().unwrap().push(envelope);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The `n`th user.
pub fn user(n: i32) -> UserModel {
    UserModel {
        user_id: n,
        name: format!("user {n}"),
        age: 30,
    }
}

/// Publishes users `from..to`.
pub async fn publish_range(publisher: &UserEventsPublisher, from: i32, to: i32) {
    for n in from..to {
        publisher.user_created(user(n)).await.expect("publish");
    }
}

/// Two subscriptions of one contract each receive every event.
pub async fn two_subscriptions_each_get_every_event(bus: &EventBus) {
    let (billing, mail) = (unique("billing"), unique("mail"));
    let (a, b) = (Recorder::new(), Recorder::new());
    let _a = bus
        .subscribe_with(
            &billing,
            UserEventsSubscriber::new(a.clone()),
            quick_config(),
        )
        .await
        .unwrap();
    let _b = bus
        .subscribe_with(&mail, UserEventsSubscriber::new(b.clone()), quick_config())
        .await
        .unwrap();
    let publisher = UserEventsPublisher::new(bus);
    publish_range(&publisher, 0, 200).await;
    publisher
        .user_renamed(1000, "ada".to_owned())
        .await
        .unwrap();
    eventually("both subscriptions got all 201 events", || {
        a.log.distinct() == 201 && b.log.distinct() == 201
    })
    .await;
    cleanup(bus, &[&billing, &mail]).await;
}

/// Three consumers of one subscription share its events: each handles some, together all,
/// and none twice.
pub async fn three_consumers_share_one_subscription(buses: [&EventBus; 3]) {
    let name = unique("workers");
    buses[0].declare(CONTRACT, &name).await.unwrap();
    let recorders = [Recorder::new(), Recorder::new(), Recorder::new()];
    let mut subscriptions = Vec::new();
    for (bus, recorder) in buses.iter().zip(&recorders) {
        let recorder = Recorder {
            delay: Duration::from_millis(2),
            ..recorder.clone()
        };
        subscriptions.push(
            bus.subscribe_with(
                &name,
                UserEventsSubscriber::new(recorder),
                quick_config().prefetch(1),
            )
            .await
            .unwrap(),
        );
    }
    publish_range(&UserEventsPublisher::new(buses[0]), 0, 300).await;
    eventually("the three consumers handled 300 events", || {
        recorders.iter().map(|r| r.log.distinct()).sum::<usize>() == 300
    })
    .await;
    let shares: Vec<usize> = recorders.iter().map(|r| r.log.distinct()).collect();
    assert!(shares.iter().all(|&share| share > 0), "shares {shares:?}");
    assert!(recorders.iter().all(|r| r.log.duplicates() == 0));
    drop(subscriptions);
    cleanup(buses[0], &[&name]).await;
}

/// Events published while no consumer runs wait in the subscription's queue.
pub async fn offline_subscriber_receives_everything_later(bus: &EventBus) {
    let name = unique("offline");
    bus.declare_with(CONTRACT, &name, quick_config())
        .await
        .unwrap();
    publish_range(&UserEventsPublisher::new(bus), 0, 1000).await;
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            &name,
            UserEventsSubscriber::new(recorder.clone()),
            quick_config(),
        )
        .await
        .unwrap();
    eventually("the late subscriber got all 1,000 events", || {
        recorder.log.distinct() == 1000
    })
    .await;
    assert_eq!(recorder.log.duplicates(), 0);
    cleanup(bus, &[&name]).await;
}

/// A handler that fails twice per event runs to success once per event, on its third run.
pub async fn failing_twice_then_succeeding_succeeds_once(bus: &EventBus) {
    let name = unique("flaky");
    let recorder = Recorder {
        fail_first: 2,
        ..Recorder::new()
    };
    let _subscription = bus
        .subscribe_with(
            &name,
            UserEventsSubscriber::new(recorder.clone()),
            quick_config(),
        )
        .await
        .unwrap();
    publish_range(&UserEventsPublisher::new(bus), 0, 20).await;
    eventually("20 events succeeded on their third run", || {
        recorder.log.distinct() == 20
    })
    .await;
    assert!((0..20).all(|n| recorder.log.handled(n) == 1));
    assert_eq!(recorder.log.runs(), 60);
    assert!(bus
        .take_dead_letters(CONTRACT, &name, 10)
        .await
        .unwrap()
        .is_empty());
    cleanup(bus, &[&name]).await;
}

/// An event whose handler always fails ends in the dead letters after the configured
/// attempts, with the error and the attempt count; the others are handled.
pub async fn poison_event_ends_in_dead_letters(bus: &EventBus) {
    let name = unique("poison");
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            &name,
            UserEventsSubscriber::new(recorder.clone()),
            quick_config(),
        )
        .await
        .unwrap();
    let publisher = UserEventsPublisher::new(bus);
    publisher
        .user_created(UserModel {
            user_id: -1,
            name: "poison".to_owned(),
            age: 0,
        })
        .await
        .unwrap();
    publish_range(&publisher, 0, 10).await;
    let dead = wait_for_dead_letters(bus, &name, 1).await;
    assert_eq!(dead[0].reason, DeadLetterReason::HandlerFailed);
    assert_eq!(dead[0].envelope.attempts, QUICK_RETRY.max_attempts);
    assert!(dead[0].error.contains("poison pill"), "{}", dead[0].error);
    assert_eq!(dead[0].envelope.event, "user_created");
    eventually("the 10 good events were handled", || {
        recorder.log.distinct() == 10
    })
    .await;
    assert_eq!(
        recorder.log.runs(),
        10 + u64::from(QUICK_RETRY.max_attempts)
    );
    cleanup(bus, &[&name]).await;
}

/// Bad input (a content type no codec has, a truncated payload, an event the contract does
/// not have) goes to the dead letters with its reason, and consumption goes on.
pub async fn bad_input_ends_in_dead_letters(bus: &EventBus) {
    let name = unique("hostile");
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            &name,
            UserEventsSubscriber::new(recorder.clone()),
            quick_config(),
        )
        .await
        .unwrap();
    let good = encoded_user_created(bus, &name).await;
    let mut unknown_type = good.clone();
    unknown_type.content_type = "text/xml".into();
    let mut truncated = good.clone();
    truncated.payload = truncated.payload.slice(..truncated.payload.len() / 2);
    let mut unknown_event = good.clone();
    unknown_event.event = "user_exploded".into();
    for envelope in [unknown_type, truncated, unknown_event] {
        bus.publish_envelope(envelope).await.unwrap();
    }
    publish_range(&UserEventsPublisher::new(bus), 0, 5).await;
    let dead = wait_for_dead_letters(bus, &name, 3).await;
    let mut reasons: Vec<DeadLetterReason> = dead.iter().map(|letter| letter.reason).collect();
    reasons.sort_by_key(|reason| reason.as_str());
    assert_eq!(
        reasons,
        [
            DeadLetterReason::Undecodable,
            DeadLetterReason::UnknownContentType,
            DeadLetterReason::UnknownEvent,
        ]
    );
    assert!(dead.iter().all(|letter| letter.envelope.attempts == 0));
    eventually("the good events after the bad ones were handled", || {
        recorder.log.distinct() == 5
    })
    .await;
    assert_eq!(recorder.log.runs(), 5);
    cleanup(bus, &[&name]).await;
}

/// Metadata and the trace context travel with an event; the handler sees its id, timestamp
/// and attempt number.
pub async fn metadata_and_trace_context_travel(bus: &EventBus) {
    let name = unique("context");
    let recorder = Recorder::new();
    let _subscription = bus
        .subscribe_with(
            &name,
            UserEventsSubscriber::new(recorder.clone()),
            quick_config(),
        )
        .await
        .unwrap();
    let metadata = wirecall::Metadata::try_from(vec![("tenant", "acme")]).unwrap();
    let publisher = UserEventsPublisher::new(bus)
        .with_codec(wirecall::Codec::Json)
        .with_metadata(metadata);
    publisher.user_created(user(7)).await.unwrap();
    eventually("the event was handled", || recorder.log.distinct() == 1).await;
    let context = recorder.log.last_context().expect("a context");
    assert_eq!(context.metadata.get("tenant"), Some("acme"));
    assert!(context.trace.is_some());
    assert_eq!(context.attempt, 1);
    assert_eq!(context.event, "user_created");
    assert!(context.timestamp.elapsed().unwrap() < Duration::from_secs(60));
    cleanup(bus, &[&name]).await;
}

/// A `user_created` envelope built by hand (its payload is a `UserModel`, not the event's
/// argument record, which is fine for the tests that spoil it).
async fn encoded_user_created(_bus: &EventBus, _name: &str) -> Envelope {
    let mut payload = bytes::BytesMut::new();
    wirecall::Codec::MessagePack
        .encode(&user(99), &mut payload)
        .unwrap();
    Envelope::new(
        CONTRACT.name,
        "user_created",
        wirecall::Codec::MessagePack,
        payload.freeze(),
    )
}

/// Waits until `subscription` has `count` dead letters and takes them.
pub async fn wait_for_dead_letters(
    bus: &EventBus,
    subscription: &str,
    count: usize,
) -> Vec<wirecall::events::DeadLetter> {
    let taken = Arc::new(Mutex::new(Vec::new()));
    eventually_async(&format!("{count} dead letters in {subscription}"), || {
        let taken = Arc::clone(&taken);
        async move {
            let more = bus
                .take_dead_letters(CONTRACT, subscription, count)
                .await
                .unwrap();
            let mut taken = taken.lock().unwrap();
            taken.extend(more);
            taken.len() >= count
        }
    })
    .await;
    let taken = std::mem::take(&mut *taken.lock().unwrap());
    taken
}

/// Deletes the subscriptions a scenario made. Right after a broker restart the bus may still
/// be reconnecting, and it refuses at once rather than wait (`SubscribeError::Disconnected`):
/// that is retried until the bus is back; any other error fails the test.
pub async fn cleanup(bus: &EventBus, subscriptions: &[&str]) {
    for subscription in subscriptions {
        eventually_async(
            "the subscription deleted once the bus is connected",
            || async {
                match bus.delete_subscription(CONTRACT, subscription).await {
                    Ok(()) => true,
                    Err(SubscribeError::Disconnected) => false,
                    Err(err) => panic!("deleting subscription {subscription}: {err}"),
                }
            },
        )
        .await;
    }
}
