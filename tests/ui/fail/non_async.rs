#[wirecall::service]
pub trait Clock {
    fn now(&self) -> u64;
}

fn main() {}
