#[wirecall::events]
pub trait UserEvents {
    fn not_async(&self, id: u64);
    async fn returns_a_value(&self, id: u64) -> u64;
    async fn result_with_a_value(&self, id: u64) -> Result<u64, String>;
    async fn takes_self(self, id: u64);
    async fn takes_mut_self(&mut self, id: u64);
    async fn takes_a_reference(&self, name: &str);
}

fn main() {}
