#[wirecall::service]
pub trait Repository {
    type Item;
    async fn count(&self) -> u64;
}

fn main() {}
