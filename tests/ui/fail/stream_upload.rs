use wirecall::Streaming;

#[wirecall::service]
pub trait Uploads {
    /// Two uploads in one call.
    async fn store(&self, chunks: Streaming<Vec<u8>>, more: Streaming<Vec<u8>>) -> u64;
    /// An upload cannot be one-way.
    #[oneway]
    async fn push(&self, chunks: Streaming<Vec<u8>>);
    /// Nor sent again.
    #[idempotent]
    #[wirecall(retries = 2)]
    async fn replayed(&self, chunks: Streaming<Vec<u8>>) -> u64;
}

#[wirecall::events]
pub trait Happenings {
    /// An event carries values.
    async fn uploaded(&self, chunks: Streaming<Vec<u8>>);
}

fn main() {}
