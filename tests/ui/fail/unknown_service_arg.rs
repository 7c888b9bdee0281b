#[wirecall::service(version = "2")]
pub trait Versioned {
    async fn get(&self) -> u32;
}

fn main() {}
