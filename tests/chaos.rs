//! Nothing is lost: many callers over a proxy that cuts connections at random points
//! (mid-handshake, mid-frame, between frames, after a random time) against handlers that
//! randomly panic, overrun their deadline, fail, or succeed. Every call must resolve, once,
//! to the right value or a typed error, within its deadline plus a margin; afterwards the
//! server must hold no connection and no call, and memory must stay bounded.
//!
//! `CHAOS_SEED=<u64>` replays a run (the seed is printed at the start); `CHAOS_SECONDS=<n>`
//! changes its length (default 10).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use wirecall::{Channel, Error, RunningServer, Server};
use wirecall_test_support::quiet_panics_starting_with;

const CLIENT_TIMEOUT: Duration = Duration::from_millis(200);
/// A call that has not resolved this long after its deadline is lost.
const LOST_MARGIN: Duration = Duration::from_secs(2);
const CONNECTIONS: usize = 8;
const CALLERS_PER_CONNECTION: usize = 4;
/// How long an overrunning handler sleeps: well past the client's deadline.
const OVERRUN: Duration = Duration::from_millis(400);
const RSS_BOUND: u64 = 200 * 1024 * 1024;
/// Panics raised on purpose carry this prefix; the panic hook keeps them off stderr.
const PLANNED_PANIC: &str = "chaos: planned panic";

#[wirecall::service]
trait Chaos {
    /// Does what `action` says with `value`: see [`Action`].
    async fn act(&self, action: u32, value: u64) -> Result<u64, String>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Succeed = 0,
    Panic = 1,
    Overrun = 2,
    Fail = 3,
}

impl Action {
    fn from_wire(action: u32) -> Self {
        match action {
            0 => Self::Succeed,
            1 => Self::Panic,
            2 => Self::Overrun,
            _ => Self::Fail,
        }
    }

    fn pick(rng: &mut StdRng) -> Self {
        match rng.random_range(0..100) {
            0..55 => Self::Succeed,
            55..70 => Self::Panic,
            70..80 => Self::Overrun,
            _ => Self::Fail,
        }
    }
}

fn expected_value(value: u64) -> u64 {
    value.wrapping_mul(31).wrapping_add(7)
}

fn expected_failure(value: u64) -> String {
    format!("refused {value}")
}

struct Unreliable;

impl Chaos for Unreliable {
    async fn act(&self, action: u32, value: u64) -> Result<u64, String> {
        match Action::from_wire(action) {
            Action::Succeed => Ok(expected_value(value)),
            Action::Panic => panic!("{PLANNED_PANIC} {value}"),
            Action::Overrun => {
                tokio::time::sleep(OVERRUN).await;
                Ok(expected_value(value))
            }
            Action::Fail => Err(expected_failure(value)),
        }
    }
}

/// What the run saw, by outcome.
#[derive(Default)]
struct Tally {
    issued: u64,
    ok: u64,
    app_error: u64,
    typed_error: BTreeMap<String, u64>,
    /// Resolved, but to something the action cannot produce (a wrong value, a panic for a
    /// call that did not panic, ...).
    wrong: Vec<String>,
    lost: u64,
    slowest: Duration,
}

impl Tally {
    fn resolved(&self) -> u64 {
        self.ok + self.app_error + self.typed_error.values().sum::<u64>() + self.wrong.len() as u64
    }
}

fn variant(err: &Error) -> String {
    match err {
        Error::Connect { .. } => "Connect".to_owned(),
        Error::Negotiation(_) => "Negotiation".to_owned(),
        Error::Codec(_) => "Codec".to_owned(),
        Error::HandlerPanicked { .. } => "HandlerPanicked".to_owned(),
        Error::UnknownMethod { .. } => "UnknownMethod".to_owned(),
        Error::FrameTooLarge { .. } => "FrameTooLarge".to_owned(),
        Error::ConnectionClosed { .. } => "ConnectionClosed".to_owned(),
        Error::Unavailable { .. } => "Unavailable".to_owned(),
        Error::Timeout { .. } => "Timeout".to_owned(),
        Error::Remote { code, .. } => format!("Remote({code:?})"),
        other => format!("{other:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or("")
            .to_owned(),
    }
}

/// Whether `err` is a possible outcome of `action` when the connection may be cut at any
/// moment and replies may be late.
fn plausible_error(action: Action, err: &Error) -> bool {
    match err {
        Error::ConnectionClosed { .. }
        | Error::Unavailable { .. }
        | Error::Timeout { .. }
        | Error::Connect { .. }
        | Error::Negotiation(_) => true,
        Error::HandlerPanicked { message, .. } => {
            action == Action::Panic && message.starts_with(PLANNED_PANIC)
        }
        Error::Remote {
            code: wirecall::ErrorCode::DeadlineExceeded,
            ..
        } => true,
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_through_a_connection_cutting_proxy_all_resolve_and_nothing_leaks() {
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0x5eed_c4a0_u64);
    let seconds = std::env::var("CHAOS_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(10u64);
    eprintln!("chaos: seed {seed} (CHAOS_SEED={seed} replays it), {seconds} s");
    quiet_panics_starting_with(PLANNED_PANIC);
    let run = Duration::from_secs(seconds);
    tokio::time::timeout(run + Duration::from_secs(60), chaos(seed, run))
        .await
        .expect("the chaos run ends");
}

async fn chaos(seed: u64, run: Duration) {
    let mut master = StdRng::seed_from_u64(seed);
    let server = Server::builder()
        .serve(ChaosServer::new(Unreliable))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let proxy = CuttingProxy::start(server.local_addr(), master.random()).await;

    let mut channels = Vec::new();
    for _ in 0..CONNECTIONS {
        channels.push(connect_through(proxy.addr).await);
    }
    let tally = Arc::new(Mutex::new(Tally::default()));
    let until = tokio::time::Instant::now() + run;
    let mut callers = Vec::new();
    for channel in &channels {
        for _ in 0..CALLERS_PER_CONNECTION {
            let client = ChaosClient::new(channel.clone());
            let rng = StdRng::seed_from_u64(master.random());
            callers.push(tokio::spawn(caller(client, rng, until, Arc::clone(&tally))));
        }
    }
    for caller in callers {
        caller.await.expect("a caller task panicked");
    }

    // Every call is settled on the client side too.
    for channel in &channels {
        assert_eq!(channel.in_flight(), 0, "calls still pending on a channel");
    }
    drop(channels);

    let tally = std::mem::take(&mut *tally.lock().unwrap());
    let rss = vm_rss_bytes();
    eprintln!(
        "chaos: issued {}, ok {}, app-error {}, typed-error {:?}, wrong {}, lost {}, \
         slowest {:?}",
        tally.issued,
        tally.ok,
        tally.app_error,
        tally.typed_error,
        tally.wrong.len(),
        tally.lost,
        tally.slowest,
    );
    eprintln!(
        "chaos: proxied connections {}, cut {}; test process RSS {} MiB",
        proxy.accepted.load(Ordering::Relaxed),
        proxy.cut.load(Ordering::Relaxed),
        rss.unwrap_or(0) / (1024 * 1024)
    );

    assert_eq!(tally.lost, 0, "calls that never resolved");
    assert_eq!(
        tally.issued,
        tally.resolved() + tally.lost,
        "every call is counted once"
    );
    assert!(
        tally.wrong.is_empty(),
        "{} calls resolved to an impossible outcome, e.g. {:?}",
        tally.wrong.len(),
        &tally.wrong[..tally.wrong.len().min(5)]
    );
    assert!(tally.ok > 0, "no call succeeded");
    assert!(tally.app_error > 0, "no application error came through");
    assert!(
        tally.typed_error.contains_key("HandlerPanicked"),
        "no panic was reported as HandlerPanicked"
    );
    assert!(
        proxy.cut.load(Ordering::Relaxed) > 0,
        "the proxy never cut a connection"
    );
    if let Some(rss) = rss {
        assert!(rss < RSS_BOUND, "RSS {rss} bytes is over {RSS_BOUND}");
    }

    // With the clients gone, the proxy passes their closes on; the server forgets them.
    settles(&server).await;
    proxy.stop();
    settles(&server).await;
}

async fn settles(server: &RunningServer) {
    let started = Instant::now();
    while server.connection_count() != 0 || server.in_flight() != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "after the clients left the server still holds {} connections and {} calls",
            server.connection_count(),
            server.in_flight()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Connects through the proxy, retrying: the proxy may cut the first handshake too.
async fn connect_through(addr: SocketAddr) -> Channel {
    let started = Instant::now();
    loop {
        let attempt = Channel::builder()
            .timeout(CLIENT_TIMEOUT)
            .max_reconnect_backoff(Duration::from_millis(250))
            .connect(addr)
            .await;
        match attempt {
            Ok(channel) => return channel,
            Err(err) => assert!(
                started.elapsed() < Duration::from_secs(10),
                "could not connect through the proxy: {err}"
            ),
        }
    }
}

async fn caller(
    client: ChaosClient,
    mut rng: StdRng,
    until: tokio::time::Instant,
    tally: Arc<Mutex<Tally>>,
) {
    while tokio::time::Instant::now() < until {
        let action = Action::pick(&mut rng);
        let value: u64 = rng.random();
        let started = Instant::now();
        tally.lock().unwrap().issued += 1;
        let outcome = tokio::time::timeout(
            CLIENT_TIMEOUT + LOST_MARGIN,
            client.act(action as u32, value),
        )
        .await;
        let elapsed = started.elapsed();
        let mut backoff = false;
        {
            let mut tally = tally.lock().unwrap();
            tally.slowest = tally.slowest.max(elapsed);
            match outcome {
                Err(_) => tally.lost += 1,
                Ok(Ok(Ok(got))) => {
                    if matches!(action, Action::Succeed | Action::Overrun)
                        && got == expected_value(value)
                    {
                        tally.ok += 1;
                    } else {
                        tally
                            .wrong
                            .push(format!("{action:?}({value}) returned Ok({got})"));
                    }
                }
                Ok(Ok(Err(message))) => {
                    if action == Action::Fail && message == expected_failure(value) {
                        tally.app_error += 1;
                    } else {
                        tally
                            .wrong
                            .push(format!("{action:?}({value}) returned Err({message:?})"));
                    }
                }
                Ok(Err(err)) => {
                    if plausible_error(action, &err) {
                        backoff = matches!(
                            err,
                            Error::ConnectionClosed { .. }
                                | Error::Unavailable { .. }
                                | Error::Connect { .. }
                                | Error::Negotiation(_)
                        );
                        *tally.typed_error.entry(variant(&err)).or_default() += 1;
                    } else {
                        tally
                            .wrong
                            .push(format!("{action:?}({value}) failed with {err:?}"));
                    }
                }
            }
        }
        if backoff {
            // The channel reconnects on a later call; don't spin while it waits.
            tokio::time::sleep(Duration::from_millis(rng.random_range(5..30))).await;
        }
    }
}

/// Where a proxied connection is cut.
#[derive(Clone, Copy, Debug)]
enum Cut {
    Never,
    /// After `at` bytes of the hello in one direction.
    MidHandshake {
        upstream: bool,
        at: u64,
    },
    /// `into` bytes into the frame after `frames` whole frames, in one direction.
    MidFrame {
        upstream: bool,
        frames: usize,
        into: u64,
    },
    /// Right after `frames` whole frames in one direction.
    BetweenFrames {
        upstream: bool,
        frames: usize,
    },
    /// After a while, wherever the bytes are.
    AfterTime(Duration),
}

impl Cut {
    fn pick(rng: &mut StdRng) -> Self {
        let upstream = rng.random_bool(0.5);
        match rng.random_range(0..100) {
            0..5 => Self::Never,
            5..25 => Self::MidHandshake {
                upstream,
                // The client hello offering three codecs is 9 bytes, the server's 11.
                at: rng.random_range(0..if upstream { 9 } else { 11 }),
            },
            25..55 => Self::MidFrame {
                upstream,
                frames: rng.random_range(0..200),
                // Every frame has at least 26 bytes.
                into: rng.random_range(1..26),
            },
            55..80 => Self::BetweenFrames {
                upstream,
                frames: rng.random_range(0..200),
            },
            _ => Self::AfterTime(Duration::from_millis(rng.random_range(0..1_500))),
        }
    }

    /// The frame-aligned cut in the given direction, if any.
    fn in_direction(self, direction_upstream: bool) -> Option<CutPoint> {
        match self {
            Self::MidHandshake { upstream, at } if upstream == direction_upstream => {
                Some(CutPoint::Offset(at))
            }
            Self::MidFrame {
                upstream,
                frames,
                into,
            } if upstream == direction_upstream => Some(CutPoint::Frame { frames, into }),
            Self::BetweenFrames { upstream, frames } if upstream == direction_upstream => {
                Some(CutPoint::Frame { frames, into: 0 })
            }
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum CutPoint {
    Offset(u64),
    Frame { frames: usize, into: u64 },
}

/// Finds frame boundaries in one direction of a connection as its bytes pass by: the hello
/// (`6 + count` bytes from the client, `8 + count` from the server), then length-prefixed frames.
struct Boundaries {
    upstream: bool,
    seen: Vec<u8>,
    /// Stream offsets where whole frames end, the hello's end first.
    ends: Vec<u64>,
}

impl Boundaries {
    fn new(upstream: bool) -> Self {
        Self {
            upstream,
            seen: Vec::new(),
            ends: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8], wanted_frames: usize) {
        if self.ends.len() > wanted_frames {
            return;
        }
        self.seen.extend_from_slice(bytes);
        loop {
            let next = match self.ends.last() {
                None => {
                    let count_at = if self.upstream { 5 } else { 7 };
                    match self.seen.get(count_at) {
                        Some(count) => count_at as u64 + 1 + u64::from(*count),
                        None => return,
                    }
                }
                Some(&end) => {
                    let at = end as usize;
                    match self.seen.get(at..at + 4) {
                        Some(prefix) => {
                            end + 4 + u64::from(u32::from_be_bytes(prefix.try_into().unwrap()))
                        }
                        None => return,
                    }
                }
            };
            self.ends.push(next);
            if self.ends.len() > wanted_frames {
                return;
            }
        }
    }

    /// The stream offset of `point`, once known.
    fn offset(&self, point: CutPoint) -> Option<u64> {
        match point {
            CutPoint::Offset(at) => Some(at),
            CutPoint::Frame { frames, into } => self.ends.get(frames).map(|end| end + into),
        }
    }
}

/// A TCP proxy in front of the server that cuts each connection where its [`Cut`] says.
struct CuttingProxy {
    addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    cut: Arc<AtomicU64>,
    stop: CancellationToken,
}

impl CuttingProxy {
    async fn start(upstream: SocketAddr, seed: u64) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(AtomicU64::new(0));
        let stop = CancellationToken::new();
        let proxy = Self {
            addr,
            accepted: Arc::clone(&accepted),
            cut: Arc::clone(&cut),
            stop: stop.clone(),
        };
        tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed);
            loop {
                let client = tokio::select! {
                    _ = stop.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((client, _)) => client,
                        Err(_) => continue,
                    },
                };
                accepted.fetch_add(1, Ordering::Relaxed);
                let plan = Cut::pick(&mut rng);
                let connection = stop.child_token();
                let cut = Arc::clone(&cut);
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    proxy_connection(client, server, plan, connection, cut).await;
                });
            }
        });
        proxy
    }

    fn stop(&self) {
        self.stop.cancel();
    }
}

async fn proxy_connection(
    client: TcpStream,
    server: TcpStream,
    plan: Cut,
    connection: CancellationToken,
    cut: Arc<AtomicU64>,
) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = forward(client_read, server_write, true, plan, connection.clone());
    let down = forward(server_read, client_write, false, plan, connection.clone());
    let timer = async {
        match plan {
            Cut::AfterTime(after) => tokio::time::sleep(after).await,
            _ => std::future::pending().await,
        }
    };
    let was_cut = tokio::select! {
        (up_cut, down_cut) = async { tokio::join!(up, down) } => up_cut || down_cut,
        _ = timer => true,
    };
    if was_cut {
        cut.fetch_add(1, Ordering::Relaxed);
    }
    connection.cancel();
    // Dropping both streams here closes both sides at once.
}

/// Copies one direction until it ends or reaches the cut; returns whether it cut.
async fn forward(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    upstream: bool,
    plan: Cut,
    connection: CancellationToken,
) -> bool {
    let point = plan.in_direction(upstream);
    let wanted_frames = match point {
        Some(CutPoint::Frame { frames, .. }) => frames,
        _ => 0,
    };
    let mut boundaries = Boundaries::new(upstream);
    let mut forwarded = 0u64;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if let Some(at) = point.and_then(|point| boundaries.offset(point)) {
            if forwarded >= at {
                connection.cancel();
                return true;
            }
        }
        let read = tokio::select! {
            _ = connection.cancelled() => return false,
            read = from.read(&mut buf) => read,
        };
        let n = match read {
            Ok(0) | Err(_) => {
                connection.cancel();
                return false;
            }
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        if point.is_some() {
            boundaries.push(chunk, wanted_frames);
        }
        let allowed = match point.and_then(|point| boundaries.offset(point)) {
            Some(at) => (at.saturating_sub(forwarded) as usize).min(n),
            None => n,
        };
        let write = tokio::select! {
            _ = connection.cancelled() => return false,
            write = to.write_all(&chunk[..allowed]) => write,
        };
        if write.is_err() {
            connection.cancel();
            return false;
        }
        forwarded += allowed as u64;
        if allowed < n {
            connection.cancel();
            return true;
        }
    }
}

fn vm_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
