//! Every item shape of a server stream compiles, beside unary methods, in a user crate.
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
    async fn unary(&self) -> u64;
}

fn main() {}
