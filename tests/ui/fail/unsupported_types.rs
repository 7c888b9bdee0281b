#[wirecall::service]
pub trait Odd {
    async fn size(&self, len: usize);
    async fn pair(&self, pair: (u32, u32));
    async fn maybe_list(&self, items: Option<Vec<u32>>);
    async fn holes(&self, items: Vec<Option<u32>>);
    async fn grid(&self) -> Vec<Vec<u32>>;
    async fn fixed(&self, key: [u8; 32]);
    async fn letter(&self) -> char;
}

fn main() {}
