//! The discovery cell: calls/s and p99 through a `BalancedChannel` over three servers
//! (static registry) against a direct `Channel` to one of them, in the same run, and the time
//! from `kill -9` of one server to the moment the balanced channel stops sending it calls.
//!
//! Each server is a separate process (`wirecall-bench server`, wirecall, MessagePack); the
//! client runs here. The load is W2's shape: `get_user` calls, `in_flight` at a time, each a
//! task sharing one client. Each channel runs three rounds, alternating with the others; the
//! median round of each is reported.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use wirecall::discovery::{Balance, BalancedChannel, Registry, StaticRegistry};
use wirecall::{Caller, Channel, Codec};

use crate::measure::Latencies;
use crate::model::fanly;
use crate::systems::wirecall::UserServiceClient;
use crate::systems::BenchResult;

/// What one run of the cell measured.
#[derive(Debug, Serialize)]
pub struct DiscoveryResult {
    /// Calls per run of each channel.
    pub calls: usize,
    /// Calls in flight at once.
    pub in_flight: usize,
    /// Direct channel to one server: calls/s.
    pub direct_calls_per_s: f64,
    /// Direct channel: p99 latency in microseconds.
    pub direct_p99_us: f64,
    /// Balanced channel over three servers: calls/s.
    pub discovered_calls_per_s: f64,
    /// Balanced channel: p99 latency in microseconds.
    pub discovered_p99_us: f64,
    /// discovered / direct calls/s.
    pub ratio: f64,
    /// A balanced channel over the direct channel's server alone: calls/s (the cost of the
    /// balanced channel itself, without the other processes).
    pub one_endpoint_calls_per_s: f64,
    /// one-endpoint balanced / direct calls/s.
    pub one_endpoint_ratio: f64,
    /// tower's power-of-two-choices balancer (`tower::balance::p2c` over the same three
    /// servers, pending-request load, behind a `Buffer` so that tasks can share it): calls/s.
    pub tower_p2c_calls_per_s: f64,
    /// tower p2c / direct calls/s.
    pub tower_p2c_ratio: f64,
    /// From SIGKILL of one server to its ejection from the balanced channel, in ms.
    pub kill_to_ejected_ms: f64,
    /// From SIGKILL to the first call that failed on the killed server (and was retried on
    /// another at once), in ms (`None`: no call was in flight there).
    pub kill_to_first_retry_ms: Option<f64>,
    /// Calls that failed during the kill (idempotent `get_user`: expected 0).
    pub failed_during_kill: u64,
}

/// Runs the cell `repeat` times and prints one JSON line per run and a summary.
pub async fn run(calls: usize, in_flight: usize, repeat: u32) -> BenchResult<()> {
    for _ in 0..repeat {
        let result = run_once(calls, in_flight).await?;
        println!("{}", serde_json::to_string(&result)?);
        println!(
            "discovered/direct calls/s: {:.0} / {:.0} = {:.2} (balanced over the direct \
             channel's server alone: {:.2}; tower p2c + Buffer over the 3 servers: {:.2}); \
             p99 {:.0} us vs {:.0} us; kill -9 to ejected {:.1} ms, to first retry {}; {} failed",
            result.discovered_calls_per_s,
            result.direct_calls_per_s,
            result.ratio,
            result.one_endpoint_ratio,
            result.tower_p2c_ratio,
            result.discovered_p99_us,
            result.direct_p99_us,
            result.kill_to_ejected_ms,
            result
                .kill_to_first_retry_ms
                .map_or("n/a".to_owned(), |ms| format!("{ms:.1} ms")),
            result.failed_during_kill
        );
        if result.failed_during_kill > 0 {
            return Err(
                format!("{} calls failed during the kill", result.failed_during_kill).into(),
            );
        }
    }
    Ok(())
}

async fn spawn_server() -> BenchResult<(Child, String)> {
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "server",
            "--system",
            "wirecall",
            "--codec",
            "msgpack",
            "--workload",
            "W2-1x256",
            "--lifetime-secs",
            "300",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("server stdout not captured")?;
    let addr = tokio::time::timeout(
        Duration::from_secs(30),
        BufReader::new(stdout).lines().next_line(),
    )
    .await
    .map_err(|_| "the server did not print its address in time")??
    .ok_or("the server exited before printing its address")?;
    Ok((child, addr.trim().to_owned()))
}

/// `calls` calls of `get_user`, `in_flight` at a time: (calls/s, latencies).
async fn load<C: Caller>(
    client: &UserServiceClient<C>,
    calls: usize,
    in_flight: usize,
) -> BenchResult<(f64, Latencies)> {
    let client = client.clone();
    drive(calls, in_flight, move || {
        let client = client.clone();
        async move {
            client
                .get_user(fanly())
                .await
                .map(drop)
                .map_err(|err| err.to_string())
        }
    })
    .await
}

/// Runs `call` `calls` times from `in_flight` tasks at once: (calls/s, latencies). The first
/// failed call fails the run.
async fn drive<F, Fut>(calls: usize, in_flight: usize, call: F) -> BenchResult<(f64, Latencies)>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let call = call.clone();
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut latencies = Latencies::with_capacity(calls / in_flight + 1);
                while next.fetch_add(1, Ordering::Relaxed) < calls as u64 {
                    let began = Instant::now();
                    call().await?;
                    latencies.record(began.elapsed());
                }
                Ok::<_, String>(latencies)
            })
        })
        .collect();
    let mut all = Latencies::with_capacity(calls);
    for task in tasks {
        all.extend(task.await??);
    }
    Ok((calls as f64 / started.elapsed().as_secs_f64(), all))
}

async fn run_once(calls: usize, in_flight: usize) -> BenchResult<DiscoveryResult> {
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(spawn_server().await?);
    }
    let direct = UserServiceClient::new(
        Channel::builder()
            .codec(Codec::MessagePack)
            .connect(servers[0].1.as_str())
            .await?,
    );
    let registry = Registry::new(
        servers
            .iter()
            .fold(StaticRegistry::new(), |registry, (_, addr)| {
                registry.endpoint(UserServiceClient::SERVICE_NAME, addr.as_str())
            }),
    );
    let balanced = BalancedChannel::builder()
        .balance(Balance::PowerOfTwo)
        .channel(Channel::builder().codec(Codec::MessagePack))
        .eager(true)
        .discover(&registry, UserServiceClient::SERVICE_NAME)
        .await?;
    let discovered = UserServiceClient::over(balanced.clone());
    let alone = Registry::new(
        StaticRegistry::new().endpoint(UserServiceClient::SERVICE_NAME, servers[0].1.as_str()),
    );
    let one_endpoint = UserServiceClient::over(
        BalancedChannel::builder()
            .channel(Channel::builder().codec(Codec::MessagePack))
            .eager(true)
            .discover(&alone, UserServiceClient::SERVICE_NAME)
            .await?,
    );

    // Warm each up, then measure them in turn, three rounds (so that noise from other work on
    // the machine lands on every channel alike), and keep each channel's median round.
    load(&direct, calls / 10 + 1, in_flight).await?;
    load(&discovered, calls / 10 + 1, in_flight).await?;
    load(&one_endpoint, calls / 10 + 1, in_flight).await?;
    let tower_p2c = tower_balancer(&servers).await?;
    load_tower(&tower_p2c, calls / 10 + 1, in_flight).await?;
    let mut rounds: [Vec<(f64, Latencies)>; 4] = Default::default();
    for _ in 0..3 {
        rounds[0].push(load(&direct, calls, in_flight).await?);
        rounds[1].push(load(&discovered, calls, in_flight).await?);
        rounds[2].push(load(&one_endpoint, calls, in_flight).await?);
        rounds[3].push(load_tower(&tower_p2c, calls, in_flight).await?);
    }
    let [direct_rounds, discovered_rounds, one_endpoint_rounds, tower_rounds] =
        rounds.map(|mut runs| {
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            runs.swap_remove(1)
        });
    let (direct_rate, mut direct_latencies) = direct_rounds;
    let (discovered_rate, mut discovered_latencies) = discovered_rounds;
    let (one_endpoint_rate, _) = one_endpoint_rounds;
    let (tower_rate, _) = tower_rounds;

    // kill -9 of one server under load.
    let failed = Arc::new(AtomicU64::new(0));
    let failovers_before: u64 = balanced.endpoints().iter().map(|e| e.failures).sum();
    let load_task = {
        let discovered = discovered.clone();
        let failed = Arc::clone(&failed);
        tokio::spawn(async move {
            let stop = Instant::now() + Duration::from_millis(1500);
            let workers: Vec<_> = (0..16)
                .map(|_| {
                    let discovered = discovered.clone();
                    let failed = Arc::clone(&failed);
                    tokio::spawn(async move {
                        while Instant::now() < stop {
                            if discovered.get_user(fanly()).await.is_err() {
                                failed.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            for worker in workers {
                let _ = worker.await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (mut victim, victim_addr) = servers.remove(2);
    let killed = Instant::now();
    victim.start_kill()?;
    let mut first_failover = None;
    let ejected = loop {
        let endpoints = balanced.endpoints();
        let failures: u64 = endpoints.iter().map(|e| e.failures).sum();
        if first_failover.is_none() && failures > failovers_before {
            first_failover = Some(killed.elapsed());
        }
        if endpoints
            .iter()
            .any(|e| e.address == victim_addr && e.ejected)
        {
            break killed.elapsed();
        }
        if killed.elapsed() > Duration::from_secs(10) {
            return Err("the killed server was not ejected within 10 s".into());
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    };
    load_task.await?;
    let _ = victim.wait().await;

    Ok(DiscoveryResult {
        calls,
        in_flight,
        direct_calls_per_s: direct_rate,
        direct_p99_us: direct_latencies.quantile_us(0.99).unwrap_or_default(),
        discovered_calls_per_s: discovered_rate,
        discovered_p99_us: discovered_latencies.quantile_us(0.99).unwrap_or_default(),
        ratio: discovered_rate / direct_rate,
        one_endpoint_calls_per_s: one_endpoint_rate,
        one_endpoint_ratio: one_endpoint_rate / direct_rate,
        tower_p2c_calls_per_s: tower_rate,
        tower_p2c_ratio: tower_rate / direct_rate,
        kill_to_ejected_ms: ejected.as_secs_f64() * 1e3,
        kill_to_first_retry_ms: first_failover.map(|d| d.as_secs_f64() * 1e3),
        failed_during_kill: failed.load(Ordering::Relaxed),
    })
}

/// One server as a tower `Service`, for tower's balancer.
#[derive(Clone)]
struct TowerEndpoint(UserServiceClient);

impl tower::Service<crate::model::UserModel> for TowerEndpoint {
    type Response = crate::model::UserModel;
    type Error = wirecall::Error;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, user: crate::model::UserModel) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move { client.get_user(user).await })
    }
}

type TowerBalancer = tower::buffer::Buffer<
    crate::model::UserModel,
    futures::future::BoxFuture<'static, Result<crate::model::UserModel, tower::BoxError>>,
>;

/// tower's p2c over the three servers (pending requests as the load), behind a `Buffer`:
/// what a shared, cloneable client needs, since tower services are driven through `&mut`.
async fn tower_balancer(servers: &[(Child, String)]) -> BenchResult<TowerBalancer> {
    let mut endpoints = Vec::new();
    for (_, addr) in servers {
        let channel = Channel::builder()
            .codec(Codec::MessagePack)
            .connect(addr.as_str())
            .await?;
        endpoints.push(tower::load::PendingRequests::new(
            TowerEndpoint(UserServiceClient::new(channel)),
            tower::load::CompleteOnResponse::default(),
        ));
    }
    let balance = tower::balance::p2c::Balance::new(tower::discover::ServiceList::new(endpoints));
    Ok(tower::buffer::Buffer::new(
        tower::util::BoxService::new(balance),
        1024,
    ))
}

/// [`load`] through tower's balancer.
async fn load_tower(
    balancer: &TowerBalancer,
    calls: usize,
    in_flight: usize,
) -> BenchResult<(f64, Latencies)> {
    use tower::Service as _;
    let balancer = balancer.clone();
    drive(calls, in_flight, move || {
        let mut service = balancer.clone();
        async move {
            futures::future::poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(|err| err.to_string())?;
            service
                .call(fanly())
                .await
                .map(drop)
                .map_err(|err| err.to_string())
        }
    })
    .await
}
