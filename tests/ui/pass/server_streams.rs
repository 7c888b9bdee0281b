//! Every stream shape compiles, beside unary methods, in a user crate: server streams of
//! each item shape, client streams of each reply shape, and bidirectional streams.
use wirecall::Streaming;

#[wirecall::message]
pub struct Point {
    pub x: i32,
}

#[wirecall::service]
pub trait Feeds {
    async fn values(&self, from: u64) -> Streaming<u64>;
    async fn points(&self) -> wirecall::Streaming<Point>;
    async fn results(&self) -> Streaming<Result<Point, String>>;
    async fn count(&self, points: Streaming<Point>) -> u64;
    async fn store(&self, name: String, points: Streaming<Point>, tag: u32);
    async fn check(&self, points: Streaming<Point>) -> Result<(), String>;
    async fn checked(&self, points: Streaming<Point>) -> Result<u64, String>;
    async fn echo(&self, points: Streaming<Point>) -> Streaming<Point>;
    async fn unary(&self) -> u64;
}

fn main() {}
