//! The systems under test. Each one provides a server (run in the `server` process) and an
//! [`Rpc`] client (run in the `client` process); the workloads in `crate::client` drive any
//! [`Rpc`] the same way.

pub mod raw;
pub mod tarpc;
pub mod tonic;
pub mod wirecall;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::measure::Latencies;
use crate::model::Case;

/// Any error of a benchmark run; it ends the cell, which is reported as failed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The result type of everything that can fail a cell.
pub type BenchResult<T> = Result<T, BoxError>;

/// A client of one system: open connections, make calls.
pub trait Rpc: Clone + Send + Sync + 'static {
    /// One open (and, where the protocol has one, negotiated) connection.
    type Conn: Send + 'static;

    /// Opens a connection to the server.
    fn connect(&self) -> impl Future<Output = BenchResult<Self::Conn>> + Send;

    /// Makes one call of `case` and waits for its reply.
    fn call(
        &self,
        conn: &mut Self::Conn,
        case: Case,
    ) -> impl Future<Output = BenchResult<()>> + Send;

    /// Makes `calls` calls of `case` on one connection, keeping `in_flight` outstanding, and
    /// returns each call's latency.
    fn pipelined(
        &self,
        conn: &mut Self::Conn,
        case: Case,
        in_flight: usize,
        calls: usize,
    ) -> impl Future<Output = BenchResult<Latencies>> + Send;

    /// Sends `calls` one-way messages of `RECORD_LEN` bytes.
    fn send_one_way(
        &self,
        conn: &mut Self::Conn,
        calls: usize,
    ) -> impl Future<Output = BenchResult<()>> + Send;

    /// Asks the server how many one-way messages it has counted so far.
    fn server_count(&self, conn: &mut Self::Conn) -> impl Future<Output = BenchResult<u64>> + Send;

    /// W7: makes `calls` sequential 1-object calls on `conn` and returns their latencies;
    /// with `big_every`, the same connection meanwhile carries a request of about
    /// [`BIG_REQUEST_LEN`](crate::model::BIG_REQUEST_LEN) bytes at that interval.
    fn beside_big_requests(
        &self,
        conn: &mut Self::Conn,
        calls: usize,
        big_every: Option<Duration>,
    ) -> impl Future<Output = BenchResult<Latencies>> + Send {
        let _ = (conn, calls, big_every);
        async { Err("this system does not run W7".into()) }
    }
}

/// Pipelining for clients that multiplex by themselves: `in_flight` tasks share clones of one
/// connection, each making its share of `calls` sequentially.
pub async fn fan_out<R>(
    rpc: &R,
    conn: &R::Conn,
    case: Case,
    in_flight: usize,
    calls: usize,
) -> BenchResult<Latencies>
where
    R: Rpc,
    R::Conn: Clone,
{
    let workers = in_flight.clamp(1, calls.max(1));
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..workers {
        let share = calls / workers + usize::from(worker < calls % workers);
        let rpc = rpc.clone();
        let mut conn = conn.clone();
        tasks.spawn(async move {
            let mut latencies = Latencies::with_capacity(share);
            for _ in 0..share {
                let start = Instant::now();
                rpc.call(&mut conn, case).await?;
                latencies.record(start.elapsed());
            }
            Ok::<_, BoxError>(latencies)
        });
    }
    collect_latencies(tasks).await
}

/// Waits for every task and merges their latencies; the first error wins.
pub async fn collect_latencies(
    mut tasks: tokio::task::JoinSet<BenchResult<Latencies>>,
) -> BenchResult<Latencies> {
    let mut all = Latencies::default();
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined??);
    }
    Ok(all)
}

/// What every server process shares with its handlers: the one-way message count.
pub type Counter = Arc<std::sync::atomic::AtomicU64>;
