#[wirecall::service]
pub trait Limits {
    const MAX: u32;
    async fn max(&self) -> u32;
}

fn main() {}
