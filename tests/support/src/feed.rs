//! The `Feed` fixture: a service of server streams, for the streaming tests and the
//! benchmark's stream cells. Its producer counts what it made and notices when it is
//! dropped, so a test can see flow control and cancellation from the server's side.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use wirecall::Streaming;

/// One item of a feed with a body.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct Tick {
    /// The item's number, from 0.
    pub n: u64,
    /// A body of the requested size.
    pub body: Bytes,
}

/// The application error a feed ends with.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct Refused {
    /// Why.
    pub reason: String,
}

/// Server streams of every kind of item, and a unary method beside them.
#[wirecall::service]
pub trait Feed {
    /// `0..count`.
    async fn numbers(&self, count: u64) -> Streaming<u64>;
    /// `count` ticks with `body_len`-byte bodies; with `fail_at < count`, the item at
    /// `fail_at` is `Err(Refused)`, the last.
    async fn ticks(
        &self,
        count: u64,
        body_len: u32,
        fail_at: u64,
    ) -> Streaming<Result<Tick, Refused>>;
    /// 0, 1, 2, ... until the caller stops it.
    async fn endless(&self) -> Streaming<u64>;
    /// `0..after`, then a panic.
    async fn panics_after(&self, after: u64) -> Streaming<u64>;
    /// A unary call on the same connection.
    async fn add(&self, a: u64, b: u64) -> u64;
    /// The sum of the uploaded numbers (client streaming).
    async fn sum(&self, numbers: Streaming<u64>) -> u64;
    /// The running sum of the uploaded numbers, answered as soon as it passes `limit` (with
    /// `Refused`, the rest of the upload unread), or at the upload's end.
    async fn sum_until(&self, limit: u64, numbers: Streaming<u64>) -> Result<u64, Refused>;
    /// Each uploaded tick back, its number doubled (bidirectional).
    async fn doubled(&self, ticks: Streaming<Tick>) -> Streaming<Tick>;
}

/// What the feed's producers did, as the tests watch it.
#[derive(Default)]
pub struct FeedStats {
    /// Items produced by `endless` (taken by the server from the producer).
    pub produced: AtomicU64,
    /// How many `endless` producers were dropped.
    pub dropped: AtomicU64,
    /// Whether a producer is running.
    pub running: AtomicBool,
}

/// The `Feed` implementation.
#[derive(Clone, Default)]
pub struct FeedImpl {
    /// Shared with the test.
    pub stats: Arc<FeedStats>,
}

/// Counts the producer out when the server drops it.
struct DropGuard(Arc<FeedStats>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.running.store(false, Ordering::SeqCst);
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

impl Feed for FeedImpl {
    async fn numbers(&self, count: u64) -> Streaming<u64> {
        Streaming::from_iter(0..count)
    }

    async fn ticks(
        &self,
        count: u64,
        body_len: u32,
        fail_at: u64,
    ) -> Streaming<Result<Tick, Refused>> {
        let body = Bytes::from(vec![7u8; body_len as usize]);
        Streaming::from_iter((0..count).map(move |n| {
            if n == fail_at {
                Err(Refused {
                    reason: format!("item {n} refused"),
                })
            } else {
                Ok(Tick {
                    n,
                    body: body.clone(),
                })
            }
        }))
    }

    async fn endless(&self) -> Streaming<u64> {
        let stats = Arc::clone(&self.stats);
        stats.running.store(true, Ordering::SeqCst);
        let guard = DropGuard(Arc::clone(&stats));
        Streaming::new(counting(stats, guard))
    }

    async fn panics_after(&self, after: u64) -> Streaming<u64> {
        Streaming::from_iter((0..=after).inspect(move |&n| {
            if n == after {
                panic!("feed panicked after {after} items");
            }
        }))
    }

    async fn add(&self, a: u64, b: u64) -> u64 {
        a + b
    }

    async fn sum(&self, numbers: Streaming<u64>) -> u64 {
        numbers.fold(0, |sum, n| async move { sum + n }).await
    }

    async fn sum_until(&self, limit: u64, mut numbers: Streaming<u64>) -> Result<u64, Refused> {
        let mut sum = 0;
        while let Some(n) = numbers.next().await {
            sum += n;
            if sum > limit {
                return Err(Refused {
                    reason: format!("the sum passed {limit}"),
                });
            }
        }
        Ok(sum)
    }

    async fn doubled(&self, ticks: Streaming<Tick>) -> Streaming<Tick> {
        Streaming::new(ticks.map(|tick| Tick {
            n: tick.n * 2,
            body: tick.body,
        }))
    }
}

/// 0, 1, 2, ... counting each item into `stats`; `guard` lives as long as the stream.
fn counting(
    stats: Arc<FeedStats>,
    guard: DropGuard,
) -> impl futures::Stream<Item = u64> + Send + 'static {
    futures::stream::unfold((stats, guard), |(stats, guard)| async move {
        let n = stats.produced.fetch_add(1, Ordering::SeqCst);
        Some((n, (stats, guard)))
    })
}
