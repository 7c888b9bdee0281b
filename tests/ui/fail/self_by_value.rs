#[wirecall::service]
pub trait Counter {
    async fn consume(self) -> u64;
}

fn main() {}
