//! The discovery cell: calls/s, p99 and client CPU per call through a balanced `Channel` over
//! three servers (static registry) against a direct `Channel` to one of them, in the same
//! run; then a series of `kill -9`s of a fourth server registered with a 1 s lease, each timed
//! from the kill to the first call that failed there and was retried elsewhere, to its
//! ejection, and to its record's expiry.
//!
//! Each server is a separate process (`wirecall-bench server`, wirecall, MessagePack); the
//! client runs here. The load is W2's shape: `get_user` calls, `in_flight` at a time, each a
//! task sharing one client. Each channel runs three rounds, alternating with the others; the
//! median round of each is reported.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::process::Child;
use wirecall::discovery::{Balance, EndpointStats, Registration, Registry, StaticRegistry};
use wirecall::{Channel, Codec};

use crate::load::{drive, load, spawn_server, Round};
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
    /// Client CPU per call through the direct channel, in microseconds (all of this
    /// process's threads; the servers are other processes).
    pub direct_cpu_us_per_call: f64,
    /// Client CPU per call through the balanced channel over three servers, in microseconds.
    pub discovered_cpu_us_per_call: f64,
    /// direct / discovered client CPU per call: the balanced channel's calls/s relative to
    /// the direct channel's when the client's CPU is the limit (servers on their own
    /// machines), rather than three server processes sharing this machine's cores.
    pub cpu_ratio: f64,
    /// Kills of a server under load (each a new process, registered with a 1 s lease).
    pub kills: usize,
    /// Per kill, from SIGKILL to the first call that failed on the killed server and was
    /// retried on another at once, in ms (kills with no call in flight there have none).
    pub kill_to_first_retry_ms: Percentiles,
    /// Per kill, from SIGKILL to the server's ejection from the balanced channel, in ms.
    pub kill_to_ejected_ms: Percentiles,
    /// Per kill, from SIGKILL to the server's record leaving the endpoint set (lease expiry),
    /// in ms.
    pub kill_to_deregistered_ms: Percentiles,
    /// Calls that failed during the kills (idempotent `get_user`: expected 0).
    pub failed_during_kills: u64,
    /// Calls made during the kills.
    pub calls_during_kills: u64,
}

/// p50, p99 and the largest of a series, and how many values it has.
#[derive(Debug, Default, Serialize)]
pub struct Percentiles {
    /// Values in the series.
    pub n: usize,
    /// Median.
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Percentiles {
    fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let rank = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        Self {
            n: values.len(),
            p50: rank(0.5),
            p99: rank(0.99),
            max: values[values.len() - 1],
        }
    }
}

impl std::fmt::Display for Percentiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.1} / p99 {:.1} / max {:.1} ms (n={})",
            self.p50, self.p99, self.max, self.n
        )
    }
}

/// Runs the cell `repeat` times and prints one JSON line per run and a summary.
pub async fn run(calls: usize, in_flight: usize, repeat: u32, kills: usize) -> BenchResult<()> {
    for _ in 0..repeat {
        let result = run_once(calls, in_flight, kills).await?;
        println!("{}", serde_json::to_string(&result)?);
        println!(
            "discovered/direct calls/s: {:.0} / {:.0} = {:.2} (balanced over the direct \
             channel's server alone: {:.2}; tower p2c + Buffer over the 3 servers: {:.2}); \
             p99 {:.0} us vs {:.0} us; client CPU per call {:.2} us vs {:.2} us: ratio {:.2}",
            result.discovered_calls_per_s,
            result.direct_calls_per_s,
            result.ratio,
            result.one_endpoint_ratio,
            result.tower_p2c_ratio,
            result.discovered_p99_us,
            result.direct_p99_us,
            result.discovered_cpu_us_per_call,
            result.direct_cpu_us_per_call,
            result.cpu_ratio,
        );
        println!(
            "{} kills -9 under load (1 s lease): to first retry {}; to ejected {}; to \
             deregistered {}; {} of {} calls failed",
            result.kills,
            result.kill_to_first_retry_ms,
            result.kill_to_ejected_ms,
            result.kill_to_deregistered_ms,
            result.failed_during_kills,
            result.calls_during_kills,
        );
        if result.failed_during_kills > 0 {
            return Err(format!(
                "{} calls failed during the kills",
                result.failed_during_kills
            )
            .into());
        }
    }
    Ok(())
}

async fn run_once(calls: usize, in_flight: usize, kills: usize) -> BenchResult<DiscoveryResult> {
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
    let balanced = Channel::balanced()
        .balance(Balance::PowerOfTwo)
        .channel(Channel::builder().codec(Codec::MessagePack))
        .eager(true)
        .discover(&registry, UserServiceClient::SERVICE_NAME)
        .await?;
    let discovered = UserServiceClient::new(balanced.clone());
    let alone = Registry::new(
        StaticRegistry::new().endpoint(UserServiceClient::SERVICE_NAME, servers[0].1.as_str()),
    );
    let one_endpoint = UserServiceClient::new(
        Channel::balanced()
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
    let mut rounds: [Vec<Round>; 4] = Default::default();
    for _ in 0..3 {
        rounds[0].push(load(&direct, calls, in_flight).await?);
        rounds[1].push(load(&discovered, calls, in_flight).await?);
        rounds[2].push(load(&one_endpoint, calls, in_flight).await?);
        rounds[3].push(load_tower(&tower_p2c, calls, in_flight).await?);
    }
    let [mut direct, mut discovered_round, one_endpoint, tower_round] = rounds.map(|mut runs| {
        runs.sort_by(|a, b| a.calls_per_s.total_cmp(&b.calls_per_s));
        runs.swap_remove(1)
    });
    let kills = kill_series(&registry, &balanced, &discovered, kills).await?;

    Ok(DiscoveryResult {
        calls,
        in_flight,
        direct_calls_per_s: direct.calls_per_s,
        direct_p99_us: direct.latencies.quantile_us(0.99).unwrap_or_default(),
        discovered_calls_per_s: discovered_round.calls_per_s,
        discovered_p99_us: discovered_round
            .latencies
            .quantile_us(0.99)
            .unwrap_or_default(),
        ratio: discovered_round.calls_per_s / direct.calls_per_s,
        one_endpoint_calls_per_s: one_endpoint.calls_per_s,
        one_endpoint_ratio: one_endpoint.calls_per_s / direct.calls_per_s,
        tower_p2c_calls_per_s: tower_round.calls_per_s,
        tower_p2c_ratio: tower_round.calls_per_s / direct.calls_per_s,
        direct_cpu_us_per_call: direct.cpu_us_per_call,
        discovered_cpu_us_per_call: discovered_round.cpu_us_per_call,
        cpu_ratio: direct.cpu_us_per_call / discovered_round.cpu_us_per_call,
        kills: kills.kills,
        kill_to_first_retry_ms: Percentiles::of(kills.first_retry_ms),
        kill_to_ejected_ms: Percentiles::of(kills.ejected_ms),
        kill_to_deregistered_ms: Percentiles::of(kills.deregistered_ms),
        failed_during_kills: kills.failed,
        calls_during_kills: kills.calls,
    })
}

/// What a series of kills measured.
struct Kills {
    kills: usize,
    first_retry_ms: Vec<f64>,
    ejected_ms: Vec<f64>,
    deregistered_ms: Vec<f64>,
    failed: u64,
    calls: u64,
}

/// Under continuous load through `discovered` (16 tasks calling the idempotent `get_user`),
/// `kills` times: starts a server registered in `registry` with a 1 s lease, waits until it
/// answers calls, kills it with SIGKILL (its lease is no longer renewed), and times the
/// kill's effects on `balanced`.
async fn kill_series(
    registry: &Registry,
    balanced: &Channel,
    discovered: &UserServiceClient,
    kills: usize,
) -> BenchResult<Kills> {
    const LEASE: Duration = Duration::from_secs(1);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let failed = Arc::new(AtomicU64::new(0));
    let made = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let (discovered, stop) = (discovered.clone(), Arc::clone(&stop));
            let (failed, made) = (Arc::clone(&failed), Arc::clone(&made));
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    made.fetch_add(1, Ordering::Relaxed);
                    if let Err(err) = discovered.get_user(fanly()).await {
                        failed.fetch_add(1, Ordering::Relaxed);
                        eprintln!("a call failed during the kills: {err}");
                    }
                }
            })
        })
        .collect();
    let mut series = Kills {
        kills,
        first_retry_ms: Vec::new(),
        ejected_ms: Vec::new(),
        deregistered_ms: Vec::new(),
        failed: 0,
        calls: 0,
    };
    let outcome = async {
        for kill in 0..kills {
            let (mut victim, address) = spawn_server().await?;
            let registered = registry.keep_registered(
                Registration::new(address.as_str())
                    .service(UserServiceClient::SERVICE_NAME)
                    .ttl(LEASE),
            );
            // In rotation once it has answered a few calls.
            let joined = Instant::now();
            while endpoint(balanced, &address).is_none_or(|e| e.calls < 10) {
                if joined.elapsed() > Duration::from_secs(10) {
                    return Err("a new server got no calls within 10 s".into());
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            // Kill at a different point of the lease each time (it is renewed every third of
            // its TTL), so the time to expiry covers the whole range.
            let phase = LEASE.mul_f64((kill as f64 * 0.37) % 1.0);
            tokio::time::sleep(phase).await;
            let failures_before = endpoint(balanced, &address).map_or(0, |e| e.failures);
            let killed = Instant::now();
            victim.start_kill()?;
            drop(registered);
            let (mut first_retry, mut ejected) = (None, None);
            let deregistered = loop {
                let elapsed_ms = killed.elapsed().as_secs_f64() * 1e3;
                match endpoint(balanced, &address) {
                    None => break elapsed_ms,
                    Some(e) => {
                        if first_retry.is_none() && e.failures > failures_before {
                            first_retry = Some(elapsed_ms);
                        }
                        if ejected.is_none() && e.ejected {
                            ejected = Some(elapsed_ms);
                        }
                    }
                }
                if killed.elapsed() > Duration::from_secs(10) {
                    return Err("a killed server's record did not expire within 10 s".into());
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
            };
            let _ = victim.wait().await;
            series.first_retry_ms.extend(first_retry);
            series
                .ejected_ms
                .push(ejected.ok_or("a killed server was never ejected")?);
            series.deregistered_ms.push(deregistered);
        }
        Ok::<_, crate::systems::BoxError>(())
    }
    .await;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await?;
    }
    outcome?;
    series.failed = failed.load(Ordering::Relaxed);
    series.calls = made.load(Ordering::Relaxed);
    Ok(series)
}

/// The balanced channel's view of the endpoint at `address`.
fn endpoint(balanced: &Channel, address: &str) -> Option<EndpointStats> {
    balanced
        .endpoints()
        .into_iter()
        .find(|e| e.address == address)
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
) -> BenchResult<Round> {
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
