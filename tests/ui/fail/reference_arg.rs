#[wirecall::service]
pub trait Greeter {
    async fn hello(&self, name: &str) -> String;
    async fn sum(&self, values: &[u32]) -> u32;
}

fn main() {}
