//! Many calls in flight on one connection, answered out of order.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::future::join_all;
use wirecall::Channel;

#[tokio::test]
async fn a_thousand_concurrent_calls_on_one_connection_all_get_their_own_answer() {
    let (server, _) = start_server().await;
    let lab = LabClient::new(Channel::connect(server.local_addr()).await.unwrap());
    let calls = (0..1_000i64).map(|i| {
        let lab = lab.clone();
        async move { (i, lab.add(i, 1_000_000).await) }
    });
    let results = join_all(calls).await;
    for (i, result) in results {
        assert_eq!(result.unwrap(), i + 1_000_000);
    }
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test]
async fn calls_from_many_tasks_are_routed_by_request_id() {
    let (server, _) = start_server().await;
    let lab = LabClient::new(Channel::connect(server.local_addr()).await.unwrap());
    let tasks: Vec<_> = (0..8i64)
        .map(|task| {
            let lab = lab.clone();
            tokio::spawn(async move {
                for i in 0..200 {
                    assert_eq!(lab.add(task * 1000, i).await.unwrap(), task * 1000 + i);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

#[tokio::test]
async fn a_slow_call_does_not_delay_fast_calls_issued_after_it() {
    let (server, _) = start_server().await;
    let lab = LabClient::new(Channel::connect(server.local_addr()).await.unwrap());
    let slow_lab = lab.clone();
    let slow = tokio::spawn(async move {
        let started = Instant::now();
        slow_lab.sleep_ms(200).await.unwrap();
        started.elapsed()
    });
    // Let the slow request reach the server first.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let started = Instant::now();
    let fast = join_all((0..100).map(|i| lab.add(i, i))).await;
    let fast_elapsed = started.elapsed();
    for (i, result) in fast.into_iter().enumerate() {
        assert_eq!(result.unwrap(), 2 * i as i64);
    }
    let slow_elapsed = slow.await.unwrap();
    assert!(
        slow_elapsed >= Duration::from_millis(200),
        "the slow call took {slow_elapsed:?}"
    );
    // 100 fast calls finish long before the slow one: they were not queued behind it.
    assert!(
        fast_elapsed < Duration::from_millis(150),
        "100 fast calls took {fast_elapsed:?} behind a 200 ms call"
    );
}
