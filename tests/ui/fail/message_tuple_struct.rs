#[wirecall::message]
pub struct Point(u32, u32);

fn main() {}
