// A type without #[wirecall::message] is reported on the type and on the method that carries
// it, naming the fix.
pub enum Color {
    Red,
    Green,
}

pub struct Point {
    pub x: i32,
}

#[wirecall::message]
pub struct Pixel {
    pub color: Color,
}

#[wirecall::service]
pub trait Paint {
    async fn fill(&self, at: Point) -> bool;
}

fn main() {}
