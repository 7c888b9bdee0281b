#[wirecall::service]
pub trait Orders {
    #[wirecall(retries = 2)]
    async fn place(&self, item: String) -> u64;
}

fn main() {}
