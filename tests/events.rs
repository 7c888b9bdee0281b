//! The event bus on its in-process back-end: the scenarios every back-end passes
//! (`tests/support/src/events.rs`), and what only in-process shows cheaply.

use std::time::Duration;

use wirecall::events::EventBus;
use wirecall_test_support::events::{self, Recorder, UserEventsPublisher, UserEventsSubscriber};
use wirecall_test_support::eventually;

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
