//! The load both comparison cells (`discovery`, `policy`) put on wirecall: a `wirecall-bench
//! server` process to call (the fleet cell's servers too), and `get_user` calls from tasks sharing one client, measured as
//! calls/s, latencies and this process's CPU per call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::measure::{process_cpu_ns, Latencies};
use crate::model::fanly;
use crate::systems::wirecall::UserServiceClient;
use crate::systems::BenchResult;

/// One measured round of one channel.
pub(crate) struct Round {
    pub(crate) calls_per_s: f64,
    pub(crate) latencies: Latencies,
    pub(crate) cpu_us_per_call: f64,
}

/// A wirecall MessagePack server process, and its address.
pub(crate) async fn spawn_server() -> BenchResult<(Child, String)> {
    spawn_server_of("wirecall", "msgpack").await
}

/// A server process of `system` in `codec` (serving W2's calls), and its address.
pub(crate) async fn spawn_server_of(system: &str, codec: &str) -> BenchResult<(Child, String)> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["server", "--system", system, "--codec", codec])
        .args(["--workload", "W2-1x256", "--lifetime-secs", "300"])
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
pub(crate) async fn load(
    client: &UserServiceClient,
    calls: usize,
    in_flight: usize,
) -> BenchResult<Round> {
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

/// Runs `call` `calls` times from `in_flight` tasks at once. The first failed call fails the
/// run.
pub(crate) async fn drive<F, Fut>(calls: usize, in_flight: usize, call: F) -> BenchResult<Round>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let cpu_before = process_cpu_ns().ok_or("/proc/self/task/*/schedstat is not readable")?;
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
    let elapsed = started.elapsed();
    let cpu = process_cpu_ns().unwrap_or(cpu_before) - cpu_before;
    Ok(Round {
        calls_per_s: calls as f64 / elapsed.as_secs_f64(),
        latencies: all,
        cpu_us_per_call: cpu as f64 / 1e3 / calls as f64,
    })
}
