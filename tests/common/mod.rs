//! Services and helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wirecall::{Codec, RunningServer, Server};

pub use wirecall_test_support::*;

/// Methods with behaviour the failure tests need.
#[wirecall::service]
pub trait Lab {
    async fn add(&self, a: i64, b: i64) -> i64;
    async fn sleep_ms(&self, ms: u64) -> u64;
    async fn panic_now(&self, message: String) -> u32;
    #[oneway]
    async fn record(&self, value: u64);
    async fn recorded(&self) -> u64;
    async fn nothing(&self);
    async fn check(&self, value: i32) -> Result<(), String>;
    async fn blob(&self, len: u32) -> Vec<u8>;
}

#[derive(Default)]
pub struct LabImpl {
    pub recorded: AtomicU64,
    pub finished_sleeps: AtomicU64,
}

impl Lab for Arc<LabImpl> {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    async fn sleep_ms(&self, ms: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.finished_sleeps.fetch_add(1, Ordering::SeqCst);
        ms
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
