//! Every method of the example service round-trips with every codec.

mod common;

use std::collections::HashMap;

use common::*;
use wirecall::Channel;

#[tokio::test]
async fn every_method_round_trips_with_every_codec() {
    let (server, _) = start_server().await;
    for codec in CODECS {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .unwrap();
        let client = UserServiceClient::new(channel);
        assert_eq!(client.codec(), codec);
        assert_eq!(client.get_user_id("fanly".to_owned()).await.unwrap(), 5);
        assert_eq!(client.get_user(fanly()).await.unwrap(), fanly());
        assert!(client.get(vec![fanly(); 10]).await.unwrap());
        assert!(!client.get(Vec::new()).await.unwrap());
        assert_eq!(
            client.get_dictionary().await.unwrap(),
            HashMap::from([("key".to_owned(), "value".to_owned())])
        );
        assert_eq!(client.find(1).await.unwrap(), Ok(fanly()), "{codec}");
    }
}

#[tokio::test]
async fn application_errors_arrive_as_ok_err_with_every_codec() {
    let (server, _) = start_server().await;
    for codec in CODECS {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .unwrap();
        let users = UserServiceClient::new(channel.clone());
        let expected = NotFound {
            user_id: 42,
            reason: "no such user".to_owned(),
        };
        assert_eq!(users.find(42).await.unwrap(), Err(expected), "{codec}");

        let lab = LabClient::new(channel);
        assert_eq!(lab.check(1).await.unwrap(), Ok(()), "{codec}");
        assert_eq!(
            lab.check(-3).await.unwrap(),
            Err("-3 is negative".to_owned()),
            "{codec}"
        );
        lab.nothing().await.unwrap();
        assert_eq!(lab.add(i64::MAX, 1).await.unwrap(), i64::MIN);
        assert_eq!(lab.blob(3).await.unwrap(), vec![7, 7, 7]);
    }
}

#[tokio::test]
async fn two_services_share_one_connection() {
    let (server, _) = start_server().await;
    let channel = Channel::connect(server.local_addr()).await.unwrap();
    let users = UserServiceClient::new(channel.clone());
    let lab = LabClient::new(channel);
    let (user, sum) = tokio::join!(users.get_user(fanly()), lab.add(2, 3));
    assert_eq!(user.unwrap(), fanly());
    assert_eq!(sum.unwrap(), 5);
    assert_eq!(server.connection_count(), 1);
}

#[tokio::test]
async fn one_way_calls_reach_the_server_without_a_reply() {
    let (server, lab_state) = start_server().await;
    let lab = LabClient::connect(server.local_addr()).await.unwrap();
    for value in 1..=100u64 {
        lab.record(value).await.unwrap();
    }
    // A request after the notifications on the same connection is read after them; the
    // notifications run concurrently, so poll until all have been counted.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let total = lab.recorded().await.unwrap();
        if total == 5050 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {total} recorded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(
        lab_state.recorded.load(std::sync::atomic::Ordering::SeqCst),
        5050
    );
}
