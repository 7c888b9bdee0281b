//! A registry that suddenly lists no endpoint (its data lost, every lease gone during an
//! outage) does not take a balanced channel's callers down unless the channel asks for that.

mod cluster;

use std::time::Duration;

use cluster::{wait_for_endpoints, ClusterClient, ClusterServer, Ledger, Node};
use wirecall::discovery::{Registration, Registry, StaticRegistry};
use wirecall::{Channel, Error, RunningServer, Server};

/// A server that is not registered by itself: the test registers and removes its record.
async fn unregistered_server(name: &str) -> RunningServer {
    Server::builder()
        .serve(ClusterServer::new(Node {
            name: name.to_owned(),
            ledger: Ledger::default(),
        }))
        .bind("127.0.0.1:0")
        .await
        .expect("bind a test server")
}

async fn balanced(registry: &Registry, accept_empty_set: bool) -> Channel {
    Channel::balanced()
        .channel(Channel::builder().timeout(Duration::from_secs(5)))
        .accept_empty_set(accept_empty_set)
        .discover(registry, ClusterClient::SERVICE_NAME)
        .await
        .expect("discover the cluster")
}

/// Registers `server` in `registry`, and returns the registration's handle.
fn register(registry: &Registry, server: &RunningServer) -> wirecall::discovery::Registered {
    registry.keep_registered(
        Registration::new(server.local_addr().to_string())
            .service(ClusterClient::SERVICE_NAME)
            .ttl(Duration::from_secs(2)),
    )
}

#[tokio::test]
async fn the_last_endpoints_stay_when_the_registry_lists_none() {
    let registry = Registry::new(StaticRegistry::new());
    let server = unregistered_server("a").await;
    let record = register(&registry, &server);
    let channel = balanced(&registry, false).await;
    let client = ClusterClient::new(channel.clone());
    wait_for_endpoints(&channel, 1, Duration::from_secs(5)).await;

    record.deregister().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(channel.endpoints().len(), 1, "{:?}", channel.endpoints());
    assert_eq!(client.whoami(0).await.unwrap(), "a");

    // The next set that lists endpoints replaces the kept ones.
    let other = unregistered_server("b").await;
    let _record = register(&registry, &other);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while channel.endpoints().first().map(|e| e.address.clone())
        != Some(other.local_addr().to_string())
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            channel.endpoints()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(channel.endpoints().len(), 1);
    assert_eq!(client.whoami(0).await.unwrap(), "b");
    server.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn a_channel_that_accepts_an_empty_set_follows_the_registry_to_zero() {
    let registry = Registry::new(StaticRegistry::new());
    let server = unregistered_server("a").await;
    let record = register(&registry, &server);
    let channel = balanced(&registry, true).await;
    let client = ClusterClient::new(channel.clone());
    wait_for_endpoints(&channel, 1, Duration::from_secs(5)).await;

    record.deregister().await;
    wait_for_endpoints(&channel, 0, Duration::from_secs(5)).await;
    match client.whoami(0).await {
        Err(Error::NoEndpoints { reason, .. }) => {
            assert!(reason.contains("none is registered"), "{reason}")
        }
        other => panic!("expected NoEndpoints, got {other:?}"),
    }
    server.shutdown().await;
}
