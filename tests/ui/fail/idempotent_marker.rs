#[wirecall::service]
pub trait Events {
    #[oneway]
    #[idempotent]
    async fn publish(&self, topic: String);
    #[idempotent(always)]
    async fn read(&self, topic: String) -> String;
}

fn main() {}
