#[wirecall::service]
pub trait Counter {
    async fn increment(&mut self) -> u64;
}

fn main() {}
