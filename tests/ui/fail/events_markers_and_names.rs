#[wirecall::events]
pub trait UserEvents {
    #[oneway]
    async fn created(&self, id: u64);
    #[idempotent]
    async fn deleted(&self, id: u64);
    async fn new(&self, id: u64);
    async fn with_codec(&self, id: u64);
}

fn main() {}
