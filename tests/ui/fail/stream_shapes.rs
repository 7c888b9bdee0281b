use wirecall::Streaming;

#[wirecall::service]
pub trait Feeds {
    async fn nothing(&self) -> Streaming<()>;
    async fn nested(&self) -> Streaming<Streaming<u64>>;
    #[oneway]
    async fn fire(&self) -> Streaming<u64>;
    #[idempotent]
    #[wirecall(retries = 2)]
    async fn retried(&self) -> Streaming<u64>;
}

fn main() {}
