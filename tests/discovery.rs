//! Discovery and balancing over the static (in-process) registry: no external server. The
//! behaviours every back-end shares are in `tests/cluster/scenarios.rs` (run here, and against
//! a real etcd and ZooKeeper in `tests/discovery_etcd.rs` and `tests/discovery_zookeeper.rs`);
//! this file adds what needs no particular back-end: hashing, subsetting, a registry that is
//! down at start, the health service.

mod cluster;

use std::time::Duration;

use cluster::scenarios::{self, Namespace};
use cluster::{client, shares, start_node, wait_for_endpoints};
use wirecall::discovery::{Balance, Registry, StaticRegistry};
use wirecall_test_support::{eventually, eventually_async};

const TTL: Duration = Duration::from_secs(2);

fn registry() -> Registry {
    Registry::new(StaticRegistry::new())
}

/// A fresh static registry; it drops a dead host's record the moment its lease expires.
fn namespace() -> Namespace {
    Namespace::shared(
        registry(),
        TTL,
        Duration::from_secs(5),
        TTL + Duration::from_millis(1500),
    )
}

#[tokio::test]
async fn three_servers_each_get_a_share() {
    scenarios::three_servers_each_get_a_share(namespace()).await;
}

#[tokio::test]
async fn kill_under_load_loses_no_idempotent_call() {
    scenarios::kill_under_load_loses_no_idempotent_call(namespace()).await;
}

#[tokio::test]
async fn non_idempotent_call_is_never_replayed_and_names_its_endpoint() {
    scenarios::non_idempotent_call_is_never_replayed_and_names_its_endpoint(namespace()).await;
}

#[tokio::test]
async fn rolling_restart_under_load_fails_no_call() {
    scenarios::rolling_restart_under_load_fails_no_call(namespace()).await;
}

#[tokio::test]
async fn twenty_hosts_registering_at_once_all_appear() {
    scenarios::hosts_registering_at_once_all_appear(namespace(), 20).await;
}

#[tokio::test]
async fn a_dead_hosts_route_goes_and_takes_no_live_record_with_it() {
    scenarios::a_dead_hosts_route_goes_and_takes_no_live_record_with_it(namespace()).await;
}

#[tokio::test]
async fn no_endpoint_is_a_clear_error() {
    scenarios::no_endpoint_is_a_clear_error(namespace()).await;
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
        let keyed = cluster::ClusterClient::new(channel.with_hash_key(format!("user-{key}")));
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
async fn a_subsetting_client_calls_only_its_subset() {
    let registry = registry();
    let mut servers = Vec::new();
    for name in ["a", "b", "c", "d", "e"] {
        servers.push(start_node(&registry, name, TTL).await);
    }
    // The registrations arrive one by one, and the subset changes until all five are known.
    // A channel shares the registry's watch of its service and starts from the set that watch
    // holds: once it lists all five, a new channel starts from its final subset.
    let all = registry.watch("Cluster");
    eventually("all five servers are registered", || {
        all.current().endpoints.len() == 5
    })
    .await;
    let channel = wirecall::Channel::balanced()
        .subset(2)
        .subset_seed(7)
        .discover(&registry, "Cluster")
        .await
        .unwrap();
    drop(all);
    let client = cluster::ClusterClient::new(channel.clone());
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
    // The checks below run within it, before the server stops answering: ample for a loaded
    // machine.
    const DRAIN_DELAY: Duration = Duration::from_secs(2);

    let registry = registry();
    let health = HealthReporter::new();
    health.set("Cluster", ServingStatus::Serving);
    let server = wirecall::Server::builder()
        .serve(cluster::ClusterServer::new(cluster::Node {
            name: "h".to_owned(),
            ledger: Default::default(),
        }))
        .serve(health.service())
        .register(
            registry.clone(),
            wirecall::discovery::Registration::bound_address(),
        )
        .drain_delay(DRAIN_DELAY)
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
    // Within the drain delay: still answering, saying so, and deregistered.
    eventually_async("the health service reports draining", || async {
        probe.check("Cluster".to_owned()).await.unwrap() == ServingStatus::Draining
    })
    .await;
    assert_eq!(
        probe.check(String::new()).await.unwrap(),
        ServingStatus::Draining
    );
    // A channel starts from the registry's shared watch of its service (see the subsetting
    // test): once that lists nothing, a new channel knows no endpoint.
    let watch = registry.watch("Cluster");
    eventually("the server is deregistered", || {
        watch.current().endpoints.is_empty()
    })
    .await;
    let (_, channel) = client(&registry, Balance::RoundRobin).await;
    assert!(channel.endpoints().is_empty(), "{:?}", channel.endpoints());
    drop(watch);
    stopping.await.unwrap();
    drop(server);
}
