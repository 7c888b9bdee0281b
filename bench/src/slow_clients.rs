//! The `slow-clients` cell: the gateway at its defaults (the `gateway` system's server
//! process: wirecall's server with the gateway in front) against connections that send half a
//! request head and stall. It reports when the gateway closes each of them (all within the
//! header timeout?), the gateway process's open descriptors before, during and after
//! (`/proc/PID/fd`), and the p50 and p99 of sequential 1-object calls on a keep-alive
//! connection alone before, beside the stalled connections, and alone after.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use wirecall_gateway::DEFAULT_HEADER_READ_TIMEOUT;

use crate::measure::Latencies;
use crate::model::fanly;
use crate::systems::gateway::{connect, post, send, GatewayConn};
use crate::systems::BenchResult;

/// Half of a request head: the request line and part of the headers, no blank line.
const HALF_HEAD: &[u8] =
    b"POST /UserService/get_user HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl";

/// Connection attempts in progress at once while opening the stalled connections.
const CONNECT_FAN_OUT: usize = 64;

/// How long past the header timeout a stalled connection may stay open before the cell
/// gives up on it (and reports it as not closed).
const GIVE_UP_AFTER: Duration = Duration::from_secs(20);

/// Untimed calls before each run's first phase.
const WARMUP_CALLS: usize = 1_000;

/// Runs the cell `repeat` times, each against a fresh server process, and prints a report.
pub async fn run(stallers: usize, calls: usize, repeat: u32) -> BenchResult<()> {
    let exe = std::env::current_exe()?;
    println!(
        "slow clients: {stallers} connections each sending half a request head, against the \
         gateway at its defaults (header timeout {DEFAULT_HEADER_READ_TIMEOUT:?}); {calls} \
         sequential get_user calls on one keep-alive connection per phase"
    );
    for run in 1..=repeat.max(1) {
        let outcome = run_once(&exe, stallers, calls).await?;
        println!("run {run}: {outcome}");
        println!("{}", outcome.json());
    }
    Ok(())
}

/// What one run measured.
#[derive(Debug)]
struct Outcome {
    stallers: usize,
    closed: usize,
    closed_within_timeout: usize,
    answered: usize,
    min_close: Duration,
    max_close: Duration,
    max_close_after_connect: Duration,
    max_connect: Duration,
    fds_before: usize,
    fds_during_max: usize,
    fds_after: usize,
    alone: [Option<f64>; 2],
    beside: [Option<f64>; 2],
    alone_after: [Option<f64>; 2],
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.0}"));
        write!(
            f,
            "{} of {} stalled connections closed by the gateway ({} within the header \
             timeout of the connect's completion, {} got an answer first), {:.2}-{:.2} s \
             after the connect began ({:.2} s at most after it completed; the slowest connect \
             {:.3} s); gateway descriptors \
             {} before, {} at most during, {} after; calls p50/p99 us: alone {}/{}, beside \
             the stalled connections {}/{} (p99 ratio {}), alone after {}/{}",
            self.closed,
            self.stallers,
            self.closed_within_timeout,
            self.answered,
            self.min_close.as_secs_f64(),
            self.max_close.as_secs_f64(),
            self.max_close_after_connect.as_secs_f64(),
            self.max_connect.as_secs_f64(),
            self.fds_before,
            self.fds_during_max,
            self.fds_after,
            us(self.alone[0]),
            us(self.alone[1]),
            us(self.beside[0]),
            us(self.beside[1]),
            match (self.beside[1], self.alone[1]) {
                (Some(b), Some(a)) if a > 0.0 => format!("{:.2}", b / a),
                _ => "-".to_owned(),
            },
            us(self.alone_after[0]),
            us(self.alone_after[1]),
        )
    }
}

impl Outcome {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "cell": "slow-clients",
            "stallers": self.stallers,
            "closed": self.closed,
            "closed_within_header_timeout": self.closed_within_timeout,
            "answered_before_close": self.answered,
            "min_close_s": self.min_close.as_secs_f64(),
            "max_close_s": self.max_close.as_secs_f64(),
            "max_close_after_connect_s": self.max_close_after_connect.as_secs_f64(),
            "max_connect_s": self.max_connect.as_secs_f64(),
            "fds_before": self.fds_before,
            "fds_during_max": self.fds_during_max,
            "fds_after": self.fds_after,
            "alone_p50_us": self.alone[0], "alone_p99_us": self.alone[1],
            "beside_p50_us": self.beside[0], "beside_p99_us": self.beside[1],
            "alone_after_p50_us": self.alone_after[0], "alone_after_p99_us": self.alone_after[1],
        })
    }
}

/// The lines the server process prints: its address, then its report when stdin closes.
type ServerLines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// The gateway's server process (killed if dropped), its output and its address.
async fn start_gateway(exe: &Path) -> BenchResult<(Child, ServerLines, std::net::SocketAddr)> {
    let mut child = Command::new(exe)
        .args(["server", "--system", "gateway", "--codec", "json"])
        .args(["--workload", "W1-1obj", "--lifetime-secs", "300"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("server stdout not captured")?;
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(15), lines.next_line())
        .await
        .map_err(|_| "the gateway did not print its address in time")??
        .ok_or("the gateway exited before printing its address")?;
    Ok((child, lines, line.trim().parse()?))
}

/// The open descriptors of process `pid`.
fn descriptors(pid: u32) -> BenchResult<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
}

/// `calls` sequential get_user calls on `conn`: their p50 and p99 in microseconds.
async fn timed_calls(
    conn: &mut GatewayConn,
    addr: std::net::SocketAddr,
    calls: usize,
) -> BenchResult<[Option<f64>; 2]> {
    let body = bytes::Bytes::from(serde_json::json!({ "user": fanly() }).to_string());
    let mut latencies = Latencies::with_capacity(calls);
    for _ in 0..calls {
        let request = post(addr, "get_user", body.clone())?;
        let start = Instant::now();
        send(conn, request).await?;
        latencies.record(start.elapsed());
    }
    Ok([latencies.quantile_us(0.50), latencies.quantile_us(0.99)])
}

/// How one stalled connection went.
struct Stalled {
    /// From before the connect until it completed.
    connect: Duration,
    /// From before the connect until the gateway closed the connection.
    closed: Duration,
    /// Whether any answer came before the close.
    answered: bool,
}

/// Opens a connection, sends [`HALF_HEAD`] and waits until the gateway closes it.
async fn stall(addr: std::net::SocketAddr, connecting: Arc<Semaphore>) -> BenchResult<Stalled> {
    let permit = connecting.acquire_owned().await?;
    let start = Instant::now();
    let mut stream = TcpStream::connect(addr).await?;
    let connect = start.elapsed();
    stream.write_all(HALF_HEAD).await?;
    drop(permit);
    let mut answered = false;
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => {
                return Ok(Stalled {
                    connect,
                    closed: start.elapsed(),
                    answered,
                })
            }
            Ok(_) => answered = true,
        }
    }
}

async fn run_once(exe: &Path, stallers: usize, calls: usize) -> BenchResult<Outcome> {
    let (mut child, mut lines, addr) = start_gateway(exe).await?;
    let pid = child.id().ok_or("the gateway process has no id")?;
    let mut conn = connect(addr).await?;
    timed_calls(&mut conn, addr, WARMUP_CALLS).await?;
    let alone = timed_calls(&mut conn, addr, calls).await?;
    let fds_before = descriptors(pid)?;

    // The stalled connections: each opened and half-sent, `CONNECT_FAN_OUT` at a time.
    let connecting = Arc::new(Semaphore::new(CONNECT_FAN_OUT));
    let mut tasks = JoinSet::new();
    for _ in 0..stallers {
        tasks.spawn(stall(addr, Arc::clone(&connecting)));
    }
    // Let the connections reach the gateway before the calls beside them start.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut fds_during_max = descriptors(pid)?;
    let beside = timed_calls(&mut conn, addr, calls).await?;
    fds_during_max = fds_during_max.max(descriptors(pid)?);

    let mut closes = Vec::with_capacity(stallers);
    let mut answered = 0;
    let mut max_connect = Duration::ZERO;
    let mut closes_after_connect = Vec::with_capacity(stallers);
    let deadline = tokio::time::sleep(DEFAULT_HEADER_READ_TIMEOUT + GIVE_UP_AFTER);
    tokio::pin!(deadline);
    let mut sample = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(joined) => {
                    let stalled = joined??;
                    answered += usize::from(stalled.answered);
                    max_connect = max_connect.max(stalled.connect);
                    closes.push(stalled.closed);
                    closes_after_connect.push(stalled.closed.saturating_sub(stalled.connect));
                }
                None => break,
            },
            _ = sample.tick() => {
                fds_during_max = fds_during_max.max(descriptors(pid)?);
            }
            () = &mut deadline => break,
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fds_after = descriptors(pid)?;
    // The keep-alive connection was idle while the stalled ones closed: a fresh one.
    let mut conn = connect(addr).await?;
    let alone_after = timed_calls(&mut conn, addr, calls).await?;

    // Closing its stdin asks the server for its report, read so that it can exit.
    drop(child.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(15), lines.next_line()).await;
    let _ = tokio::time::timeout(Duration::from_secs(15), child.wait()).await;
    let slack = Duration::from_millis(100);
    Ok(Outcome {
        stallers,
        closed: closes.len(),
        closed_within_timeout: closes_after_connect
            .iter()
            .filter(|&&after| after <= DEFAULT_HEADER_READ_TIMEOUT + slack)
            .count(),
        answered,
        min_close: closes.iter().copied().min().unwrap_or_default(),
        max_close: closes.iter().copied().max().unwrap_or_default(),
        max_close_after_connect: closes_after_connect
            .iter()
            .copied()
            .max()
            .unwrap_or_default(),
        max_connect,
        fds_before,
        fds_during_max,
        fds_after,
        alone,
        beside,
        alone_after,
    })
}
