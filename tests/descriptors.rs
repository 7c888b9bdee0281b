//! Running out of file descriptors: the server's `accept` fails with EMFILE. The accept loop
//! must pause instead of spinning, log once rather than per failure, keep serving the
//! connections it has, and accept again once descriptors are free.
//!
//! The server runs in a child process (this test binary, re-run with only the ignored
//! `descriptor_starved_server` test) whose open-file limit is lowered to
//! [`CHILD_FILE_LIMIT`], so that this process's own descriptors are not involved.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use tokio::net::TcpStream;
use wirecall::{Channel, Server};

/// The child's soft open-file limit.
const CHILD_FILE_LIMIT: u64 = 64;
/// More connections than the child can hold.
const FLOOD: usize = 2 * CHILD_FILE_LIMIT as usize;
const SOON: Duration = Duration::from_secs(10);
const CHILD_ENV: &str = "WIRECALL_DESCRIPTOR_CHILD";

/// Not a test on its own: the server process of `accept_pauses_when_descriptors_run_out`.
#[test]
#[ignore = "child process of accept_pauses_when_descriptors_run_out"]
fn descriptor_starved_server() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "run by accept_pauses_when_descriptors_run_out only"
    );
    rlimit::setrlimit(rlimit::Resource::NOFILE, CHILD_FILE_LIMIT, CHILD_FILE_LIMIT)
        .expect("lower the open-file limit");
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("wirecall_runtime=info")
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = Server::builder()
            .serve(LabServer::new(std::sync::Arc::new(LabImpl::default())))
            // Above what the descriptors allow, so that `accept` itself fails.
            .max_connections(10_000)
            // Connections that never send a hello hold their descriptor until closed.
            .handshake_timeout(Duration::from_secs(120))
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        println!("ADDR {}", server.local_addr());
        std::io::stdout().flush().unwrap();
        // Serve until the parent closes our stdin.
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await
        .unwrap();
        server.shutdown_within(Duration::from_secs(1)).await;
    });
}

/// CPU time (user + system) the process has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses and may contain spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn ticks_per_second() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_pauses_when_descriptors_run_out() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "descriptor_starved_server",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("the child prints its address").unwrap();
        if let Some(addr) = line.strip_prefix("ADDR ") {
            break addr.parse::<std::net::SocketAddr>().unwrap();
        }
    };

    // A working connection, opened before the descriptors run out.
    let lab = LabClient::connect(addr).await.unwrap();
    assert_eq!(lab.add(40, 2).await.unwrap(), 42);

    // Silent connections until the child cannot accept any more: the kernel completes the
    // TCP handshakes, and the surplus waits in the listen backlog.
    let mut flood = Vec::new();
    for _ in 0..FLOOD {
        flood.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The server is known to understand early calls, so `connect` may return before the
    // server hello would have arrived: then the first call fails in its place.
    let refused = async {
        let channel = Channel::builder()
            .connect_timeout(Duration::from_millis(500))
            .connect(addr)
            .await?;
        LabClient::new(channel).add(1, 1).await
    }
    .await;
    assert!(
        refused.is_err(),
        "a new connection cannot be served while descriptors are exhausted"
    );

    // While exhausted: little CPU, and the open connection still works.
    let before = cpu_ticks(child.id());
    let window = Instant::now();
    for round in 0..10 {
        assert_eq!(lab.add(round, 1).await.unwrap(), round + 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let used = Duration::from_secs_f64(
        (cpu_ticks(child.id()) - before) as f64 / ticks_per_second() as f64,
    );
    let elapsed = window.elapsed();
    assert!(
        used < elapsed / 5,
        "the starved server used {used:?} of CPU in {elapsed:?}"
    );

    // Free the descriptors: new connections are accepted again.
    drop(flood);
    let started = Instant::now();
    let recovered = loop {
        match Channel::builder()
            .connect_timeout(Duration::from_secs(1))
            .connect(addr)
            .await
        {
            Ok(channel) => break channel,
            Err(err) => assert!(
                started.elapsed() < SOON,
                "no new connection within {SOON:?} after descriptors were freed: {err}"
            ),
        }
    };
    assert_eq!(LabClient::new(recovered).add(1, 1).await.unwrap(), 2);

    drop(child.stdin.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{stderr}");
    let failure_lines = stderr.matches("accept failed").count();
    assert!(
        (1..=2).contains(&failure_lines),
        "one log line per 10 s while accept fails, not one per failure; got {failure_lines}:\n{stderr}"
    );
}
