//! The fleet cell: a balanced client over three servers, one of which hangs. Eight callers
//! make `get_user` calls (an `#[idempotent]` method) at about 500 calls/s in all for a calm
//! stretch; then the first server's process is stopped with SIGSTOP (its kernel still
//! acknowledges, the application is silent) for the hang, then resumed. wirecall's balanced
//! `Channel` and tonic's `Channel::balance_list` run the same load in the same run, each at
//! its defaults, as a user would build them. A third row runs wirecall with `get([user])`, a
//! method that is not `#[idempotent]`: nothing may send it twice, so the calls caught on the
//! hung server fail, and the row says how many and how fast.
//!
//! Each call is counted in the phase it started in, when it ends: a call stuck on the hung
//! server shows in the hang's latencies with however long it waited (tonic's calls have no
//! deadline by default: they wait until the server is resumed).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::process::Command;
use wirecall::discovery::{Registry, StaticRegistry};
use wirecall::Channel;

use crate::load::spawn_server_of;
use crate::measure::Latencies;
use crate::model::fanly;
use crate::systems::wirecall::UserServiceClient;
use crate::systems::BenchResult;

/// Callers, each making one call every [`PACE`].
const CALLERS: usize = 8;
/// 8 callers x 62.5 calls/s: about 500 calls/s.
const PACE: Duration = Duration::from_millis(16);
/// How long the callers may take to finish once the server is resumed.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// What one system did before and during the hang.
#[derive(Debug, Serialize)]
pub struct FleetResult {
    /// `wirecall`, `wirecall-not-idempotent` or `tonic`.
    pub system: &'static str,
    /// Seconds of calm before the hang.
    pub before_secs: f64,
    /// Seconds the server was stopped.
    pub hang_secs: f64,
    /// Calls answered per second, before and during the hang.
    pub calls_per_s: [f64; 2],
    /// p99 latency in ms, before and during.
    pub p99_ms: [f64; 2],
    /// The slowest call in ms, before and during.
    pub max_ms: [f64; 2],
    /// Calls that failed, before and during.
    pub failed: [u64; 2],
    /// Hedges sent (copies of slow calls on another endpoint), before and during the hang:
    /// the extra calls the protection costs (wirecall; tonic does not hedge).
    pub hedges: [u64; 2],
    /// The slowest failed call in ms (0 without failures).
    pub slowest_failure_ms: f64,
    /// Calls started after the hang's first second that took over 1 s.
    pub over_1s_after_first_second: u64,
    /// during / before calls/s.
    pub calls_ratio: f64,
    /// during / before p99.
    pub p99_ratio: f64,
    /// The first failure's message, if any.
    pub first_failure: Option<String>,
}

/// One call: when it started (from the start of the run), how long it took, whether it
/// failed and why.
struct Ended {
    started: Duration,
    took: Duration,
    failure: Option<String>,
}

/// Runs the cell for each system in `systems` (`wirecall`, `tonic`), one after the other,
/// and prints one JSON line per system and a table of them.
pub async fn run(systems: Vec<String>, before: Duration, hang: Duration) -> BenchResult<()> {
    let mut results = Vec::new();
    for system in systems {
        let result = match system.as_str() {
            "wirecall" => one_run("wirecall", before, hang).await?,
            "wirecall-not-idempotent" => one_run("wirecall-not-idempotent", before, hang).await?,
            "tonic" => one_run("tonic", before, hang).await?,
            other => {
                return Err(format!(
                    "the fleet cell runs wirecall, wirecall-not-idempotent or tonic, not {other}"
                )
                .into())
            }
        };
        println!("{}", serde_json::to_string(&result)?);
        results.push(result);
    }
    println!();
    println!(
        "| system | calls/s before | during | ratio | p99 before | during | ratio | max during | failed | slowest failure | over 1 s after the first second | hedges before / during |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        println!(
            "| {} | {:.0} | {:.0} | {:.2}x | {:.1} ms | {:.1} ms | {:.2}x | {:.0} ms | {} | {:.0} ms | {} | {} / {} |",
            r.system,
            r.calls_per_s[0],
            r.calls_per_s[1],
            r.calls_ratio,
            r.p99_ms[0],
            r.p99_ms[1],
            r.p99_ratio,
            r.max_ms[1],
            r.failed[0] + r.failed[1],
            r.slowest_failure_ms,
            r.over_1s_after_first_second,
            r.hedges[0],
            r.hedges[1],
        );
    }
    Ok(())
}

/// Three servers of `system`, its balanced client over them, the load, the hang.
async fn one_run(
    system: &'static str,
    before: Duration,
    hang: Duration,
) -> BenchResult<FleetResult> {
    let (server, codec) = match system {
        "tonic" => ("tonic", "protobuf"),
        _ => ("wirecall", "msgpack"),
    };
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(spawn_server_of(server, codec).await?);
    }
    let addrs: Vec<String> = servers.iter().map(|(_, addr)| addr.clone()).collect();
    let caller = Caller::new(system, &addrs).await?;

    let run_started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(Mutex::new(Vec::new()));
    let callers: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (caller, stop, ended) = (caller.clone(), Arc::clone(&stop), Arc::clone(&ended));
            tokio::spawn(async move {
                let mut pace = tokio::time::interval(PACE);
                pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
                while !stop.load(Ordering::Relaxed) {
                    pace.tick().await;
                    let started = run_started.elapsed();
                    let began = Instant::now();
                    let failure = caller.call().await.err();
                    let call = Ended {
                        started,
                        took: began.elapsed(),
                        failure,
                    };
                    ended.lock().unwrap_or_else(|p| p.into_inner()).push(call);
                }
            })
        })
        .collect();

    tokio::time::sleep(before).await;
    let hedges_before = caller.hedges();
    let hung = &servers[0].0;
    let pid = hung.id().ok_or("the first server has already exited")?;
    signal(pid, "STOP").await?;
    let hang_started = run_started.elapsed();
    tokio::time::sleep(hang).await;
    let hang_ended = run_started.elapsed();
    let hedges_during = caller.hedges() - hedges_before;
    stop.store(true, Ordering::Relaxed);
    signal(pid, "CONT").await?;
    for caller in callers {
        tokio::time::timeout(DRAIN_LIMIT, caller)
            .await
            .map_err(|_| "a caller was still waiting 30 s after the server resumed")??;
    }
    drop(servers);

    let calls = std::mem::take(&mut *ended.lock().unwrap_or_else(|p| p.into_inner()));
    let phases = [(Duration::ZERO, hang_started), (hang_started, hang_ended)];
    let mut calls_per_s = [0.0; 2];
    let mut p99_ms = [0.0; 2];
    let mut max_ms = [0.0; 2];
    let mut failed = [0; 2];
    for (phase, (from, to)) in phases.into_iter().enumerate() {
        let mut latencies = Latencies::with_capacity(calls.len());
        for call in calls.iter().filter(|c| c.started >= from && c.started < to) {
            match call.failure {
                None => latencies.record(call.took),
                Some(_) => failed[phase] += 1,
            }
        }
        calls_per_s[phase] = latencies.len() as f64 / (to - from).as_secs_f64();
        p99_ms[phase] = latencies.quantile_us(0.99).unwrap_or_default() / 1e3;
        max_ms[phase] = latencies.quantile_us(1.0).unwrap_or_default() / 1e3;
    }
    let over_1s_after_first_second = calls
        .iter()
        .filter(|c| c.started >= hang_started + Duration::from_secs(1) && c.started < hang_ended)
        .filter(|c| c.took > Duration::from_secs(1))
        .count() as u64;
    Ok(FleetResult {
        system,
        before_secs: hang_started.as_secs_f64(),
        hang_secs: (hang_ended - hang_started).as_secs_f64(),
        calls_ratio: calls_per_s[1] / calls_per_s[0].max(f64::MIN_POSITIVE),
        p99_ratio: p99_ms[1] / p99_ms[0].max(f64::MIN_POSITIVE),
        calls_per_s,
        p99_ms,
        max_ms,
        failed,
        over_1s_after_first_second,
        hedges: [hedges_before, hedges_during],
        slowest_failure_ms: calls
            .iter()
            .filter(|c| c.failure.is_some())
            .map(|c| c.took.as_secs_f64() * 1e3)
            .fold(0.0, f64::max),
        first_failure: calls.into_iter().find_map(|c| c.failure),
    })
}

/// A system's balanced client over the three servers, at its defaults.
#[derive(Clone)]
enum Caller {
    Wirecall(UserServiceClient, Channel),
    /// `get([user])`: not `#[idempotent]`.
    WirecallNotIdempotent(UserServiceClient, Channel),
    Tonic(crate::systems::tonic::TonicUsers),
}

impl Caller {
    async fn new(system: &str, addrs: &[String]) -> BenchResult<Self> {
        if system == "tonic" {
            return Ok(Caller::Tonic(crate::systems::tonic::balanced_users(addrs)?));
        }
        let mut registry = StaticRegistry::new();
        for addr in addrs {
            registry = registry.endpoint("UserService", addr.clone());
        }
        let channel = Channel::balanced()
            .discover(&Registry::new(registry), "UserService")
            .await?;
        let users = UserServiceClient::new(channel.clone());
        Ok(if system == "wirecall-not-idempotent" {
            Caller::WirecallNotIdempotent(users, channel)
        } else {
            Caller::Wirecall(users, channel)
        })
    }

    /// The hedges the channel has sent so far.
    fn hedges(&self) -> u64 {
        match self {
            Caller::Wirecall(_, channel) | Caller::WirecallNotIdempotent(_, channel) => {
                channel.endpoints().iter().map(|e| e.hedges).sum()
            }
            Caller::Tonic(_) => 0,
        }
    }

    async fn call(&self) -> Result<(), String> {
        match self {
            Caller::Wirecall(users, _) => users
                .get_user(fanly())
                .await
                .map(drop)
                .map_err(|err| err.to_string()),
            Caller::WirecallNotIdempotent(users, _) => users
                .get(vec![fanly()])
                .await
                .map(drop)
                .map_err(|err| err.to_string()),
            Caller::Tonic(users) => users
                .clone()
                .get_user(fanly())
                .await
                .map(drop)
                .map_err(|status| status.to_string()),
        }
    }
}

/// Sends SIGSTOP or SIGCONT (`name`) to `pid` with `kill`.
async fn signal(pid: u32, name: &str) -> BenchResult<()> {
    let status = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .await?;
    if !status.success() {
        return Err(format!("kill -{name} {pid} failed ({status})").into());
    }
    Ok(())
}
