//! Many calls in flight on one connection, answered out of order.

mod common;

use std::time::Duration;

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
    // Far longer than 100 small calls take even on a loaded machine: the fast calls must all
    // be answered while it is still running, which no queue behind it would allow.
    let slow = tokio::spawn(async move { slow_lab.sleep_ms(30_000).await });
    // Let the slow request reach the server first.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let fast = join_all((0..100).map(|i| lab.add(i, i))).await;
    for (i, result) in fast.into_iter().enumerate() {
        assert_eq!(result.unwrap(), 2 * i as i64);
    }
    assert!(
        !slow.is_finished(),
        "the slow call ended before the fast calls issued after it were answered"
    );
    slow.abort();
}
