#[wirecall::service]
pub trait Orders {
    #[wirecall(hedge)]
    async fn place(&self, item: String) -> u64;

    #[idempotent]
    #[wirecall(hedge(max = 1))]
    async fn find(&self, id: u64) -> String;

    #[idempotent]
    #[wirecall(hedge(delay = "20ms", copies = 2))]
    async fn list(&self) -> Vec<String>;

    #[idempotent]
    #[wirecall(hedge = false)]
    async fn watch(&self) -> wirecall::Streaming<u64>;
}

fn main() {}
