use wirecall::Streaming;

#[wirecall::service]
pub trait Uploads {
    async fn store(&self, chunks: Streaming<Vec<u8>>) -> u64;
}

fn main() {}
