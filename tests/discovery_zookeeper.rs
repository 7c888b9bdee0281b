//! Discovery against a real ZooKeeper (feature `zookeeper`). `.ci/run` installs Debian's
//! `zookeeper` (and a JRE), starts one on a loopback port and runs `cargo test --features
//! zookeeper --test discovery_zookeeper` with `WIRECALL_ZOOKEEPER=127.0.0.1:PORT`. These
//! tests fail, never skip, when that variable is missing or ZooKeeper does not answer. The
//! session-expiry test starts a ZooKeeper of its own (`java` with
//! `WIRECALL_ZOOKEEPER_CLASSPATH`, default Debian's paths) so that it can replace it.
//!
//! In ZooKeeper a registration lives as long as its registry's session, so each server here
//! has a registry (a session) of its own, as separate processes would.
#![cfg(feature = "zookeeper")]

mod cluster;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cluster::{client, load, shares, start_node, wait_for_endpoints};
use wirecall::discovery::{Balance, Registry, ZooKeeper};
use wirecall::RunningServer;

const SESSION: Duration = Duration::from_secs(2);

fn zookeeper_endpoint() -> String {
    std::env::var("WIRECALL_ZOOKEEPER").unwrap_or_else(|_| {
        panic!(
            "WIRECALL_ZOOKEEPER is not set: start ZooKeeper (e.g. `java -cp \
             /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
             org.apache.zookeeper.server.ZooKeeperServerMain 2181 /tmp/zk 500`) and set \
             WIRECALL_ZOOKEEPER=127.0.0.1:2181, or run `bash .ci/run`"
        )
    })
}

fn root(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("/wirecall-test/{test}-{}-{nanos}", std::process::id())
}

/// A registry (a session) on `endpoint` under `root`; fails at once if ZooKeeper is not there.
async fn registry_at(endpoint: &str, root: &str) -> Registry {
    let registry = ZooKeeper::connect_with(endpoint, root, SESSION);
    let mut probe = registry.watch("probe");
    tokio::time::timeout(Duration::from_secs(10), probe.ready())
        .await
        .unwrap_or_else(|_| panic!("ZooKeeper at {endpoint} did not answer within 10 s"));
    registry
}

/// `n` servers, each registered through a session of its own.
async fn fleet(endpoint: &str, root: &str, names: &[&str]) -> Vec<RunningServer> {
    let mut servers = Vec::new();
    for name in names {
        let own = registry_at(endpoint, root).await;
        servers.push(start_node(&own, name, SESSION).await);
    }
    servers
}

#[tokio::test]
async fn three_servers_are_discovered_and_each_gets_a_share() {
    let (endpoint, root) = (zookeeper_endpoint(), root("share"));
    let servers = fleet(&endpoint, &root, &["a", "b", "c"]).await;
    let registry = registry_at(&endpoint, &root).await;
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
async fn killing_a_server_under_load_loses_no_call_and_its_route_goes() {
    let (endpoint, root) = (zookeeper_endpoint(), root("kill"));
    let mut servers = fleet(&endpoint, &root, &["a", "b", "c"]).await;
    let registry = registry_at(&endpoint, &root).await;
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(10)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Stopped at once; its registry (and so its session) goes with it.
    servers.remove(1).abort();
    wait_for_endpoints(&channel, 2, SESSION + Duration::from_secs(2)).await;
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
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_rolling_restart_of_three_servers_under_load_fails_no_call() {
    let (endpoint, root) = (zookeeper_endpoint(), root("rolling"));
    let mut servers = fleet(&endpoint, &root, &["a0", "b0", "c0"]).await;
    let registry = registry_at(&endpoint, &root).await;
    let (client, channel) = client(&registry, Balance::PowerOfTwo).await;
    wait_for_endpoints(&channel, 3, Duration::from_secs(10)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let running = load(client.clone(), Arc::clone(&stop), true);
    for name in ["a1", "b1", "c1"] {
        tokio::time::sleep(Duration::from_millis(200)).await;
        servers.remove(0).shutdown().await;
        servers.extend(fleet(&endpoint, &root, &[name]).await);
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
    let counts = shares(&client, 90).await;
    let mut names: Vec<_> = counts.keys().cloned().collect();
    names.sort();
    assert_eq!(names, ["a1", "b1", "c1"]);
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn hosts_registering_at_the_same_moment_all_appear_under_their_own_nodes() {
    let (endpoint, root) = (zookeeper_endpoint(), root("burst"));
    let registry = registry_at(&endpoint, &root).await;
    let mut watch = registry.watch("Cluster");
    watch.ready().await;
    let names: Vec<String> = (0..10).map(|i| format!("h{i}")).collect();
    let servers = futures::future::join_all(names.iter().map(|name| {
        let (endpoint, root) = (endpoint.clone(), root.clone());
        async move {
            let own = registry_at(&endpoint, &root).await;
            start_node(&own, name, SESSION).await
        }
    }))
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let set = loop {
        let set = tokio::time::timeout_at(deadline, watch.changed())
            .await
            .expect("all 10 registrations within 10 s");
        if set.endpoints.len() == 10 {
            break set;
        }
    };
    let mut keys: Vec<_> = set.endpoints.iter().map(|e| e.key.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 10, "every host has a node of its own");
    for server in servers {
        server.shutdown().await;
    }
}

/// A ZooKeeper of this test's own, stopped by PID when dropped.
struct PrivateZooKeeper {
    child: Child,
    port: u16,
}

impl PrivateZooKeeper {
    fn start(port: u16, data: &std::path::Path) -> Self {
        let classpath = std::env::var("WIRECALL_ZOOKEEPER_CLASSPATH")
            .unwrap_or_else(|_| "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar".to_owned());
        let child = Command::new("java")
            .args([
                "-cp",
                &classpath,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
            ])
            .arg(port.to_string())
            .arg(data)
            .arg("500")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start ZooKeeper (install zookeeper): {err}"));
        Self { child, port }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PrivateZooKeeper {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test]
async fn after_a_session_expiry_the_server_registers_again() {
    let dir = std::env::temp_dir().join(format!("wirecall-zk-expiry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut zookeeper = PrivateZooKeeper::start(port, &dir.join("first"));
    let endpoint = format!("127.0.0.1:{}", zookeeper.port);
    let root = root("expiry");
    let server_registry = registry_at(&endpoint, &root).await;
    let server = start_node(&server_registry, "a", SESSION).await;
    let registry = registry_at(&endpoint, &root).await;
    let (client, channel) = client(&registry, Balance::RoundRobin).await;
    wait_for_endpoints(&channel, 1, Duration::from_secs(10)).await;

    // A new ZooKeeper with empty data on the same port: every session of the old one is
    // unknown to it, so clients reconnecting there learn that their session expired.
    zookeeper.stop();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        client.whoami(0).await.unwrap(),
        "a",
        "calls flow without the registry"
    );
    zookeeper = PrivateZooKeeper::start(port, &dir.join("second"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let fresh = registry_at(&endpoint, &root).await;
    let mut watch = fresh.watch("Cluster");
    loop {
        if watch.current().endpoints.len() == 1 {
            break;
        }
        tokio::time::timeout_at(deadline, watch.changed())
            .await
            .expect("the server registered again within 30 s");
    }
    assert_eq!(client.whoami(0).await.unwrap(), "a");
    server.shutdown().await;
    drop(zookeeper);
    let _ = std::fs::remove_dir_all(&dir);
}
