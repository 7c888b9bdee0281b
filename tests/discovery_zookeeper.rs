//! Discovery against a real ZooKeeper (feature `zookeeper`). `.ci/run` installs Debian's
//! `zookeeper` (and a JRE), starts one on a loopback port and runs `cargo test --features
//! zookeeper --test discovery_zookeeper` with `WIRECALL_ZOOKEEPER=127.0.0.1:PORT`. These
//! tests fail, never skip, when that variable is missing or ZooKeeper does not answer. The
//! behaviours every back-end shares are in `tests/cluster/scenarios.rs`; this file adds
//! ZooKeeper's own, session expiry: that test starts a ZooKeeper of its own (`java` with
//! `WIRECALL_ZOOKEEPER_CLASSPATH`, default Debian's paths) so that it can replace it.
//!
//! In ZooKeeper a registration lives as long as its registry's session, so each server here
//! has a registry (a session) of its own, as separate processes would, reaching ZooKeeper
//! through a relay that a kill -9 of the server cuts.
#![cfg(feature = "zookeeper")]

mod cluster;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use cluster::scenarios::{self, HostRegistry, Namespace, RegistryServer};
use cluster::{client, free_port, start_node, wait_for_endpoints};
use tokio::net::TcpStream;
use tokio_util::sync::{CancellationToken, DropGuard};
use wirecall::discovery::{Balance, Registry, ZooKeeper};

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
    let registry = Registry::new(
        ZooKeeper::new(endpoint)
            .with_root(root)
            .with_session_timeout(SESSION),
    );
    let mut probe = registry.watch("probe");
    tokio::time::timeout(Duration::from_secs(10), probe.ready())
        .await
        .unwrap_or_else(|_| panic!("ZooKeeper at {endpoint} did not answer within 10 s"));
    registry
}

/// A root of this test's own on the shared ZooKeeper: clients watch through one session,
/// each server registers through a session of its own, over a [`relay`] that a kill cuts.
/// ZooKeeper expires sessions on its 500 ms ticks and the watch then has to hear of it, so a
/// dead host's node may outlive the timeout by up to 2 s.
async fn namespace(test: &str) -> Namespace {
    namespace_at(&zookeeper_endpoint(), test).await
}

/// Like [`namespace`], on the ZooKeeper at `endpoint`.
async fn namespace_at(endpoint: &str, test: &str) -> Namespace {
    let (endpoint, root) = (endpoint.to_owned(), root(test));
    let clients = registry_at(&endpoint, &root).await;
    Namespace::with_host_registries(
        clients,
        move || {
            let (endpoint, root) = (endpoint.clone(), root.clone());
            Box::pin(async move {
                let (relay, cut) = relay(&endpoint).await;
                HostRegistry {
                    registry: registry_at(&relay, &root).await,
                    cut: Some(Box::new(move || drop(cut))),
                }
            })
        },
        SESSION,
        Duration::from_secs(10),
        SESSION + Duration::from_secs(2),
    )
}

/// A TCP relay to `endpoint` on a port of its own, and a guard that cuts it (listener and
/// connections) when dropped. A server's session goes through one, so that a kill can cut
/// that session as the death of the server's process would: ZooKeeper then keeps the
/// session, and its nodes, until it expires. (A client dropped in a live process closes its
/// session instead, and the nodes go at once.)
async fn relay(endpoint: &str) -> (String, DropGuard) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let cut = CancellationToken::new();
    let (endpoint, cut_listener) = (endpoint.to_owned(), cut.clone());
    tokio::spawn(async move {
        loop {
            // Biased: once cut, nothing more is accepted or forwarded, even bytes already
            // waiting.
            let mut inbound = tokio::select! {
                biased;
                () = cut_listener.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((inbound, _)) => inbound,
                    Err(_) => continue,
                },
            };
            let (endpoint, cut) = (endpoint.clone(), cut_listener.clone());
            tokio::spawn(async move {
                let Ok(mut outbound) = TcpStream::connect(&endpoint).await else {
                    return;
                };
                tokio::select! {
                    biased;
                    () = cut.cancelled() => {}
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                }
            });
        }
    });
    (address, cut.drop_guard())
}

#[tokio::test]
async fn three_servers_each_get_a_share() {
    scenarios::three_servers_each_get_a_share(namespace("share").await).await;
}

#[tokio::test]
async fn kill_under_load_loses_no_idempotent_call() {
    scenarios::kill_under_load_loses_no_idempotent_call(namespace("kill").await).await;
}

#[tokio::test]
async fn non_idempotent_call_is_never_replayed_and_names_its_endpoint() {
    let ns = namespace("non-idempotent").await;
    scenarios::non_idempotent_call_is_never_replayed_and_names_its_endpoint(ns).await;
}

#[tokio::test]
async fn rolling_restart_under_load_fails_no_call() {
    scenarios::rolling_restart_under_load_fails_no_call(namespace("rolling").await).await;
}

#[tokio::test]
async fn twenty_hosts_registering_at_once_all_appear() {
    scenarios::hosts_registering_at_once_all_appear(namespace("burst").await, 20).await;
}

#[tokio::test]
async fn a_dead_hosts_route_goes_and_takes_no_live_record_with_it() {
    let ns = namespace("expiry").await;
    scenarios::a_dead_hosts_route_goes_and_takes_no_live_record_with_it(ns).await;
}

#[tokio::test]
async fn no_endpoint_is_a_clear_error() {
    scenarios::no_endpoint_is_a_clear_error(namespace("empty").await).await;
}

/// A ZooKeeper of this test's own, stopped by PID when dropped.
struct PrivateZooKeeper {
    child: Child,
    port: u16,
    data: std::path::PathBuf,
}

impl PrivateZooKeeper {
    fn start(port: u16, data: &std::path::Path) -> Self {
        Self {
            child: Self::spawn(port, data),
            port,
            data: data.to_path_buf(),
        }
    }

    fn spawn(port: u16, data: &std::path::Path) -> Child {
        let classpath = std::env::var("WIRECALL_ZOOKEEPER_CLASSPATH")
            .unwrap_or_else(|_| "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar".to_owned());
        Command::new("java")
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
            .unwrap_or_else(|err| panic!("cannot start ZooKeeper (install zookeeper): {err}"))
    }

    fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl RegistryServer for PrivateZooKeeper {
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn restart(&mut self) {
        self.child = Self::spawn(self.port, &self.data);
    }
}

impl Drop for PrivateZooKeeper {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test]
async fn registry_outage_keeps_calls_flowing_and_registrations_come_back() {
    let dir = std::env::temp_dir().join(format!("wirecall-zk-outage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut zookeeper = PrivateZooKeeper::start(free_port(), &dir);
    let ns = namespace_at(&zookeeper.endpoint(), "outage").await;
    scenarios::registry_outage_keeps_calls_flowing_and_registrations_come_back(ns, &mut zookeeper)
        .await;
    drop(zookeeper);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn after_a_session_expiry_the_server_registers_again() {
    let dir = std::env::temp_dir().join(format!("wirecall-zk-expiry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port = free_port();
    let mut zookeeper = PrivateZooKeeper::start(port, &dir.join("first"));
    let endpoint = zookeeper.endpoint();
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
