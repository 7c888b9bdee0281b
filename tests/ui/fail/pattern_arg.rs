#[wirecall::service]
pub trait Geometry {
    async fn area(&self, (width, height): (u32, u32)) -> u64;
}

fn main() {}
