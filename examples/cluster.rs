//! A cluster of servers of one service, registered in a registry, and a client calling the
//! service by name. Midway one server is killed, then a replacement starts; per-endpoint call
//! counts are printed each second so you can watch balancing and failover.
//!
//! ```sh
//! cargo run --example cluster                                     # static registry, in-process
//! cargo run --example cluster --features etcd -- --registry etcd://127.0.0.1:2379
//! cargo run --example cluster --features zookeeper -- --registry zk://127.0.0.1:2181
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wirecall::discovery::{Balance, Registration, Registry, StaticRegistry};
use wirecall::{Channel, RunningServer, Server};

/// A service whose answer says which server ran the call.
#[wirecall::service]
pub trait Greeter {
    /// Greets `name`; safe to retry on another server.
    #[idempotent]
    async fn hello(&self, name: String) -> String;
}

struct Node(String);

impl Greeter for Node {
    async fn hello(&self, name: String) -> String {
        tokio::time::sleep(Duration::from_millis(1)).await;
        format!("hello {name}, from {}", self.0)
    }
}

/// Starts N servers registered in a registry, calls them by service name, kills one and
/// starts a replacement while printing per-endpoint call counts.
#[derive(clap::Parser)]
#[command(
    name = "cluster",
    override_usage = "cargo run --example cluster -- [OPTIONS]"
)]
struct Options {
    /// `static` (in-process, the default), `etcd://HOST:PORT` (needs `--features etcd`) or
    /// `zk://HOST:PORT` (needs `--features zookeeper`)
    #[arg(long, default_value = "static")]
    registry: String,
    /// How many servers to start
    #[arg(long, default_value_t = 3)]
    servers: usize,
    /// Seconds to run
    #[arg(long, default_value_t = 6)]
    seconds: u64,
    /// round-robin, weighted, p2c or hash
    #[arg(long, default_value = "p2c")]
    balance: String,
}

async fn connect(spec: &str) -> Result<Registry, Box<dyn std::error::Error>> {
    if spec == "static" {
        return Ok(Registry::new(StaticRegistry::new()));
    }
    if let Some(endpoint) = spec.strip_prefix("etcd://") {
        #[cfg(feature = "etcd")]
        return Ok(Registry::new(
            wirecall::discovery::Etcd::connect([endpoint]).await?,
        ));
        #[cfg(not(feature = "etcd"))]
        return Err(format!(
            "etcd {endpoint}: build with `--features etcd` to use the etcd back-end"
        )
        .into());
    }
    if let Some(cluster) = spec.strip_prefix("zk://") {
        #[cfg(feature = "zookeeper")]
        return Ok(Registry::new(wirecall::discovery::ZooKeeper::new(cluster)));
        #[cfg(not(feature = "zookeeper"))]
        return Err(format!(
            "zookeeper {cluster}: build with `--features zookeeper` to use the ZooKeeper back-end"
        )
        .into());
    }
    Err(
        format!("unknown registry {spec:?}: use `static`, `etcd://HOST:PORT` or `zk://HOST:PORT`")
            .into(),
    )
}

async fn start(registry: &Registry, name: String) -> Result<RunningServer, wirecall::Error> {
    Server::builder()
        .serve(GreeterServer::new(Node(name)))
        .register(
            registry.clone(),
            Registration::bound_address().ttl(Duration::from_secs(2)),
        )
        .drain_delay(Duration::from_millis(300))
        .bind("127.0.0.1:0")
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = <Options as clap::Parser>::parse();
    let balance = match options.balance.as_str() {
        "round-robin" => Balance::RoundRobin,
        "weighted" => Balance::Weighted,
        "p2c" => Balance::PowerOfTwo,
        "hash" => Balance::ConsistentHash,
        other => return Err(format!("unknown balancer {other:?}").into()),
    };
    let registry = connect(&options.registry).await?;
    println!("registry: {}", registry.describe());
    let mut servers = Vec::new();
    for i in 0..options.servers.max(2) {
        let server = start(&registry, format!("server-{i}")).await?;
        println!("server-{i} on {}", server.local_addr());
        servers.push(server);
    }

    let channel = Channel::balanced()
        .balance(balance)
        .channel(Channel::builder().timeout(Duration::from_secs(2)))
        .discover(&registry, GreeterClient::SERVICE_NAME)
        .await?;
    let client = GreeterClient::new(channel.clone());
    while channel.endpoints().len() < servers.len() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for worker in 0..4 {
        let (client, stop, ok, failed) = (client.clone(), stop.clone(), ok.clone(), failed.clone());
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match client.hello(format!("worker {worker}")).await {
                    Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                    Err(err) => {
                        eprintln!("call failed: {err}");
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }

    let mut next = options.servers.max(2);
    for second in 1..=options.seconds {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let counts: BTreeMap<String, String> = channel
            .endpoints()
            .into_iter()
            .map(|e| {
                let state = if e.ejected { " (ejected)" } else { "" };
                (e.address, format!("{}{state}", e.calls))
            })
            .collect();
        println!(
            "t={second}s ok={} failed={} per endpoint: {counts:?}",
            ok.load(Ordering::Relaxed),
            failed.load(Ordering::Relaxed)
        );
        if second == 2 {
            let victim = servers.remove(0);
            println!(
                "killing {} (no deregistration, like kill -9)",
                victim.local_addr()
            );
            victim.abort();
        }
        if second == 3 {
            let server = start(&registry, format!("server-{next}")).await?;
            println!("server-{next} started on {}", server.local_addr());
            next += 1;
            servers.push(server);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await?;
    }
    println!(
        "done: {} calls, {} failed",
        ok.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed)
    );
    for server in servers {
        server.shutdown().await;
    }
    if failed.load(Ordering::Relaxed) > 0 {
        return Err("some calls failed".into());
    }
    Ok(())
}
