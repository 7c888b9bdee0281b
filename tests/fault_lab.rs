//! The fault lab: servers and clients that die quietly, in processes of their own, stopped
//! with SIGSTOP (a process stuck in a pause or a deadlock: its kernel still accepts and
//! acknowledges, only the application is silent) or cut off by the network (a peer in a
//! network namespace whose veth link goes down: no byte and no RST ever arrives), everything
//! at its defaults. The partition tests need root; they are ignored in a plain `cargo test`
//! and `.ci/run`, which runs as root, runs them with `--ignored partition`.
//!
//! Each peer runs in a child process: this test binary, re-run with only the ignored
//! `fault_lab_server` or `fault_lab_client` test. The figures measured are printed; what is
//! asserted is what each fault must end in (the error, its outcome, what was released), so
//! that a regression fails whatever the machine's speed. The numbers against targets and
//! peers are the bench's.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use wirecall::discovery::{Registry, StaticRegistry};
use wirecall::{Channel, Error, Outcome, Server};
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer};
use wirecall_test_support::{eventually_async, eventually_within};
use wirecall_test_support::{fanly, UserServiceClient, UserServiceServer, Users};

const ROLE_ENV: &str = "WIRECALL_FAULT_LAB_ROLE";
const TARGET_ENV: &str = "WIRECALL_FAULT_LAB_TARGET";
/// Where the server child binds (loopback unless told).
const BIND_ENV: &str = "WIRECALL_FAULT_LAB_BIND";
/// Calls the vanishing client leaves open on the server, beside one stream.
const OPEN_CALLS: usize = 100;

/// A child process of this test binary, stopped and continued with signals, killed when
/// dropped.
struct Peer {
    child: Child,
    lines: std::io::Lines<BufReader<ChildStdout>>,
}

impl Peer {
    fn start(role: &str, target: Option<SocketAddr>) -> Self {
        Self::start_in(None, role, target, None)
    }

    /// Starts the child in network namespace `namespace`, if given (through `ip netns
    /// exec`, which execs it: the child keeps its process id), binding to `bind`, if given.
    fn start_in(
        namespace: Option<&str>,
        role: &str,
        target: Option<SocketAddr>,
        bind: Option<SocketAddr>,
    ) -> Self {
        let test = format!("fault_lab_{role}");
        let exe = std::env::current_exe().unwrap();
        let mut command = match namespace {
            Some(namespace) => {
                let mut command = Command::new("ip");
                command.args(["netns", "exec", namespace]).arg(exe);
                command
            }
            None => Command::new(exe),
        };
        command
            .args(["--exact", &test, "--ignored", "--nocapture"])
            .env(ROLE_ENV, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(target) = target {
            command.env(TARGET_ENV, target.to_string());
        }
        if let Some(bind) = bind {
            command.env(BIND_ENV, bind.to_string());
        }
        let mut child = command.spawn().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines }
    }

    /// The first line the child prints that starts with `prefix`, without it.
    fn line(&mut self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .next()
                .unwrap_or_else(|| panic!("the child printed no {prefix:?} line"))
                .unwrap();
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.to_owned();
            }
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal}");
    }

    /// Stops the process, and returns once it is stopped: the signal is delivered
    /// asynchronously, and a call sent before it lands would still be answered.
    fn stop(&self) {
        self.signal("-STOP");
        let stat = format!("/proc/{}/stat", self.child.id());
        let stopped = || {
            std::fs::read_to_string(&stat).is_ok_and(|stat| {
                // The state follows the command name, which is in parentheses.
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
            })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !stopped() {
            assert!(
                std::time::Instant::now() < deadline,
                "the process did not stop"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn resume(&self) {
        self.signal("-CONT");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.resume();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_peer() -> (Peer, SocketAddr) {
    let mut peer = Peer::start("server", None);
    let addr = peer.line("ADDR ").parse().unwrap();
    (peer, addr)
}

/// Not a test on its own: a server process of the fault lab.
#[test]
#[ignore = "child process of the fault lab's tests"]
fn fault_lab_server() {
    assert!(
        std::env::var_os(ROLE_ENV).is_some(),
        "run by the fault lab only"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let bind = std::env::var(BIND_ENV).unwrap_or_else(|_| "127.0.0.1:0".to_owned());
        let server = Server::builder()
            .serve(UserServiceServer::new(Users::default()))
            .bind(bind)
            .await
            .unwrap();
        println!("ADDR {}", server.local_addr());
        std::io::stdout().flush().unwrap();
        // Serve until the parent goes (its end of stdin closes).
        tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new()))
            .await
            .unwrap()
            .ok();
    });
}

/// Not a test on its own: a client process of the fault lab that opens a stream and
/// [`OPEN_CALLS`] long calls on the server at `TARGET_ENV`, then waits to be stopped.
#[test]
#[ignore = "child process of the fault lab's tests"]
fn fault_lab_client() {
    let target: SocketAddr = std::env::var(TARGET_ENV)
        .expect("run by the fault lab only")
        .parse()
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let channel = Channel::builder()
            .without_timeout()
            .connect(target)
            .await
            .unwrap();
        let users = UserServiceClient::new(channel.clone());
        for _ in 0..OPEN_CALLS {
            let users = users.clone();
            tokio::spawn(async move { users.sleep(3_600_000).await });
        }
        // A stream whose items this client never takes: the server's producer waits for
        // credit.
        let stream = FeedClient::new(channel).numbers(u64::MAX).await.unwrap();
        println!("OPEN");
        std::io::stdout().flush().unwrap();
        tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new()))
            .await
            .unwrap()
            .ok();
        drop(stream);
    });
}

#[tokio::test]
async fn a_hung_server_fails_the_call_waiting_on_it_long_before_its_deadline() {
    let (server, addr) = server_peer();
    let users = UserServiceClient::new(Channel::connect(addr).await.unwrap());
    users.get_user_id("fanly".into()).await.unwrap();

    server.stop();
    let started = Instant::now();
    let err = users.get_user_id("fanly".into()).await.unwrap_err();
    let noticed = started.elapsed();
    println!("a hung server: the waiting call failed after {noticed:.2?} (deadline 30 s)");
    assert!(
        matches!(err, Error::ConnectionClosed { .. }),
        "the keepalive, not the deadline, ends the call: {err}"
    );
    assert_eq!(err.outcome(), Outcome::MaybeRan);

    // A new connection: the hung process's kernel accepts TCP, the handshake never answers.
    // (Its first call may go out behind the hello, so the refusal may come with it.)
    let started = Instant::now();
    let fresh = async {
        let channel = Channel::connect(addr).await?;
        UserServiceClient::new(channel)
            .get_user_id("fanly".into())
            .await
    };
    let err = fresh.await.unwrap_err();
    println!(
        "a hung server: a new connection gave up after {:.2?}",
        started.elapsed()
    );
    assert!(
        matches!(
            err,
            Error::Negotiation(wirecall::NegotiationError::TimedOut)
        ),
        "{err}"
    );

    server.resume();
    let again = Arc::new(users);
    eventually_async("the channel reconnects", || {
        let users = Arc::clone(&again);
        async move { users.get_user_id("fanly".into()).await.is_ok() }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_client_has_its_connection_calls_and_stream_released() {
    let bind = SocketAddr::from(([127, 0, 0, 1], 0));
    let released = released_after_the_client_vanishes(bind, None, Peer::stop).await;
    println!(
        "a vanished client: connection, {OPEN_CALLS} calls and a stream released after \
         {released:.2?}"
    );
}

/// Starts a client process (in `namespace`, if given) that opens [`OPEN_CALLS`] calls and a
/// stream on a server of this process bound to `bind`, silences it with `vanish`, and
/// returns how long the server then took to release its connection, calls and stream.
async fn released_after_the_client_vanishes(
    bind: SocketAddr,
    namespace: Option<&str>,
    vanish: impl FnOnce(&Peer),
) -> Duration {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .serve(FeedServer::new(FeedImpl::default()))
        .bind(bind)
        .await
        .unwrap();
    let mut client = Peer::start_in(namespace, "client", Some(server.local_addr()), None);
    client.line("OPEN");
    eventually_within(
        "the client's calls and stream run on the server",
        Duration::from_secs(10),
        || server.in_flight() > OPEN_CALLS,
    )
    .await;

    vanish(&client);
    let started = Instant::now();
    eventually_within(
        "the server releases the vanished client's connection, calls and stream",
        Duration::from_secs(30),
        || server.connection_count() == 0 && server.in_flight() == 0,
    )
    .await;
    started.elapsed()
}

/// Latencies and failures of the calls made during one phase of the fleet test.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    failures: Vec<(Duration, Error)>,
}

impl Tally {
    fn p99(&mut self) -> Duration {
        self.latencies.sort();
        self.latencies
            .get(self.latencies.len() * 99 / 100)
            .copied()
            .unwrap_or_default()
    }
}

/// Eight callers at about 500 calls/s over a balanced channel, `idempotent` or not, for
/// `before`, then with one of the three servers stopped for `during`: the calls that ended
/// before and during the hang, the endpoints at its end, and the hedges sent before and
/// during it.
async fn fleet_phase(
    idempotent: bool,
    before: Duration,
    during: Duration,
) -> (
    Tally,
    Tally,
    Vec<wirecall::discovery::EndpointStats>,
    [u64; 2],
) {
    let peers: Vec<(Peer, SocketAddr)> = (0..3).map(|_| server_peer()).collect();
    let mut registry = StaticRegistry::new();
    for (_, addr) in &peers {
        registry = registry.endpoint("UserService", addr.to_string());
    }
    let channel = Channel::balanced()
        .discover(&Registry::new(registry), "UserService")
        .await
        .unwrap();
    let users = UserServiceClient::new(channel.clone());
    let hung = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let tallies = Arc::new(Mutex::new((Tally::default(), Tally::default())));
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let (users, hung, stop, tallies) = (
                users.clone(),
                Arc::clone(&hung),
                Arc::clone(&stop),
                Arc::clone(&tallies),
            );
            tokio::spawn(async move {
                let mut pace = tokio::time::interval(Duration::from_millis(16));
                while !stop.load(Ordering::Relaxed) {
                    pace.tick().await;
                    let started = Instant::now();
                    let result = if idempotent {
                        users.get_user(fanly()).await.map(drop)
                    } else {
                        users.get(vec![fanly()]).await.map(drop)
                    };
                    let took = started.elapsed();
                    // By when it ended: a call in flight when the server stopped counts
                    // with the hang.
                    let during = hung.load(Ordering::Relaxed);
                    let mut tallies = tallies.lock().unwrap();
                    let tally = if during {
                        &mut tallies.1
                    } else {
                        &mut tallies.0
                    };
                    match result {
                        Ok(()) => tally.latencies.push(took),
                        Err(err) => tally.failures.push((took, err)),
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(before).await;
    let hedges_before: u64 = channel.endpoints().iter().map(|e| e.hedges).sum();
    peers[0].0.stop();
    hung.store(true, Ordering::Relaxed);
    tokio::time::sleep(during).await;
    let endpoints = channel.endpoints();
    stop.store(true, Ordering::Relaxed);
    peers[0].0.resume();
    for caller in callers {
        caller.await.unwrap();
    }
    let (before, during) = std::mem::take(&mut *tallies.lock().unwrap());
    let hedges_during = endpoints.iter().map(|e| e.hedges).sum::<u64>() - hedges_before;
    println!("hedges: {hedges_before} before the hang, {hedges_during} during it");
    (before, during, endpoints, [hedges_before, hedges_during])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hung_server_of_three_fails_no_idempotent_call() {
    let (before, during) = (Duration::from_secs(2), Duration::from_secs(5));
    let (mut calm, mut hung, endpoints, [hedges_before, _]) =
        fleet_phase(true, before, during).await;
    println!(
        "idempotent, one of three servers hung: calls/s {:.0} before, {:.0} during; p99 {:.2?} \
         before, {:.2?} during; slowest during {:.2?}; failed {}",
        calm.latencies.len() as f64 / before.as_secs_f64(),
        hung.latencies.len() as f64 / during.as_secs_f64(),
        calm.p99(),
        hung.p99(),
        hung.latencies.last().copied().unwrap_or_default(),
        hung.failures.len(),
    );
    assert!(calm.failures.is_empty(), "{:?}", calm.failures);
    // The cost of hedging while every server answers: a share of the calls, at most the
    // retry budget's 20% (plus 10 a second).
    let calls_before = calm.latencies.len() as u64;
    println!(
        "hedges while all three answered: {hedges_before} for {calls_before} calls ({:.2}%)",
        100.0 * hedges_before as f64 / calls_before.max(1) as f64
    );
    assert!(hedges_before <= calls_before / 5 + 10 * before.as_secs() + 10);
    assert!(
        hung.failures.is_empty(),
        "no idempotent call fails while two servers answer: {:?}",
        hung.failures
    );
    assert!(
        endpoints.iter().filter(|e| e.ejected).count() == 1,
        "the hung server left the rotation: {endpoints:?}"
    );
    // Without hedging, the calls caught on the hung server would wait about 2 s for the
    // keepalive to declare its connection dead.
    let slowest = hung.latencies.last().copied().unwrap_or_default();
    assert!(
        slowest < Duration::from_millis(1500),
        "hedges answered the calls the hung server held: the slowest took {slowest:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hung_server_of_three_fails_only_the_calls_it_held_each_as_maybe_ran() {
    let (before, during) = (Duration::from_secs(2), Duration::from_secs(5));
    let (calm, hung, endpoints, hedges) = fleet_phase(false, before, during).await;
    assert_eq!(
        hedges,
        [0, 0],
        "a method that is not idempotent is never hedged"
    );
    let slowest_failure = hung.failures.iter().map(|(took, _)| *took).max();
    println!(
        "not idempotent, one of three servers hung: {} calls answered, {} failed (slowest \
         failure {slowest_failure:.2?})",
        hung.latencies.len(),
        hung.failures.len(),
    );
    assert!(calm.failures.is_empty(), "{:?}", calm.failures);
    for (_, err) in &hung.failures {
        assert_eq!(err.outcome(), Outcome::MaybeRan, "{err}");
    }
    // At most the calls in flight on the hung server when it stopped: one per caller.
    assert!(hung.failures.len() <= 8, "{:?}", hung.failures);
    assert!(
        endpoints.iter().filter(|e| e.ejected).count() == 1,
        "the hung server left the rotation: {endpoints:?}"
    );
}

/// A network namespace joined to this one by a veth pair, with an address on each end; the
/// link can be cut (a silent partition: the namespace's end goes down, and what this side
/// sends is dropped without a word) and healed. Removed when dropped.
struct Partition {
    namespace: String,
    inside: String,
    host_ip: std::net::Ipv4Addr,
    inside_ip: std::net::Ipv4Addr,
}

impl Partition {
    fn new() -> Self {
        // Names unique to this partition of this process (interface names have at most 15
        // bytes), and a /30 of its own in a private range.
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let id = (std::process::id() % 100_000) * 10 + MADE.fetch_add(1, Ordering::Relaxed) % 10;
        let slot = id % 16_384;
        let (third, fourth) = (
            u8::try_from(slot / 64).unwrap(),
            u8::try_from(slot % 64 * 4).unwrap(),
        );
        let partition = Self {
            namespace: format!("wcfl{id}"),
            inside: format!("wcfn{id}"),
            host_ip: std::net::Ipv4Addr::new(10, 213, third, fourth + 1),
            inside_ip: std::net::Ipv4Addr::new(10, 213, third, fourth + 2),
        };
        let host = format!("wcfh{id}");
        let (ns, inside) = (partition.namespace.as_str(), partition.inside.as_str());
        ip(&["netns", "add", ns]);
        ip(&["link", "add", &host, "type", "veth", "peer", "name", inside]);
        ip(&["link", "set", inside, "netns", ns]);
        ip(&[
            "addr",
            "add",
            &format!("{}/30", partition.host_ip),
            "dev",
            &host,
        ]);
        ip(&["link", "set", &host, "up"]);
        let inside_addr = format!("{}/30", partition.inside_ip);
        ip(&[
            "netns",
            "exec",
            ns,
            "ip",
            "addr",
            "add",
            &inside_addr,
            "dev",
            inside,
        ]);
        ip(&["netns", "exec", ns, "ip", "link", "set", inside, "up"]);
        ip(&["netns", "exec", ns, "ip", "link", "set", "lo", "up"]);
        partition
    }

    fn set_link(&self, state: &str) {
        ip(&[
            "netns",
            "exec",
            &self.namespace,
            "ip",
            "link",
            "set",
            &self.inside,
            state,
        ]);
    }

    fn cut(&self) {
        self.set_link("down");
    }

    fn heal(&self) {
        self.set_link("up");
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        // Removing the namespace removes its end of the pair, and with it the other end.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .status();
    }
}

fn ip(args: &[&str]) {
    let status = Command::new("ip")
        .args(args)
        .status()
        .expect("the partition tests need iproute2's `ip`");
    assert!(
        status.success(),
        "ip {} (the partition tests need root)",
        args.join(" ")
    );
}

#[tokio::test]
#[ignore = "needs root (a network namespace); .ci/run runs it"]
async fn a_partitioned_server_fails_the_call_waiting_on_it_long_before_its_deadline() {
    let partition = Partition::new();
    let bind = SocketAddr::from((partition.inside_ip, 0));
    let mut server = Peer::start_in(Some(&partition.namespace), "server", None, Some(bind));
    let addr: SocketAddr = server.line("ADDR ").parse().unwrap();
    let users = UserServiceClient::new(Channel::connect(addr).await.unwrap());
    users.get_user_id("fanly".into()).await.unwrap();

    partition.cut();
    let started = Instant::now();
    let err = users.get_user_id("fanly".into()).await.unwrap_err();
    println!(
        "a partitioned server: the waiting call failed after {:.2?} (deadline 30 s)",
        started.elapsed()
    );
    assert!(
        matches!(err, Error::ConnectionClosed { .. }),
        "the keepalive, not the deadline, ends the call: {err}"
    );
    assert_eq!(err.outcome(), Outcome::MaybeRan);

    partition.heal();
    let again = Arc::new(users);
    eventually_async("the channel reconnects once the link is back", || {
        let users = Arc::clone(&again);
        async move { users.get_user_id("fanly".into()).await.is_ok() }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root (a network namespace); .ci/run runs it"]
async fn a_partitioned_client_has_its_connection_calls_and_stream_released() {
    let partition = Partition::new();
    let bind = SocketAddr::from((partition.host_ip, 0));
    let released =
        released_after_the_client_vanishes(bind, Some(&partition.namespace), |_| partition.cut())
            .await;
    println!(
        "a partitioned client: connection, {OPEN_CALLS} calls and a stream released after \
         {released:.2?}"
    );
}
