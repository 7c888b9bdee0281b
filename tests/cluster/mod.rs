//! A small fleet of servers registered in a registry, and (in [`scenarios`]) the discovery
//! behaviours that run against every back-end (`tests/discovery.rs`: static;
//! `tests/discovery_etcd.rs`: etcd; `tests/discovery_zookeeper.rs`: ZooKeeper).
#![allow(dead_code)]

pub mod scenarios;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use wirecall::discovery::{Backend, Balance, Registration, Registry, RegistryError, WatchEvent};
use wirecall::{Channel, RunningServer, Server};

/// Each server answers with its own name, so a caller can tell who served a call.
#[wirecall::service(name = "Cluster")]
pub trait Cluster {
    /// Who served the call (safe to run twice).
    #[idempotent]
    async fn whoami(&self, delay_ms: u64) -> String;
    /// Notes call `id` in the server's ledger, then answers after `delay_ms` (not
    /// idempotent: running it twice notes it twice).
    async fn record(&self, id: u64, delay_ms: u64) -> String;
}

/// The ids of the `record` calls a set of servers ran, in order: a call replayed shows up
/// twice.
#[derive(Clone, Default)]
pub struct Ledger(Arc<Mutex<Vec<u64>>>);

impl Ledger {
    pub fn ran(&self) -> Vec<u64> {
        self.0.lock().unwrap().clone()
    }

    /// How many times call `id` ran.
    pub fn times(&self, id: u64) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|&&ran| ran == id)
            .count()
    }

    /// The ids that ran more than once.
    pub fn replayed(&self) -> Vec<u64> {
        let mut ran = self.ran();
        ran.sort_unstable();
        let mut replayed: Vec<u64> = ran
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        replayed.dedup();
        replayed
    }
}

#[derive(Clone)]
pub struct Node {
    pub name: String,
    pub ledger: Ledger,
}

impl Cluster for Node {
    async fn whoami(&self, delay_ms: u64) -> String {
        if delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        }
        self.name.clone()
    }

    async fn record(&self, id: u64, delay_ms: u64) -> String {
        self.ledger.0.lock().unwrap().push(id);
        if delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        }
        self.name.clone()
    }
}

/// Starts a server named `name` registered in `registry` with a lease of `ttl`.
pub async fn start_node(registry: &Registry, name: &str, ttl: Duration) -> RunningServer {
    start_node_with_ledger(registry, name, ttl, Ledger::default()).await
}

/// Like [`start_node`], noting the `record` calls it runs in `ledger`.
pub async fn start_node_with_ledger(
    registry: &Registry,
    name: &str,
    ttl: Duration,
    ledger: Ledger,
) -> RunningServer {
    Server::builder()
        .serve(ClusterServer::new(Node {
            name: name.to_owned(),
            ledger,
        }))
        .register(
            registry.clone(),
            Registration::bound_address().ttl(ttl).version("test"),
        )
        .drain_delay(Duration::from_millis(300))
        .shutdown_grace_period(Duration::from_secs(5))
        .bind("127.0.0.1:0")
        .await
        .expect("bind a test server")
}

/// A balanced channel over the cluster with a 5 s deadline, and a client over it.
pub async fn client(registry: &Registry, balance: Balance) -> (ClusterClient, Channel) {
    let channel = Channel::balanced()
        .balance(balance)
        .channel(Channel::builder().timeout(Duration::from_secs(5)))
        .probe_backoff(Duration::from_millis(50), Duration::from_millis(500))
        .discover(registry, ClusterClient::SERVICE_NAME)
        .await
        .expect("discover the cluster");
    (ClusterClient::new(channel.clone()), channel)
}

/// Waits until `channel` knows exactly `n` endpoints.
pub async fn wait_for_endpoints(channel: &Channel, n: usize, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let known = channel.endpoints().len();
        if known == n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the client knows {known} endpoints, not {n}, after {within:?}: {:?}",
            channel.endpoints()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Calls `whoami` `n` times, 8 at a time, and counts the answers per server.
pub async fn shares(client: &ClusterClient, n: usize) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    use futures::StreamExt;
    let mut calls = futures::stream::iter(0..n)
        .map(|_| {
            let client = client.clone();
            async move { client.whoami(1).await }
        })
        .buffer_unordered(8);
    while let Some(answer) = calls.next().await {
        *counts.entry(answer.expect("a balanced call")).or_insert(0) += 1;
    }
    counts
}

/// Continuous load until `stop`: `whoami` (idempotent) and, if asked, `record` (not) calls
/// from 4 tasks, alternating; the `record` of worker `w`'s call `seq` has id [`load_id`]`(w,
/// seq)`. Returns a handle whose output is (successes, failures as text, each starting
/// `worker W, call SEQ:`).
pub fn load(
    client: ClusterClient,
    stop: Arc<AtomicBool>,
    include_non_idempotent: bool,
) -> tokio::task::JoinHandle<(u64, Vec<String>)> {
    tokio::spawn(async move {
        let workers: Vec<_> = (0..4u64)
            .map(|worker| {
                let client = client.clone();
                let stop = Arc::clone(&stop);
                tokio::spawn(async move {
                    let mut ok = 0u64;
                    let mut failed = Vec::new();
                    let mut seq = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        seq += 1;
                        let result = if include_non_idempotent && seq % 2 == 0 {
                            client.record(load_id(worker, seq), 0).await
                        } else {
                            client.whoami(2).await
                        };
                        match result {
                            Ok(_) => ok += 1,
                            Err(err) => failed.push(format!("worker {worker}, call {seq}: {err}")),
                        }
                    }
                    (ok, failed)
                })
            })
            .collect();
        let mut ok = 0;
        let mut failed = Vec::new();
        for worker in workers {
            let (o, f) = worker.await.expect("load worker");
            ok += o;
            failed.extend(f);
        }
        (ok, failed)
    })
}

/// The id of the `record` call `seq` of load worker `worker`.
pub fn load_id(worker: u64, seq: u64) -> u64 {
    (worker << 32) | seq
}

/// A back-end that refuses the first `n` registrations, like a registry that is still down
/// when the server starts.
#[derive(Clone)]
pub struct Flaky<B> {
    inner: B,
    refuse: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
}

impl<B> Flaky<B> {
    pub fn new(inner: B, refuse: u64) -> Self {
        Self {
            inner,
            refuse: Arc::new(AtomicU64::new(refuse)),
            refused: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }
}

impl<B: Backend> Backend for Flaky<B> {
    fn describe(&self) -> String {
        format!("flaky {}", self.inner.describe())
    }

    fn register<'a>(
        &'a self,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<i64, RegistryError>> {
        let left = self.refuse.load(Ordering::SeqCst);
        if left > 0 {
            self.refuse.store(left - 1, Ordering::SeqCst);
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Box::pin(async {
                Err(RegistryError::Unavailable {
                    registry: "flaky".to_owned(),
                    message: "connection refused".to_owned(),
                })
            });
        }
        self.inner.register(registration)
    }

    fn keep_alive(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        self.inner.keep_alive(lease)
    }

    fn deregister(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        self.inner.deregister(lease)
    }

    fn watch<'a>(
        &'a self,
        service: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchEvent, RegistryError>>, RegistryError>>
    {
        self.inner.watch(service)
    }
}

/// A loopback port free now, below Linux's ephemeral range (32768 and up): a registry stopped
/// and started again on its port must find it free, and a port from the ephemeral range can
/// meanwhile become the source port of some client's outgoing connection.
pub fn free_port() -> u16 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = u64::from(std::process::id()).wrapping_mul(2_654_435_761)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
    for _ in 0..1_000 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + (seed.wrapping_add(n.wrapping_mul(7_919)) % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between 20000 and 32000");
}
