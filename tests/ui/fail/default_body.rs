#[wirecall::service]
pub trait Health {
    async fn ping(&self) -> bool {
        true
    }
}

fn main() {}
