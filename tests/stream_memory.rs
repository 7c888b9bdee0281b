//! A million items through one server stream, server and client in separate processes, with
//! the peak resident memory of each checked against a bound: credit flow control keeps what
//! either side buffers to one window, however long the stream.
//!
//! The server runs in a child process (this test binary, re-run with only the ignored
//! `stream_memory_server` test), so that each process's peak (`VmHWM`) is its own. The
//! bound, [`PEAK_RSS_BOUND`], is what the book's Streaming chapter states; the figures
//! measured are printed.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use futures::StreamExt;
use wirecall::{Channel, Codec, Server};
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer};

const ITEMS: u64 = 1_000_000;
/// The bound on each process's peak resident memory. A debug-build test process that has
/// connected, negotiated and served a stream sits around 10 to 20 MiB; a stream that buffered
/// its items would need tens of MiB more for a million of them (at least 8 bytes an item,
/// and a frame of 30 bytes each on the wire).
const PEAK_RSS_BOUND: u64 = 48 * 1024 * 1024;
const CHILD_ENV: &str = "WIRECALL_STREAM_MEMORY_CHILD";

/// This process's peak resident set, from `/proc/self/status`.
fn peak_rss(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/<pid>/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmHWM in kB");
    kib * 1024
}

/// Not a test on its own: the server process of `a_million_items_stream_in_bounded_memory`.
#[test]
#[ignore = "child process of a_million_items_stream_in_bounded_memory"]
fn stream_memory_server() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "run by a_million_items_stream_in_bounded_memory only"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = Server::builder()
            .serve(FeedServer::new(FeedImpl::default()))
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        println!("ADDR {}", server.local_addr());
        std::io::stdout().flush().unwrap();
        // Serve until the parent closes our stdin, then report the peak.
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await
        .unwrap();
        println!("PEAK {}", peak_rss("self"));
        std::io::stdout().flush().unwrap();
        server.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_million_items_stream_in_bounded_memory() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stream_memory_server",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("the child prints its address").unwrap();
        if let Some(addr) = line.strip_prefix("ADDR ") {
            break addr.parse::<std::net::SocketAddr>().unwrap();
        }
    };
    let feed = FeedClient::new(
        Channel::builder()
            .codec(Codec::MessagePack)
            .without_timeout()
            .connect(addr)
            .await
            .unwrap(),
    );
    let started = Instant::now();
    let mut numbers = feed.numbers(ITEMS).await.unwrap();
    let mut expected = 0;
    while let Some(n) = numbers.next().await {
        assert_eq!(n.unwrap(), expected);
        expected += 1;
    }
    assert_eq!(expected, ITEMS, "every item arrived, in order");
    let elapsed = started.elapsed();
    let client_peak = peak_rss("self");

    drop(child.stdin.take());
    let server_peak = loop {
        let line = lines.next().expect("the child reports its peak").unwrap();
        if let Some(peak) = line.strip_prefix("PEAK ") {
            break peak.parse::<u64>().unwrap();
        }
    };
    assert!(child.wait().unwrap().success());
    println!(
        "{ITEMS} items in {elapsed:.2?} ({:.0} items/s); peak RSS: client {:.1} MiB, server {:.1} MiB",
        ITEMS as f64 / elapsed.as_secs_f64(),
        client_peak as f64 / 1048576.0,
        server_peak as f64 / 1048576.0,
    );
    for (side, peak) in [("client", client_peak), ("server", server_peak)] {
        assert!(
            peak < PEAK_RSS_BOUND,
            "the {side}'s peak RSS is {peak} bytes, over the bound of {PEAK_RSS_BOUND}"
        );
    }
}
