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
             channel's server alone: {:.2}); p99 {:.0} us vs {:.0} us; \
             kill -9 to ejected {:.1} ms, to first retry {}; {} failed",
            result.discovered_calls_per_s,
            result.direct_calls_per_s,
            result.ratio,
            result.one_endpoint_ratio,
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
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let client = client.clone();
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut latencies = Latencies::with_capacity(calls / in_flight + 1);
                while next.fetch_add(1, Ordering::Relaxed) < calls as u64 {
                    let call = Instant::now();
                    client.get_user(fanly()).await?;
                    latencies.record(call.elapsed());
                }
                Ok::<_, wirecall::Error>(latencies)
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
    let mut rounds: [Vec<(f64, Latencies)>; 3] = Default::default();
    for _ in 0..3 {
        rounds[0].push(load(&direct, calls, in_flight).await?);
        rounds[1].push(load(&discovered, calls, in_flight).await?);
        rounds[2].push(load(&one_endpoint, calls, in_flight).await?);
    }
    let [direct_rounds, discovered_rounds, one_endpoint_rounds] = rounds.map(|mut runs| {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        runs.swap_remove(1)
    });
    let (direct_rate, mut direct_latencies) = direct_rounds;
    let (discovered_rate, mut discovered_latencies) = discovered_rounds;
    let (one_endpoint_rate, _) = one_endpoint_rounds;

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
        kill_to_ejected_ms: ejected.as_secs_f64() * 1e3,
        kill_to_first_retry_ms: first_failover.map(|d| d.as_secs_f64() * 1e3),
        failed_during_kill: failed.load(Ordering::Relaxed),
    })
}
