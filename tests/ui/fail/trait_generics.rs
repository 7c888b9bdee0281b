#[wirecall::service]
pub trait Cache<K>: Clone {
    async fn size(&self) -> u64;
}

fn main() {}
