//! Discovery against a real etcd (feature `etcd`). `.ci/run` installs etcd, starts one on a
//! loopback port, and runs `cargo test --features etcd --test discovery_etcd` with
//! `WIRECALL_ETCD=127.0.0.1:PORT`. These tests fail, never skip, when that variable is
//! missing or etcd does not answer. The behaviours every back-end shares are in
//! `tests/cluster/scenarios.rs`; this file adds etcd's own faults. The registry outage test
//! and the 3-member cluster test start etcd of their own from the `etcd` binary (or
//! `WIRECALL_ETCD_BIN`) so that they can stop it.
#![cfg(feature = "etcd")]

mod cluster;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use cluster::scenarios::{self, Namespace, RegistryServer};
use cluster::{client, free_port, shares, start_node, wait_for_endpoints};
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

/// A registry on the etcd at `endpoint`, under a prefix of this test's own.
async fn registry_at(endpoint: &str, test: &str) -> Registry {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("/wirecall-test/{test}-{}-{nanos}/", std::process::id());
    let registry = Registry::new(
        Etcd::connect_with_prefix([endpoint], &prefix)
            .await
            .unwrap_or_else(|err| panic!("etcd at {endpoint} unreachable: {err}")),
    );
    // Fail at once (not after a long wait) when etcd is not there.
    let mut probe = registry.watch("probe");
    tokio::time::timeout(Duration::from_secs(10), probe.ready())
        .await
        .unwrap_or_else(|_| panic!("etcd at {endpoint} did not answer within 10 s"));
    registry
}

/// A prefix of this test's own on the shared etcd.
async fn namespace(test: &str) -> Namespace {
    namespace_at(&etcd_endpoint(), test).await
}

/// A prefix of this test's own on the etcd at `endpoint`. etcd counts a lease's TTL in whole
/// seconds and checks expiry twice a second, so a dead host's record may outlive the TTL by
/// up to 1.5 s.
async fn namespace_at(endpoint: &str, test: &str) -> Namespace {
    Namespace::shared(
        registry_at(endpoint, test).await,
        TTL,
        Duration::from_secs(10),
        TTL + Duration::from_millis(1500),
    )
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

/// An etcd of this test's own in `dir`, stopped by PID when dropped.
struct PrivateEtcd {
    child: Child,
    endpoint: String,
    args: Vec<String>,
    dir: std::path::PathBuf,
}

impl PrivateEtcd {
    fn start(dir: &std::path::Path) -> Self {
        let endpoint = format!("127.0.0.1:{}", free_port());
        let peer = format!("127.0.0.1:{}", free_port());
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
            format!("http://{peer}"),
            "--initial-advertise-peer-urls".to_owned(),
            format!("http://{peer}"),
            "--initial-cluster".to_owned(),
            format!("outage=http://{peer}"),
        ];
        let child = Self::spawn(&args, dir);
        Self {
            child,
            endpoint,
            args,
            dir: dir.to_path_buf(),
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
}

impl RegistryServer for PrivateEtcd {
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn restart(&mut self) {
        self.child = Self::spawn(&self.args, &self.dir);
    }
}

impl Drop for PrivateEtcd {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn registry_outage_keeps_calls_flowing_and_registrations_come_back() {
    let dir = std::env::temp_dir().join(format!("wirecall-etcd-outage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut etcd = PrivateEtcd::start(&dir);
    let ns = namespace_at(&etcd.endpoint, "outage").await;
    scenarios::registry_outage_keeps_calls_flowing_and_registrations_come_back(ns, &mut etcd).await;
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
        let registry = Registry::new(Etcd::connect_with_prefix(&endpoints, prefix).await.unwrap());
        let mut probe = registry.watch("probe");
        // A cluster's first election waits for all three members to start, which a loaded
        // machine can stretch well past a single etcd's start.
        if tokio::time::timeout(Duration::from_secs(60), probe.ready())
            .await
            .is_err()
        {
            let log = std::fs::read_to_string(dir.join("etcd.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            panic!(
                "the 3-member cluster did not answer within 60 s; the members' log ends:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
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
