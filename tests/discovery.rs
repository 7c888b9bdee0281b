//! Discovery and balancing over the static (in-process) registry: no external server.
//! `tests/discovery_etcd.rs` runs the same scenarios against a real etcd.

mod cluster;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cluster::{client, load, shares, start_node, wait_for_endpoints};
use wirecall::discovery::{Balance, Registry, StaticRegistry};
use wirecall::Error;

const TTL: Duration = Duration::from_secs(2);

fn registry() -> Registry {
    Registry::new(StaticRegistry::new())
}

#[tokio::test]
async fn three_servers_are_discovered_and_every_balancer_gives_each_a_share() {
    let registry = registry();
    let mut servers = Vec::new();
    for name in ["a", "b", "c"] {
        servers.push(start_node(&registry, name, TTL).await);
    }
    for balance in [
        Balance::RoundRobin,
        Balance::Weighted,
        Balance::PowerOfTwo,
        Balance::ConsistentHash,
    ] {
        let (client, channel) = client(&registry, balance).await;
        wait_for_endpoints(&channel, 3, Duration::from_secs(5)).await;
        let counts = shares(&client, 300).await;
        assert_eq!(counts.len(), 3, "{balance:?}: {counts:?}");
        for (name, count) in &counts {
            assert!(
                *count >= 30,
                "{balance:?}: {name} got {count} of 300: {counts:?}"
            );
        }
    }
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn consistent_hash_sends_one_key_to_one_server() {
    let registry = registry();
    let mut servers = Vec::new();
    for name in ["a", "b", "c"] {
        servers.push(start_node(&registry, name, TTL).await);
    }
    let (_, channel) = client(&registry, Balance::ConsistentHash).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(5)).await;
    let mut owners = std::collections::HashSet::new();
    for key in 0..20 {
        let keyed = cluster::ClusterClient::over(channel.with_hash_key(format!("user-{key}")));
        let first = keyed.whoami(0).await.unwrap();
        for _ in 0..5 {
            assert_eq!(
                keyed.whoami(0).await.unwrap(),
                first,
                "key user-{key} moved"
            );
        }
        owners.insert(first);
    }
    assert!(
        owners.len() > 1,
        "20 keys all landed on one server: {owners:?}"
    );
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn killing_a_server_under_load_loses_no_idempotent_call() {
    let registry = registry();
    let a = start_node(&registry, "a", TTL).await;
    let b = start_node(&registry, "b", TTL).await;
    let c = start_node(&registry, "c", TTL).await;
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(5)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Stopped at once, like kill -9: no deregistration, connections cut mid-call.
    b.abort();
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let (ok, failed) = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("no call hangs")
        .unwrap();
    assert!(
        failed.is_empty(),
        "{} idempotent calls failed: {failed:?}",
        failed.len()
    );
    assert!(ok > 100, "only {ok} calls ran");
    let ejected: Vec<_> = channel
        .endpoints()
        .into_iter()
        .filter(|e| e.ejected)
        .collect();
    assert_eq!(ejected.len(), 1, "{:?}", channel.endpoints());
    // The dead host's route disappears from the registry within the lease TTL.
    wait_for_endpoints(&channel, 2, TTL + Duration::from_secs(1)).await;
    a.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_non_idempotent_call_is_never_replayed_and_names_its_endpoint() {
    let registry = registry();
    let a = start_node(&registry, "a", TTL).await;
    let b = start_node(&registry, "b", TTL).await;
    let (client, channel) = client(&registry, Balance::RoundRobin).await;
    wait_for_endpoints(&channel, 2, Duration::from_secs(5)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), true);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b_addr = b.local_addr().to_string();
    b.abort();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let (ok, failed) = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("no call hangs")
        .unwrap();
    assert!(ok > 100, "only {ok} calls ran");
    // Idempotent calls (odd sequence numbers) were retried; a non-idempotent call (even) cut
    // mid-flight fails, naming b.
    for failure in &failed {
        assert!(failure.contains(&format!("endpoint {b_addr}")), "{failure}");
        let seq: u64 = failure
            .split("call ")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no sequence number in {failure}"));
        assert_eq!(seq % 2, 0, "an idempotent call failed: {failure}");
    }
    a.shutdown().await;
}

#[tokio::test]
async fn a_rolling_restart_under_load_fails_no_call() {
    let registry = registry();
    let mut servers = Vec::new();
    for name in ["a0", "b0", "c0"] {
        servers.push(start_node(&registry, name, TTL).await);
    }
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(5)).await;

    let stop = Arc::new(AtomicBool::new(false));
    // Non-idempotent calls too: deregister-first and the drain delay mean none is cut.
    let running = load(client.clone(), Arc::clone(&stop), true);
    for (round, name) in ["a1", "b1", "c1"].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let old = servers.remove(0);
        old.shutdown().await;
        servers.push(start_node(&registry, name, TTL).await);
        wait_for_endpoints(&channel, 3, Duration::from_secs(5)).await;
        let _ = round;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    let (ok, failed) = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("no call hangs")
        .unwrap();
    assert!(
        failed.is_empty(),
        "{} calls failed: {failed:?}",
        failed.len()
    );
    assert!(ok > 100, "only {ok} calls ran");
    let counts = shares(&client, 90).await;
    let mut names: Vec<_> = counts.keys().cloned().collect();
    names.sort();
    assert_eq!(names, ["a1", "b1", "c1"]);
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_server_whose_registry_is_down_serves_and_registers_later() {
    let backend = cluster::Flaky::new(StaticRegistry::new(), 3);
    let registry = Registry::new(backend.clone());
    let server = start_node(&registry, "late", TTL).await;
    // Served at once, registry or not.
    let direct = cluster::ClusterClient::connect(server.local_addr())
        .await
        .unwrap();
    assert_eq!(direct.whoami(0).await.unwrap(), "late");
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 1, Duration::from_secs(5)).await;
    assert_eq!(client.whoami(0).await.unwrap(), "late");
    assert!(backend.refused() >= 3);
    server.shutdown().await;
}

#[tokio::test]
async fn no_endpoint_is_a_clear_error() {
    let registry = registry();
    let (client, _) = client(&registry, Balance::PowerOfTwo).await;
    match client.whoami(0).await {
        Err(Error::NoEndpoints { service, reason }) => {
            assert_eq!(service, "Cluster");
            assert!(reason.contains("none is registered"), "{reason}");
        }
        other => panic!("expected NoEndpoints, got {other:?}"),
    }
}

#[tokio::test]
async fn a_subsetting_client_calls_only_its_subset() {
    let registry = registry();
    let mut servers = Vec::new();
    for name in ["a", "b", "c", "d", "e"] {
        servers.push(start_node(&registry, name, TTL).await);
    }
    let channel = wirecall::discovery::BalancedChannel::builder()
        .subset(2)
        .subset_seed(7)
        .discover(&registry, "Cluster")
        .await
        .unwrap();
    let client = cluster::ClusterClient::over(channel.clone());
    // The registrations arrive one by one; the subset settles once all five are known.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(channel.endpoints().len(), 2, "{:?}", channel.endpoints());
    let counts = shares(&client, 100).await;
    assert_eq!(counts.len(), 2, "{counts:?}");
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn the_health_service_reports_draining_as_soon_as_a_graceful_shutdown_begins() {
    use wirecall::health::{HealthClient, HealthReporter, ServingStatus};

    let registry = registry();
    let health = HealthReporter::new();
    health.set("Cluster", ServingStatus::Serving);
    let server = wirecall::Server::builder()
        .serve(cluster::ClusterServer::new(cluster::Node {
            name: "h".to_owned(),
            recorded: Default::default(),
        }))
        .serve(health.service())
        .register(
            registry.clone(),
            wirecall::discovery::Registration::bound_address(),
        )
        .drain_delay(Duration::from_millis(500))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    health.drain_on_shutdown(server.shutdown_handle());
    let probe = HealthClient::connect(server.local_addr()).await.unwrap();
    assert_eq!(
        probe.check("Cluster".to_owned()).await.unwrap(),
        ServingStatus::Serving
    );
    assert_eq!(
        probe.check(String::new()).await.unwrap(),
        ServingStatus::Serving
    );
    assert_eq!(
        probe.check("Other".to_owned()).await.unwrap(),
        ServingStatus::Unknown
    );

    let handle = server.shutdown_handle();
    let stopping = tokio::spawn(async move { handle.shutdown().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Within the drain delay: deregistered, still answering, and saying so.
    assert_eq!(
        probe.check("Cluster".to_owned()).await.unwrap(),
        ServingStatus::Draining
    );
    assert_eq!(
        probe.check(String::new()).await.unwrap(),
        ServingStatus::Draining
    );
    let (_, channel) = client(&registry, Balance::RoundRobin).await;
    assert!(channel.endpoints().is_empty(), "{:?}", channel.endpoints());
    stopping.await.unwrap();
    drop(server);
}
