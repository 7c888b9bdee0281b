pub struct Opaque;

#[wirecall::events]
pub trait UserEvents {
    async fn created(&self, id: u64) -> Result<(), Opaque>;
}

fn main() {}
