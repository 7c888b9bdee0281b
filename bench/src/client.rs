//! The `client` process: runs one cell's workload against a server started by the parent,
//! and returns its result.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use tokio::io::{AsyncBufReadExt as _, BufReader, Lines, Stdin};
use tokio::task::JoinSet;

use crate::alloc_count;
use crate::cell::{StreamLength, Target, Workload};
use crate::measure::{peak_rss_kb, Latencies};
use crate::model::{Case, Fixtures, BIG_REQUEST_EVERY, BULK_LEN, CHUNK_LEN, ITEM_BODY_LEN};
use crate::report::CellResult;
use crate::scale::Scale;
use crate::systems::gateway::GatewayRpc;
use crate::systems::grpc_wirecall::GrpcWirecallRpc;
use crate::systems::raw::RawRpc;
use crate::systems::tarpc::TarpcRpc;
use crate::systems::tonic::TonicRpc;
use crate::systems::wirecall::WirecallRpc;
use crate::systems::{collect_latencies, BenchResult, BesideStream, Rpc};

/// I1's calls in flight on its one connection, as in W2-1x256.
const INSTRUCTIONS_IN_FLIGHT: usize = 256;

/// What one workload measured, before the process adds its memory figures.
struct Measured {
    calls: usize,
    elapsed: Duration,
    latencies: Latencies,
    payload_bytes: Option<usize>,
    connect_phase: Option<Duration>,
    rounds: Option<usize>,
    allocations: Option<u64>,
    /// S3: the calls without the stream (`latencies` are those beside it).
    alone: Option<Latencies>,
    /// S3: the stream's items/s while the calls ran beside it.
    stream_items_per_s: Option<f64>,
}

impl Measured {
    fn timed(calls: usize, elapsed: Duration, latencies: Latencies) -> Self {
        Self {
            calls,
            elapsed,
            latencies,
            payload_bytes: None,
            connect_phase: None,
            rounds: None,
            allocations: None,
            alone: None,
            stream_items_per_s: None,
        }
    }
}

/// Runs `workload` against the server at `addr` and returns the cell's result.
pub async fn run(
    target: Target,
    workload: Workload,
    addr: SocketAddr,
    scale: Scale,
) -> BenchResult<CellResult> {
    if workload == Workload::Allocations {
        alloc_count::enable();
    }
    let fixtures = Arc::new(Fixtures::new());
    let mut measured = match target {
        Target::Wirecall(codec) => {
            let rpc = WirecallRpc::new(addr, codec, fixtures)
                .with_stream_window(workload.stream_window());
            run_workload(&rpc, workload, &scale).await?
        }
        Target::Tarpc(format) => {
            run_workload(&TarpcRpc::new(addr, format, fixtures), workload, &scale).await?
        }
        Target::Tonic => run_workload(&TonicRpc::new(addr, fixtures)?, workload, &scale).await?,
        Target::Gateway => {
            run_workload(&GatewayRpc::new(addr, &fixtures)?, workload, &scale).await?
        }
        Target::GrpcWirecall => {
            run_workload(&GrpcWirecallRpc::new(addr, fixtures)?, workload, &scale).await?
        }
        Target::RawTcp => {
            let rpc = RawRpc::new(addr, &fixtures).with_stream_window(workload.raw_stream_window());
            run_workload(&rpc, workload, &scale).await?
        }
    };
    let secs = measured.elapsed.as_secs_f64();
    Ok(CellResult {
        system: target.system().to_owned(),
        codec: target.codec().to_owned(),
        workload: workload.id(),
        calls: measured.calls as u64,
        secs,
        calls_per_s: measured.calls as f64 / secs.max(f64::MIN_POSITIVE),
        p50_us: measured.latencies.quantile_us(0.50),
        p99_us: measured.latencies.quantile_us(0.99),
        p999_us: measured.latencies.quantile_us(0.999),
        max_us: measured.latencies.quantile_us(1.0),
        rss_server_kb: None,
        rss_client_kb: peak_rss_kb(),
        payload_gb_per_s: measured
            .payload_bytes
            .map(|bytes| bytes as f64 / 1e9 / secs.max(f64::MIN_POSITIVE)),
        connect_secs: measured.connect_phase.map(|d| d.as_secs_f64()),
        rounds: measured.rounds.map(|r| r as u64),
        server_counted: None,
        allocs_client_per_call: measured
            .allocations
            .map(|n| n as f64 / measured.calls.max(1) as f64),
        allocs_server_per_call: None,
        instructions_server_per_call: None,
        instructions_client_per_call: None,
        alone_p50_us: measured.alone.as_mut().and_then(|l| l.quantile_us(0.50)),
        alone_p99_us: measured.alone.as_mut().and_then(|l| l.quantile_us(0.99)),
        stream_items_per_s: measured.stream_items_per_s,
        repeat: None,
    })
}

async fn run_workload<R: Rpc>(rpc: &R, workload: Workload, scale: &Scale) -> BenchResult<Measured> {
    match workload {
        Workload::Sequential(case) => sequential(rpc, case, scale).await,
        Workload::Pipelined {
            connections,
            in_flight,
        } => pipelined(rpc, connections, in_flight, scale).await,
        Workload::Churn => churn(rpc, scale).await,
        Workload::Held => held(rpc, scale).await,
        Workload::Bulk => bulk(rpc, scale).await,
        Workload::OneWay => one_way(rpc, scale).await,
        Workload::BesideBigRequests { big } => beside_big_requests(rpc, big, scale).await,
        Workload::Allocations => allocations(rpc, scale).await,
        Workload::Streams {
            streams,
            length: StreamLength::Long,
            ..
        } => {
            let items_each = if streams == 1 {
                scale.stream_items
            } else {
                scale.items_per_concurrent_stream
            };
            let warmup = StreamWarmup::same_shape(streams, scale);
            server_streams(rpc, streams, items_each, warmup).await
        }
        Workload::Streams {
            streams,
            length: StreamLength::Short,
            ..
        } => {
            let items_each = if streams == 1 {
                scale.short_stream_items
            } else {
                scale.short_items_per_concurrent_stream
            };
            server_streams(rpc, streams, items_each, StreamWarmup::one_stream(scale)).await
        }
        Workload::LongLink { .. } => {
            let warmup = StreamWarmup::same_shape(1, scale);
            server_streams(rpc, 1, scale.long_link_items, warmup).await
        }
        Workload::UnaryBesideStream => unary_beside_stream(rpc, scale).await,
        Workload::Upload => upload(rpc, scale).await,
        // The parent sets `pipelined_calls` to the run's count.
        Workload::Instructions => pipelined(rpc, 1, INSTRUCTIONS_IN_FLIGHT, scale).await,
    }
}

/// U1: one upload of 64 KiB chunks on one connection, after a short untimed one on the same
/// connection; timed from the call until the server's answer, which counts every byte.
async fn upload<R: Rpc>(rpc: &R, scale: &Scale) -> BenchResult<Measured> {
    let mut conn = rpc.connect().await?;
    rpc.upload(&mut conn, scale.upload_warmup_chunks).await?;
    let start = Instant::now();
    rpc.upload(&mut conn, scale.upload_chunks).await?;
    let elapsed = start.elapsed();
    let chunks = usize::try_from(scale.upload_chunks)?;
    let mut measured = Measured::timed(chunks, elapsed, Latencies::default());
    measured.payload_bytes = Some(chunks * CHUNK_LEN);
    Ok(measured)
}

/// The untimed streams read on a stream cell's connection before it is timed.
#[derive(Clone, Copy, Debug)]
struct StreamWarmup {
    /// Streams open at once.
    streams: usize,
    /// Items on each.
    items_each: u64,
}

impl StreamWarmup {
    /// The bench's own: the timed shape, `warmup_calls` items in all.
    fn same_shape(streams: usize, scale: &Scale) -> Self {
        Self {
            streams,
            items_each: (scale.warmup_calls / streams).max(1) as u64,
        }
    }

    /// A user's first measurement: one stream of `short_warmup_items`.
    fn one_stream(scale: &Scale) -> Self {
        Self {
            streams: 1,
            items_each: scale.short_warmup_items,
        }
    }
}

/// S1, S2, their short forms and L1: `streams` server streams of `items_each` 1 KiB items
/// open at once on one connection, each read to its end, after `warmup` on the same
/// connection; timed from the first open to the last item. The latencies are the items',
/// producer to consumer.
async fn server_streams<R: Rpc>(
    rpc: &R,
    streams: usize,
    items_each: u64,
    warmup: StreamWarmup,
) -> BenchResult<Measured> {
    let mut conn = rpc.connect().await?;
    rpc.consume_streams(&mut conn, warmup.streams, warmup.items_each)
        .await?;
    let start = Instant::now();
    let latencies = rpc.consume_streams(&mut conn, streams, items_each).await?;
    let elapsed = start.elapsed();
    let items = latencies.len();
    let mut measured = Measured::timed(items, elapsed, latencies);
    measured.payload_bytes = Some(items * ITEM_BODY_LEN);
    Ok(measured)
}

/// Rounds of S3: each times half the calls alone, then half beside the stream.
const BESIDE_STREAM_ROUNDS: usize = 2;

/// S3: sequential 1-object calls on one connection, alone and beside a server stream on the
/// same connection that is read as fast as it comes, alternating; a cancelled stream's last
/// items have a moment to drain before the next calls alone.
async fn unary_beside_stream<R: Rpc>(rpc: &R, scale: &Scale) -> BenchResult<Measured> {
    let mut conn = rpc.connect().await?;
    rpc.calls_beside_stream(&mut conn, scale.warmup_calls, false)
        .await?;
    let per_round = (scale.beside_stream_calls / BESIDE_STREAM_ROUNDS).max(1);
    let (mut alone, mut beside) = (BesideStream::default(), BesideStream::default());
    for _ in 0..BESIDE_STREAM_ROUNDS {
        let round = rpc.calls_beside_stream(&mut conn, per_round, false).await?;
        alone.latencies.extend(round.latencies);
        let round = rpc.calls_beside_stream(&mut conn, per_round, true).await?;
        beside.latencies.extend(round.latencies);
        beside.stream_items += round.stream_items;
        beside.elapsed += round.elapsed;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let secs = beside.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    let mut measured = Measured::timed(beside.latencies.len(), beside.elapsed, beside.latencies);
    measured.alone = Some(alone.latencies);
    measured.stream_items_per_s = Some(beside.stream_items as f64 / secs);
    Ok(measured)
}

/// W8: sequential 1-object calls on one connection after a warm-up, counting this process's
/// allocations while they run. Before and after the counted calls the client prints `mark`
/// and waits for a line on stdin: meanwhile the parent reads the server's count (see
/// `crate::orchestrate`), so both processes count the same calls.
async fn allocations<R: Rpc>(rpc: &R, scale: &Scale) -> BenchResult<Measured> {
    let mut parent = BufReader::new(tokio::io::stdin()).lines();
    let mut conn = rpc.connect().await?;
    for _ in 0..scale.warmup_calls {
        rpc.call(&mut conn, Case::User).await?;
    }
    let calls = scale.counted_calls;
    let mut latencies = Latencies::with_capacity(calls);
    mark(&mut parent).await?;
    let before = alloc_count::allocations();
    let start = Instant::now();
    for _ in 0..calls {
        let call_start = Instant::now();
        rpc.call(&mut conn, Case::User).await?;
        latencies.record(call_start.elapsed());
    }
    let elapsed = start.elapsed();
    let counted = alloc_count::allocations() - before;
    mark(&mut parent).await?;
    let mut measured = Measured::timed(calls, elapsed, latencies);
    measured.allocations = Some(counted);
    Ok(measured)
}

/// Prints `mark` and waits until the parent answers with a line.
async fn mark(parent: &mut Lines<BufReader<Stdin>>) -> BenchResult<()> {
    {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{MARK}")?;
        stdout.flush()?;
    }
    parent
        .next_line()
        .await?
        .ok_or("stdin closed while waiting for the parent")?;
    Ok(())
}

/// The line W8's client prints when the parent should read the server's allocation count.
pub const MARK: &str = "mark";

/// W7: sequential 1-object calls on one connection, alone or beside a 4 MiB request every
/// 100 ms on the same connection.
async fn beside_big_requests<R: Rpc>(rpc: &R, big: bool, scale: &Scale) -> BenchResult<Measured> {
    let mut conn = rpc.connect().await?;
    for _ in 0..scale.warmup_calls {
        rpc.call(&mut conn, Case::User).await?;
    }
    let calls = scale.beside_big_calls;
    let big_every = big.then_some(BIG_REQUEST_EVERY);
    let start = Instant::now();
    let latencies = rpc.beside_big_requests(&mut conn, calls, big_every).await?;
    Ok(Measured::timed(calls, start.elapsed(), latencies))
}

/// W1: one connection, one call at a time.
async fn sequential<R: Rpc>(rpc: &R, case: Case, scale: &Scale) -> BenchResult<Measured> {
    let mut conn = rpc.connect().await?;
    for _ in 0..scale.warmup_calls {
        rpc.call(&mut conn, case).await?;
    }
    let calls = scale.sequential_calls;
    let mut latencies = Latencies::with_capacity(calls);
    let start = Instant::now();
    for _ in 0..calls {
        let call_start = Instant::now();
        rpc.call(&mut conn, case).await?;
        latencies.record(call_start.elapsed());
    }
    Ok(Measured::timed(calls, start.elapsed(), latencies))
}

/// W2: the 1-object call, `in_flight` outstanding on each of `connections` connections.
async fn pipelined<R: Rpc>(
    rpc: &R,
    connections: usize,
    in_flight: usize,
    scale: &Scale,
) -> BenchResult<Measured> {
    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections {
        let mut conn = rpc.connect().await?;
        for _ in 0..scale.warmup_calls / connections.max(1) {
            rpc.call(&mut conn, Case::User).await?;
        }
        rpc.open_for_pipelining(&mut conn, in_flight, scale.connect_fan_out)
            .await?;
        conns.push(conn);
    }
    let calls = scale.pipelined_calls;
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for (index, mut conn) in conns.into_iter().enumerate() {
        let share = calls / connections + usize::from(index < calls % connections);
        let rpc = rpc.clone();
        tasks.spawn(async move { rpc.pipelined(&mut conn, Case::User, in_flight, share).await });
    }
    let latencies = collect_latencies(tasks).await?;
    Ok(Measured::timed(calls, start.elapsed(), latencies))
}

/// W3: per round, connections opened one after another (connect, handshake, one call), then
/// all of them closed.
async fn churn<R: Rpc>(rpc: &R, scale: &Scale) -> BenchResult<Measured> {
    let total = scale.churn_rounds * scale.churn_connections;
    let mut latencies = Latencies::with_capacity(total);
    let start = Instant::now();
    for _ in 0..scale.churn_rounds {
        let mut open = Vec::with_capacity(scale.churn_connections);
        for _ in 0..scale.churn_connections {
            let connect_start = Instant::now();
            let mut conn = rpc.connect().await?;
            rpc.call(&mut conn, Case::User).await?;
            latencies.record(connect_start.elapsed());
            open.push(conn);
        }
        drop(open);
    }
    let mut measured = Measured::timed(total, start.elapsed(), latencies);
    measured.rounds = Some(scale.churn_rounds);
    Ok(measured)
}

/// Opens `count` connections, `fan_out` attempts at a time.
async fn open_many<R: Rpc>(rpc: &R, count: usize, fan_out: usize) -> BenchResult<Vec<R::Conn>> {
    futures::stream::iter(0..count)
        .map(|_| rpc.connect())
        .buffer_unordered(fan_out.max(1))
        .try_collect()
        .await
}

/// W4: every connection open at once, then each makes a few sequential calls; only the call
/// phase is timed.
async fn held<R: Rpc>(rpc: &R, scale: &Scale) -> BenchResult<Measured> {
    let connect_start = Instant::now();
    let conns = open_many(rpc, scale.held_connections, scale.connect_fan_out).await?;
    let connect_phase = connect_start.elapsed();
    let calls_each = scale.held_calls;
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for mut conn in conns {
        let rpc = rpc.clone();
        tasks.spawn(async move {
            let mut latencies = Latencies::with_capacity(calls_each);
            for _ in 0..calls_each {
                let call_start = Instant::now();
                rpc.call(&mut conn, Case::User).await?;
                latencies.record(call_start.elapsed());
            }
            // Keep the connection open until every task is done.
            Ok::<_, crate::systems::BoxError>((latencies, conn))
        });
    }
    let mut latencies = Latencies::default();
    let mut still_open = Vec::with_capacity(scale.held_connections);
    while let Some(joined) = tasks.join_next().await {
        let (task_latencies, conn) = joined??;
        latencies.extend(task_latencies);
        still_open.push(conn);
    }
    let elapsed = start.elapsed();
    drop(still_open);
    let mut measured = Measured::timed(scale.held_connections * calls_each, elapsed, latencies);
    measured.connect_phase = Some(connect_phase);
    Ok(measured)
}

/// W5: 64 KiB calls, a few in flight on each of several connections.
async fn bulk<R: Rpc>(rpc: &R, scale: &Scale) -> BenchResult<Measured> {
    let conns = open_many(rpc, scale.bulk_connections, scale.connect_fan_out).await?;
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for mut conn in conns {
        let rpc = rpc.clone();
        let (in_flight, calls) = (scale.bulk_in_flight, scale.bulk_calls);
        tasks.spawn(async move { rpc.pipelined(&mut conn, Case::Bulk, in_flight, calls).await });
    }
    let latencies = collect_latencies(tasks).await?;
    let calls = scale.bulk_connections * scale.bulk_calls;
    let mut measured = Measured::timed(calls, start.elapsed(), latencies);
    measured.payload_bytes = Some(calls * BULK_LEN);
    Ok(measured)
}

/// W6: one-way messages from every connection; timed until the server has counted them all.
async fn one_way<R: Rpc>(rpc: &R, scale: &Scale) -> BenchResult<Measured> {
    let connect_start = Instant::now();
    let conns = open_many(rpc, scale.oneway_connections, scale.connect_fan_out).await?;
    let mut control = rpc.connect().await?;
    let connect_phase = connect_start.elapsed();
    let total = scale.oneway_connections * scale.oneway_calls;
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for mut conn in conns {
        let rpc = rpc.clone();
        let calls = scale.oneway_calls;
        tasks.spawn(async move {
            rpc.send_one_way(&mut conn, calls).await?;
            // Dropping a connection may discard what is still queued: keep it until the end.
            Ok::<_, crate::systems::BoxError>(conn)
        });
    }
    let mut still_open = Vec::with_capacity(scale.oneway_connections);
    while let Some(joined) = tasks.join_next().await {
        still_open.push(joined??);
    }
    loop {
        let counted = rpc.server_count(&mut control).await?;
        if counted >= total as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = start.elapsed();
    drop(still_open);
    let mut measured = Measured::timed(total, elapsed, Latencies::default());
    measured.connect_phase = Some(connect_phase);
    Ok(measured)
}
