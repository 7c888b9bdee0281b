#[wirecall::service]
pub trait Network {
    async fn connect(&self, host: String) -> bool;
    async fn codec(&self) -> String;
}

fn main() {}
