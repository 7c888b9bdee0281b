//! Services and helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use wirecall::{Codec, RunningServer, Server};

pub use wirecall_test_support::*;

/// Methods with behaviour the failure tests need.
#[wirecall::service]
pub trait Lab {
    async fn add(&self, a: i64, b: i64) -> i64;
    async fn sleep_ms(&self, ms: u64) -> u64;
    /// Runs until the test lets it go with [`LabImpl::release`].
    async fn hold(&self);
    async fn panic_now(&self, message: String) -> u32;
    #[oneway]
    async fn record(&self, value: u64);
    async fn recorded(&self) -> u64;
    async fn nothing(&self);
    async fn check(&self, value: i32) -> Result<(), String>;
    async fn blob(&self, len: u32) -> Vec<u8>;
}

pub struct LabImpl {
    pub recorded: AtomicU64,
    /// The `sleep_ms` calls.
    pub sleeps: Progress,
    /// The `hold` calls.
    pub holds: Progress,
    /// One permit lets one `hold` call finish.
    gate: Semaphore,
}

impl Default for LabImpl {
    fn default() -> Self {
        Self {
            recorded: AtomicU64::new(0),
            sleeps: Progress::default(),
            holds: Progress::default(),
            gate: Semaphore::new(0),
        }
    }
}

impl LabImpl {
    /// Lets `calls` of the `hold` calls (running now or still to come) finish.
    pub fn release(&self, calls: usize) {
        self.gate.add_permits(calls);
    }
}

/// How many calls of one handler started, finished, and stopped before they finished
/// (cancelled, past their deadline, or aborted). A test that stops a call waits until the call
/// has started, so that a call that never reached its handler cannot pass for a stopped one.
#[derive(Default)]
pub struct Progress {
    started: AtomicU64,
    finished: AtomicU64,
    stopped: AtomicU64,
}

impl Progress {
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    pub fn finished(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    pub fn stopped(&self) -> u64 {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Counts a call as started; it counts as stopped unless [`Running::finish`] is called
    /// before the handler's future is dropped.
    fn start(&self) -> Running<'_> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Running {
            progress: self,
            finished: false,
        }
    }
}

struct Running<'a> {
    progress: &'a Progress,
    finished: bool,
}

impl Running<'_> {
    fn finish(mut self) {
        self.finished = true;
        self.progress.finished.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.progress.stopped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Lab for Arc<LabImpl> {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    async fn sleep_ms(&self, ms: u64) -> u64 {
        let running = self.sleeps.start();
        tokio::time::sleep(Duration::from_millis(ms)).await;
        running.finish();
        ms
    }
    async fn hold(&self) {
        let running = self.holds.start();
        // The semaphore is never closed.
        self.gate
            .acquire()
            .await
            .expect("the gate is open")
            .forget();
        running.finish();
    }
    async fn panic_now(&self, message: String) -> u32 {
        panic!("{message}")
    }
    async fn record(&self, value: u64) {
        self.recorded.fetch_add(value, Ordering::SeqCst);
    }
    async fn recorded(&self) -> u64 {
        self.recorded.load(Ordering::SeqCst)
    }
    async fn nothing(&self) {}
    async fn check(&self, value: i32) -> Result<(), String> {
        if value >= 0 {
            Ok(())
        } else {
            Err(format!("{value} is negative"))
        }
    }
    async fn blob(&self, len: u32) -> Vec<u8> {
        vec![7; len as usize]
    }
}

/// A server with both services and every codec, on a free port.
pub async fn start_server() -> (RunningServer, Arc<LabImpl>) {
    let lab = Arc::new(LabImpl::default());
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .serve(LabServer::new(Arc::clone(&lab)))
        .bind("127.0.0.1:0")
        .await
        .expect("server binds");
    (server, lab)
}

pub const CODECS: [Codec; 3] = [Codec::Json, Codec::MessagePack, Codec::Protobuf];
