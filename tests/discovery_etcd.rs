//! Discovery against a real etcd (feature `etcd`). `.ci/run` installs etcd, starts one on a
//! loopback port, and runs `cargo test --features etcd --test discovery_etcd` with
//! `WIRECALL_ETCD=127.0.0.1:PORT`. These tests fail, never skip, when that variable is
//! missing or etcd does not answer. The registry outage test starts an etcd of its own from
//! the `etcd` binary (or `WIRECALL_ETCD_BIN`) so that it can stop and restart it.
#![cfg(feature = "etcd")]

mod cluster;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cluster::{client, load, shares, start_node, wait_for_endpoints};
use wirecall::discovery::{Balance, Etcd, Registry};

const TTL: Duration = Duration::from_secs(2);

fn etcd_endpoint() -> String {
    std::env::var("WIRECALL_ETCD").unwrap_or_else(|_| {
        panic!(
            "WIRECALL_ETCD is not set: start etcd (e.g. `etcd --listen-client-urls \
             http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379`) and set \
             WIRECALL_ETCD=127.0.0.1:2379, or run `bash .ci/run`"
        )
    })
}

/// A registry on the shared etcd, under a prefix of this test's own.
async fn registry(test: &str) -> Registry {
    registry_at(&etcd_endpoint(), test).await
}

async fn registry_at(endpoint: &str, test: &str) -> Registry {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("/wirecall-test/{test}-{}-{nanos}/", std::process::id());
    let registry = Etcd::connect_with_prefix([endpoint], &prefix)
        .await
        .unwrap_or_else(|err| panic!("etcd at {endpoint} unreachable: {err}"));
    // Fail at once (not after a long wait) when etcd is not there.
    let mut probe = registry.watch("probe");
    tokio::time::timeout(Duration::from_secs(10), probe.ready())
        .await
        .unwrap_or_else(|_| panic!("etcd at {endpoint} did not answer within 10 s"));
    registry
}

#[tokio::test]
async fn three_servers_are_discovered_and_each_gets_a_share() {
    let registry = registry("share").await;
    let mut servers = Vec::new();
    for name in ["a", "b", "c"] {
        servers.push(start_node(&registry, name, TTL).await);
    }
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(10)).await;
    let counts = shares(&client, 300).await;
    assert_eq!(counts.len(), 3, "{counts:?}");
    for (name, count) in &counts {
        assert!(*count >= 30, "{name} got {count} of 300: {counts:?}");
    }
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn killing_a_server_under_load_loses_no_call_and_its_route_expires_within_the_ttl() {
    let registry = registry("kill").await;
    let a = start_node(&registry, "a", TTL).await;
    let b = start_node(&registry, "b", TTL).await;
    let c = start_node(&registry, "c", TTL).await;
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(10)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = tokio::time::Instant::now();
    b.abort();
    // etcd counts whole seconds and checks expiry twice a second.
    wait_for_endpoints(&channel, 2, TTL + Duration::from_millis(1500)).await;
    let gone_after = killed.elapsed();
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
    eprintln!("route of the killed server gone after {gone_after:?}; {ok} calls, none failed");
    a.shutdown().await;
    c.shutdown().await;
}

#[tokio::test]
async fn a_rolling_restart_of_three_servers_under_load_fails_no_call() {
    let registry = registry("rolling").await;
    let mut servers = Vec::new();
    for name in ["a0", "b0", "c0"] {
        servers.push(start_node(&registry, name, TTL).await);
    }
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(10)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), true);
    for name in ["a1", "b1", "c1"] {
        tokio::time::sleep(Duration::from_millis(200)).await;
        servers.remove(0).shutdown().await;
        servers.push(start_node(&registry, name, TTL).await);
        wait_for_endpoints(&channel, 3, Duration::from_secs(10)).await;
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
    eprintln!("rolling restart: {ok} calls, none failed");
    let counts = shares(&client, 90).await;
    let mut names: Vec<_> = counts.keys().cloned().collect();
    names.sort();
    assert_eq!(names, ["a1", "b1", "c1"]);
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn twenty_hosts_registering_at_the_same_moment_all_appear() {
    let registry = registry("burst").await;
    let mut watch = registry.watch("Cluster");
    watch.ready().await;
    let names: Vec<String> = (0..20).map(|i| format!("h{i}")).collect();
    let servers =
        futures::future::join_all(names.iter().map(|name| start_node(&registry, name, TTL))).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut updates = 0;
    let set = loop {
        let set = tokio::time::timeout_at(deadline, watch.changed())
            .await
            .expect("all 20 registrations within 10 s");
        updates += 1;
        if set.endpoints.len() == 20 {
            break set;
        }
    };
    let mut keys: Vec<_> = set.endpoints.iter().map(|e| e.key.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 20, "every host has a key of its own");
    assert!(
        updates < 20,
        "20 registrations took {updates} updates: not coalesced"
    );
    eprintln!("20 simultaneous registrations reached the watcher in {updates} update(s)");
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn one_hosts_lease_expiring_never_removes_another_hosts_records() {
    let registry = registry("expiry").await;
    let live = start_node(&registry, "live", TTL).await;
    let dead = start_node(&registry, "dead", TTL).await;
    let mut watch = registry.watch("Cluster");
    let before = loop {
        let set = watch.changed().await;
        if set.endpoints.len() == 2 {
            break set;
        }
    };
    let live_addr = live.local_addr().to_string();
    let live_key = before
        .endpoints
        .iter()
        .find(|e| e.registration.address == live_addr)
        .expect("the live host's record")
        .key
        .clone();
    dead.abort();
    // Three TTLs: the dead lease expires, the live one is renewed throughout.
    tokio::time::sleep(TTL * 3).await;
    let after = watch.current();
    assert_eq!(after.endpoints.len(), 1, "{:?}", after.endpoints);
    assert_eq!(
        after.endpoints[0].key, live_key,
        "the live host's record was replaced"
    );
    live.shutdown().await;
}

/// An etcd of this test's own, stopped by PID when dropped.
struct PrivateEtcd {
    child: Child,
    endpoint: String,
    args: Vec<String>,
}

impl PrivateEtcd {
    fn start(dir: &std::path::Path, client_port: u16, peer_port: u16) -> Self {
        let endpoint = format!("127.0.0.1:{client_port}");
        let args = vec![
            "--name".to_owned(),
            "outage".to_owned(),
            "--data-dir".to_owned(),
            dir.join("data").display().to_string(),
            "--listen-client-urls".to_owned(),
            format!("http://{endpoint}"),
            "--advertise-client-urls".to_owned(),
            format!("http://{endpoint}"),
            "--listen-peer-urls".to_owned(),
            format!("http://127.0.0.1:{peer_port}"),
            "--initial-advertise-peer-urls".to_owned(),
            format!("http://127.0.0.1:{peer_port}"),
            "--initial-cluster".to_owned(),
            format!("outage=http://127.0.0.1:{peer_port}"),
        ];
        let child = Self::spawn(&args, dir);
        Self {
            child,
            endpoint,
            args,
        }
    }

    fn spawn(args: &[String], dir: &std::path::Path) -> Child {
        let binary = std::env::var("WIRECALL_ETCD_BIN").unwrap_or_else(|_| "etcd".to_owned());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("etcd.log"))
            .unwrap();
        Command::new(&binary)
            .args(args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {binary} (install etcd-server): {err}"))
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn restart(&mut self, dir: &std::path::Path) {
        self.child = Self::spawn(&self.args, dir);
    }
}

impl Drop for PrivateEtcd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn calls_flow_while_the_registry_is_down_and_registrations_come_back() {
    let dir = std::env::temp_dir().join(format!("wirecall-etcd-outage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut etcd = PrivateEtcd::start(&dir, free_port(), free_port());
    let registry = registry_at(&etcd.endpoint, "outage").await;
    let a = start_node(&registry, "a", TTL).await;
    let b = start_node(&registry, "b", TTL).await;
    let (client, channel) = client(&registry, Balance::RoundRobin).await;
    wait_for_endpoints(&channel, 2, Duration::from_secs(10)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), true);
    etcd.stop();
    // Longer than the lease TTL: the servers cannot renew, the client keeps its endpoints.
    tokio::time::sleep(TTL * 2).await;
    assert_eq!(channel.endpoints().len(), 2, "{:?}", channel.endpoints());
    etcd.restart(&dir);
    // Both servers are back in the registry, and stay there for two more TTLs: their
    // records are renewed (or written again under new leases), not leftovers of the leases
    // etcd restored and would expire.
    let addresses = || {
        let mut addresses: Vec<String> = registry
            .watch("Cluster")
            .current()
            .endpoints
            .iter()
            .map(|e| e.registration.address.clone())
            .collect();
        addresses.sort();
        addresses.dedup();
        addresses
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while addresses().len() != 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "registrations did not come back within 20 s: {:?}",
            addresses()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(TTL * 2).await;
    assert_eq!(addresses().len(), 2, "{:?}", addresses());
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
    a.shutdown().await;
    b.shutdown().await;
    drop(etcd);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three etcd members of this test's own, each stopped by PID when dropped.
struct PrivateCluster {
    members: Vec<Child>,
    clients: Vec<String>,
    dir: std::path::PathBuf,
}

impl PrivateCluster {
    fn start(dir: &std::path::Path) -> Self {
        let names = ["m0", "m1", "m2"];
        let clients: Vec<String> = names
            .iter()
            .map(|_| format!("127.0.0.1:{}", free_port()))
            .collect();
        let peers: Vec<String> = names
            .iter()
            .map(|_| format!("127.0.0.1:{}", free_port()))
            .collect();
        let initial = names
            .iter()
            .zip(&peers)
            .map(|(name, peer)| format!("{name}=http://{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let members = names
            .iter()
            .zip(clients.iter().zip(&peers))
            .map(|(name, (client, peer))| {
                let args = vec![
                    "--name".to_owned(),
                    (*name).to_owned(),
                    "--data-dir".to_owned(),
                    dir.join(name).display().to_string(),
                    "--listen-client-urls".to_owned(),
                    format!("http://{client}"),
                    "--advertise-client-urls".to_owned(),
                    format!("http://{client}"),
                    "--listen-peer-urls".to_owned(),
                    format!("http://{peer}"),
                    "--initial-advertise-peer-urls".to_owned(),
                    format!("http://{peer}"),
                    "--initial-cluster".to_owned(),
                    initial.clone(),
                    "--initial-cluster-state".to_owned(),
                    "new".to_owned(),
                ];
                PrivateEtcd::spawn(&args, dir)
            })
            .collect();
        Self {
            members,
            clients,
            dir: dir.to_path_buf(),
        }
    }

    fn kill(&mut self, member: usize) {
        let _ = self.members[member].kill();
        let _ = self.members[member].wait();
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        for member in 0..self.members.len() {
            self.kill(member);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn discovery_keeps_working_when_one_member_of_a_three_member_cluster_dies() {
    let dir = std::env::temp_dir().join(format!("wirecall-etcd-cluster-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cluster = PrivateCluster::start(&dir);
    let endpoints = cluster.clients.clone();
    let connect = || async {
        let prefix = "/wirecall-test/members/";
        let registry = Etcd::connect_with_prefix(&endpoints, prefix).await.unwrap();
        let mut probe = registry.watch("probe");
        tokio::time::timeout(Duration::from_secs(20), probe.ready())
            .await
            .expect("the 3-member cluster answers within 20 s");
        registry
    };
    let registry = connect().await;
    let a = start_node(&registry, "a", TTL).await;
    let (client, channel) = client(&registry, Balance::RoundRobin).await;
    wait_for_endpoints(&channel, 1, Duration::from_secs(10)).await;

    cluster.kill(0);
    // Registrations and watches go on through the two members left: a new server appears,
    // and the first one's lease keeps being renewed (it is still there after 3 TTLs).
    let b = start_node(&registry, "b", TTL).await;
    wait_for_endpoints(&channel, 2, Duration::from_secs(20)).await;
    tokio::time::sleep(TTL * 3).await;
    assert_eq!(channel.endpoints().len(), 2, "{:?}", channel.endpoints());
    let counts = shares(&client, 40).await;
    assert_eq!(counts.len(), 2, "{counts:?}");
    a.shutdown().await;
    b.shutdown().await;
}
