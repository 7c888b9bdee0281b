//! What one open stream costs: a thousand endless streams on one connection, client and
//! server in this process, each with its window full and its producer waiting; the resident
//! memory they add, per stream, against a bound. A test binary of its own, so that no other
//! test's memory moves the figure.
#![cfg(target_os = "linux")]

use futures::StreamExt;
use wirecall::{Channel, Codec, Server};
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer};

/// This process's current resident set.
fn rss(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/<pid>/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// What one open stream costs both sides together: a thousand endless streams of `u64`
/// items on one connection, each with its window (32 items) full and its producer waiting.
const STREAM_BYTES_BOUND: u64 = 64 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_open_stream_costs_a_few_kilobytes_on_both_sides() {
    const STREAMS: u64 = 1_000;
    let feed_impl = FeedImpl::default();
    let stats = std::sync::Arc::clone(&feed_impl.stats);
    let server = Server::builder()
        .serve(FeedServer::new(feed_impl))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let feed = FeedClient::new(
        Channel::builder()
            .codec(Codec::MessagePack)
            .without_timeout()
            .connect(server.local_addr())
            .await
            .unwrap(),
    );
    // Warm up the connection and the allocator with one stream first.
    let mut first = feed.endless().await.unwrap();
    first.next().await.unwrap().unwrap();
    let before = rss("self");
    let mut streams = Vec::new();
    for _ in 0..STREAMS {
        streams.push(feed.endless().await.unwrap());
    }
    // Every window full: each producer has made its 32 items and one more it holds.
    let produced = || stats.produced.load(std::sync::atomic::Ordering::SeqCst);
    wirecall_test_support::eventually_within(
        "every stream's window fills",
        std::time::Duration::from_secs(60),
        || produced() > (STREAMS + 1) * 32,
    )
    .await;
    let per_stream = rss("self").saturating_sub(before) / STREAMS;
    println!("one open stream with a full window: {per_stream} bytes, client and server together");
    assert!(
        per_stream < STREAM_BYTES_BOUND,
        "an open stream costs {per_stream} bytes, over the bound of {STREAM_BYTES_BOUND}"
    );
    drop((first, streams));
    server.shutdown().await;
}
