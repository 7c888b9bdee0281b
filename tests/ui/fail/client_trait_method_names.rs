// Methods named like a method of the generated client's traits would shadow it.
#[wirecall::service]
pub trait Copier {
    async fn clone(&self) -> u32;
    async fn fmt(&self) -> String;
}

fn main() {}
