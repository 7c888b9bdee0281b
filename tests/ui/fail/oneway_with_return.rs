#[wirecall::service]
pub trait Events {
    #[oneway]
    async fn publish(&self, topic: String) -> bool;
}

fn main() {}
