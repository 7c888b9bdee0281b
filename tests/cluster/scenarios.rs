//! The discovery behaviours every registry back-end must show, written once. Each test file
//! (`tests/discovery.rs`: static, `tests/discovery_etcd.rs`: etcd,
//! `tests/discovery_zookeeper.rs`: ZooKeeper) makes a fresh [`Namespace`] on its back-end and
//! calls these; what only one back-end can do (an etcd member dying, a ZooKeeper session
//! expiring, subsetting over the static registry) stays in that back-end's file.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use wirecall::discovery::{Balance, EndpointSet, Registry};
use wirecall::{Error, RunningServer};

use super::{
    client, load, load_id, shares, start_node_with_ledger, wait_for_endpoints, ClusterClient,
    Ledger,
};

/// A namespace of one test's own in one registry back-end (a fresh static registry, an etcd
/// key prefix, a ZooKeeper root), so that tests running at once never see each other's
/// servers, and the timings that differ between back-ends.
pub struct Namespace {
    /// The lease TTL servers register with (ZooKeeper: the session timeout).
    pub ttl: Duration,
    /// How long a registration or a graceful deregistration may take to reach a client.
    pub settle: Duration,
    /// How long after a kill -9 the dead host's record may stay: the TTL plus the back-end's
    /// expiry granularity.
    pub expiry: Duration,
    clients: Registry,
    hosts: HostRegistries,
    /// What [`Namespace::kill`] cuts, by server address.
    connections: Mutex<HashMap<SocketAddr, Cut>>,
    /// The `record` calls every server of this namespace ran.
    ledger: Ledger,
}

type HostRegistries = Box<dyn Fn() -> BoxFuture<'static, HostRegistry> + Send + Sync>;
type Cut = Box<dyn FnOnce() + Send>;

/// The registry one server registers through.
pub struct HostRegistry {
    /// The registry.
    pub registry: Registry,
    /// Cuts this registry's connection without a goodbye, as the death of the server's process
    /// would (a ZooKeeper session whose client vanished lives until it expires); `None` when
    /// stopping the server is enough (its lease is no longer renewed).
    pub cut: Option<Cut>,
}

impl Namespace {
    /// Servers and clients all go through `registry`, as they may when each registration is
    /// a lease of its own (static, etcd).
    pub fn shared(registry: Registry, ttl: Duration, settle: Duration, expiry: Duration) -> Self {
        let hosts = registry.clone();
        Self::with_host_registries(
            registry,
            move || {
                let registry = hosts.clone();
                Box::pin(async move {
                    HostRegistry {
                        registry,
                        cut: None,
                    }
                })
            },
            ttl,
            settle,
            expiry,
        )
    }

    /// Clients go through `clients`; each server through a registry `host_registry` makes,
    /// as separate processes would (ZooKeeper: a registration lives as long as its session).
    pub fn with_host_registries(
        clients: Registry,
        host_registry: impl Fn() -> BoxFuture<'static, HostRegistry> + Send + Sync + 'static,
        ttl: Duration,
        settle: Duration,
        expiry: Duration,
    ) -> Self {
        Self {
            ttl,
            settle,
            expiry,
            clients,
            hosts: Box::new(host_registry),
            connections: Mutex::new(HashMap::new()),
            ledger: Ledger::default(),
        }
    }

    /// The registry clients discover through.
    pub fn registry(&self) -> &Registry {
        &self.clients
    }

    /// Starts a server named `name`, registered in this namespace with the lease TTL.
    pub async fn start(&self, name: &str) -> RunningServer {
        let host = (self.hosts)().await;
        let server =
            start_node_with_ledger(&host.registry, name, self.ttl, self.ledger.clone()).await;
        if let Some(cut) = host.cut {
            self.connections
                .lock()
                .unwrap()
                .insert(server.local_addr(), cut);
        }
        server
    }

    async fn start_all(&self, names: &[&str]) -> Vec<RunningServer> {
        let mut servers = Vec::new();
        for name in names {
            servers.push(self.start(name).await);
        }
        servers
    }

    /// Stops `server` as kill -9 would: no deregistration, its connections (to clients and to
    /// the registry) cut, its record left to expire.
    pub fn kill(&self, server: RunningServer) {
        let cut = self
            .connections
            .lock()
            .unwrap()
            .remove(&server.local_addr());
        // The registry connection first: stopping the server drops its registry, which could
        // otherwise still say goodbye.
        if let Some(cut) = cut {
            cut();
        }
        server.abort();
    }
}

/// A registry server of the test's own, which a scenario may stop and start again.
pub trait RegistryServer {
    /// Stops it at once (by PID), as a crash would.
    fn stop(&mut self);
    /// Starts it again on the same address, with the data it had.
    fn restart(&mut self);
}

/// Stops the load, and checks that it ran and ended: returns (successes, failures).
async fn finish(
    stop: &AtomicBool,
    running: tokio::task::JoinHandle<(u64, Vec<String>)>,
) -> (u64, Vec<String>) {
    stop.store(true, Ordering::Relaxed);
    let (ok, failed) = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("no call hangs")
        .expect("the load task");
    assert!(ok > 100, "only {ok} calls ran");
    (ok, failed)
}

async fn shutdown(servers: Vec<RunningServer>) {
    for server in servers {
        server.shutdown().await;
    }
}

/// Three servers are discovered, and every balancer gives each of them a share of the calls.
pub async fn three_servers_each_get_a_share(ns: Namespace) {
    let servers = ns.start_all(&["a", "b", "c"]).await;
    for balance in [
        Balance::RoundRobin,
        Balance::Weighted,
        Balance::PowerOfTwo,
        Balance::ConsistentHash,
    ] {
        let (client, channel) = client(ns.registry(), balance).await;
        wait_for_endpoints(&channel, 3, ns.settle).await;
        let counts = shares(&client, 300).await;
        assert_eq!(counts.len(), 3, "{balance:?}: {counts:?}");
        for (name, count) in &counts {
            assert!(
                *count >= 30,
                "{balance:?}: {name} got {count} of 300: {counts:?}"
            );
        }
    }
    shutdown(servers).await;
}

/// One of three servers stopped at once under idempotent load, like kill -9 (no
/// deregistration, connections cut mid-call): no call fails, the client stops routing to it at
/// once (stale routes, surging#171), and its record leaves the registry within the TTL.
pub async fn kill_under_load_loses_no_idempotent_call(ns: Namespace) {
    let mut servers = ns.start_all(&["a", "b", "c"]).await;
    let (client, channel) = client(ns.registry(), Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, ns.settle).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = tokio::time::Instant::now();
    let victim = servers.remove(1);
    let victim_address = victim.local_addr().to_string();
    ns.kill(victim);
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Its record outlives it (the lease has not expired yet), but the client, having seen its
    // connection fail, has ejected it: it alone.
    let ejected: Vec<_> = channel
        .endpoints()
        .into_iter()
        .filter(|e| e.ejected)
        .map(|e| e.address)
        .collect();
    assert_eq!(
        ejected,
        [victim_address.as_str()],
        "{:?}",
        channel.endpoints()
    );
    // The dead host's route leaves the registry within the TTL, under load all along.
    wait_for_endpoints(&channel, 2, ns.expiry.saturating_sub(killed.elapsed())).await;
    let gone_after = killed.elapsed();
    assert!(
        channel
            .endpoints()
            .iter()
            .all(|e| e.address != victim_address),
        "{:?}",
        channel.endpoints()
    );
    let (ok, failed) = finish(&stop, running).await;
    assert!(
        failed.is_empty(),
        "{} idempotent calls failed: {failed:?}",
        failed.len()
    );
    eprintln!("route of the killed server gone after {gone_after:?}; {ok} calls, none failed");
    shutdown(servers).await;
}

/// One of two servers stopped at once under a mix of calls, with slow non-idempotent calls in
/// flight on both: idempotent calls are retried on the other server; a non-idempotent call
/// cut mid-flight is never replayed (it ran once, on the server that died) and fails naming
/// the endpoint it was on.
pub async fn non_idempotent_call_is_never_replayed_and_names_its_endpoint(ns: Namespace) {
    let mut servers = ns.start_all(&["a", "b"]).await;
    let (client, channel) = client(ns.registry(), Balance::RoundRobin).await;
    wait_for_endpoints(&channel, 2, ns.settle).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), true);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Six calls picked one after another (one task): round-robin puts some on each server,
    // where they run for a second, long past the kill.
    const SLOW: u64 = 1 << 40;
    let slow_ids: Vec<u64> = (SLOW..SLOW + 6).collect();
    let slow = tokio::spawn(futures::future::join_all(slow_ids.iter().map(|&id| {
        let client = client.clone();
        async move { client.record(id, 1000).await }
    })));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b = servers.remove(1);
    let b_address = b.local_addr().to_string();
    ns.kill(b);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, failed) = finish(&stop, running).await;
    let slow = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("no call hangs")
        .expect("the slow calls");
    let named = format!("endpoint {b_address}");
    let mut cut = 0;
    for (id, answer) in slow_ids.iter().zip(&slow) {
        match answer {
            Ok(name) => assert_eq!(name, "a", "call {id} answered by {name}, killed"),
            Err(err) => {
                assert!(err.to_string().contains(&named), "call {id}: {err}");
                cut += 1;
            }
        }
        assert_eq!(
            ns.ledger.times(*id),
            1,
            "call {id} did not run exactly once: {answer:?}"
        );
    }
    assert!(cut > 0, "no slow call was on b: {slow:?}");
    // Idempotent calls (odd sequence numbers) were retried; a non-idempotent call (even) cut
    // mid-flight fails, naming b, and was not run again.
    for failure in &failed {
        assert!(failure.contains(&named), "{failure}");
        let number = |after: &str, until: char| -> u64 {
            failure
                .split(after)
                .nth(1)
                .and_then(|rest| rest.split(until).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no {after}number in {failure}"))
        };
        let (worker, seq) = (number("worker ", ','), number("call ", ':'));
        assert_eq!(seq % 2, 0, "an idempotent call failed: {failure}");
        assert!(
            ns.ledger.times(load_id(worker, seq)) <= 1,
            "replayed: {failure}"
        );
    }
    assert_eq!(ns.ledger.replayed(), [] as [u64; 0], "calls run twice");
    eprintln!(
        "{cut} of 6 slow non-idempotent calls and {} under load cut by the kill, none replayed",
        failed.len()
    );
    shutdown(servers).await;
}

/// Each of three servers in turn shut down gracefully and replaced, under continuous load of
/// idempotent and non-idempotent calls: deregister-first and the drain delay mean no call
/// fails and none runs twice, and afterwards only the new servers answer.
pub async fn rolling_restart_under_load_fails_no_call(ns: Namespace) {
    let mut servers = ns.start_all(&["a0", "b0", "c0"]).await;
    let (client, channel) = client(ns.registry(), Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, ns.settle).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), true);
    for name in ["a1", "b1", "c1"] {
        tokio::time::sleep(Duration::from_millis(200)).await;
        servers.remove(0).shutdown().await;
        servers.push(ns.start(name).await);
        wait_for_endpoints(&channel, 3, ns.settle).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (ok, failed) = finish(&stop, running).await;
    assert!(
        failed.is_empty(),
        "{} calls failed: {failed:?}",
        failed.len()
    );
    assert_eq!(ns.ledger.replayed(), [] as [u64; 0], "calls run twice");
    eprintln!("rolling restart: {ok} calls, none failed");
    let counts = shares(&client, 90).await;
    let mut names: Vec<_> = counts.keys().cloned().collect();
    names.sort();
    assert_eq!(names, ["a1", "b1", "c1"]);
    shutdown(servers).await;
}

/// `hosts` servers registering at the same moment (start-up races, surging#363) all appear,
/// each under a key of its own, and the watcher hears of them in fewer updates than there
/// were registrations (the events are coalesced).
pub async fn hosts_registering_at_once_all_appear(ns: Namespace, hosts: usize) {
    let mut watch = ns.registry().watch(ClusterClient::SERVICE_NAME);
    watch.ready().await;
    let names: Vec<String> = (0..hosts).map(|i| format!("h{i}")).collect();
    let servers = futures::future::join_all(names.iter().map(|name| ns.start(name))).await;
    let deadline = tokio::time::Instant::now() + ns.settle;
    let mut updates = 0;
    let set = loop {
        let set = tokio::time::timeout_at(deadline, watch.changed())
            .await
            .unwrap_or_else(|_| panic!("all {hosts} registrations within {:?}", ns.settle));
        updates += 1;
        if set.endpoints.len() == hosts {
            break set;
        }
    };
    let keys: HashSet<_> = set.endpoints.iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys.len(), hosts, "every host has a key of its own");
    let addresses: HashSet<_> = set
        .endpoints
        .iter()
        .map(|e| e.registration.address.clone())
        .collect();
    let expected: HashSet<_> = servers.iter().map(|s| s.local_addr().to_string()).collect();
    assert_eq!(addresses, expected, "every host's record is its own");
    assert!(
        updates < hosts,
        "{hosts} registrations took {updates} updates: not coalesced"
    );
    eprintln!("{hosts} simultaneous registrations reached the watcher in {updates} update(s)");
    shutdown(servers).await;
}

/// A host killed next to a live one: the dead host's record goes within the TTL, and its
/// expiry never removes or replaces the live host's record (surging#134), which its
/// keep-alive holds for three TTLs and more.
pub async fn a_dead_hosts_route_goes_and_takes_no_live_record_with_it(ns: Namespace) {
    let live = ns.start("live").await;
    let dead = ns.start("dead").await;
    let mut watch = ns.registry().watch(ClusterClient::SERVICE_NAME);
    let deadline = tokio::time::Instant::now() + ns.settle;
    let before = loop {
        let set = watch.current();
        if set.endpoints.len() == 2 {
            break set;
        }
        tokio::time::timeout_at(deadline, watch.changed())
            .await
            .unwrap_or_else(|_| panic!("both registrations within {:?}", ns.settle));
    };
    let live_address = live.local_addr().to_string();
    let live_key = before
        .endpoints
        .iter()
        .find(|e| e.registration.address == live_address)
        .expect("the live host's record")
        .key
        .clone();
    let killed = tokio::time::Instant::now();
    ns.kill(dead);
    let deadline = killed + ns.expiry;
    while watch.current().endpoints.len() != 1 {
        tokio::time::timeout_at(deadline, watch.changed())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the dead host's record outlived the TTL by more than {:?}: {:?}",
                    ns.expiry - ns.ttl,
                    watch.current().endpoints
                )
            });
    }
    eprintln!("the dead host's record went after {:?}", killed.elapsed());
    // Three TTLs from the kill: the live lease is renewed throughout.
    tokio::time::sleep_until(killed + ns.ttl * 3).await;
    let after = watch.current();
    assert_eq!(after.endpoints.len(), 1, "{:?}", after.endpoints);
    assert_eq!(
        after.endpoints[0].key, live_key,
        "the live host's record was replaced"
    );
    live.shutdown().await;
}

/// The whole registry stopped under load for longer than the TTL, then started again: the
/// client keeps calling the endpoints it knew and no call fails, and both servers' records
/// come back and stay (renewed, or written again), not leftovers that expire.
pub async fn registry_outage_keeps_calls_flowing_and_registrations_come_back(
    ns: Namespace,
    registry: &mut impl RegistryServer,
) {
    let servers = ns.start_all(&["a", "b"]).await;
    let (client, channel) = client(ns.registry(), Balance::RoundRobin).await;
    wait_for_endpoints(&channel, 2, ns.settle).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), true);
    registry.stop();
    // Longer than the lease TTL: the servers cannot renew, the client keeps its endpoints.
    tokio::time::sleep(ns.ttl * 2).await;
    assert_eq!(channel.endpoints().len(), 2, "{:?}", channel.endpoints());
    let mut watch = ns.registry().watch(ClusterClient::SERVICE_NAME);
    let last_heard = watch.current().generation;
    registry.restart();
    let restarted = tokio::time::Instant::now();
    let addresses = |set: EndpointSet| -> HashSet<String> {
        set.endpoints
            .iter()
            .map(|e| e.registration.address.clone())
            .collect()
    };
    // Both records, in a set the registry sent after its restart.
    loop {
        let set = tokio::time::timeout_at(restarted + Duration::from_secs(20), watch.changed())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "registrations did not come back within 20 s: {:?}",
                    watch.current()
                )
            });
        if set.generation > last_heard && addresses(set).len() == 2 {
            break;
        }
    }
    eprintln!(
        "registrations back {:?} after the restart",
        restarted.elapsed()
    );
    // Two more TTLs: the records are renewed (or written again under new leases), not
    // leftovers of leases the registry restored and would expire.
    tokio::time::sleep(ns.ttl * 2).await;
    let expected: HashSet<_> = servers.iter().map(|s| s.local_addr().to_string()).collect();
    assert_eq!(addresses(watch.current()), expected);
    let (ok, failed) = finish(&stop, running).await;
    assert!(
        failed.is_empty(),
        "{} calls failed: {failed:?}",
        failed.len()
    );
    assert_eq!(ns.ledger.replayed(), [] as [u64; 0], "calls run twice");
    eprintln!("registry outage: {ok} calls, none failed");
    shutdown(servers).await;
}

/// A client of a service nobody registered gets an error that says so.
pub async fn no_endpoint_is_a_clear_error(ns: Namespace) {
    let (client, _) = client(ns.registry(), Balance::PowerOfTwo).await;
    match client.whoami(0).await {
        Err(Error::NoEndpoints { service, reason }) => {
            assert_eq!(service, "Cluster");
            assert!(reason.contains("none is registered"), "{reason}");
        }
        other => panic!("expected NoEndpoints, got {other:?}"),
    }
}
