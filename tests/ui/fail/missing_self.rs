#[wirecall::service]
pub trait Math {
    async fn add(a: u32, b: u32) -> u32;
}

fn main() {}
