#[wirecall::service]
pub trait Ports {
    async fn open(&self, port: u16) -> bool;
}

fn main() {}
