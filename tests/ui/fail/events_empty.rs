#[wirecall::events]
pub trait NothingHappens {}

fn main() {}
