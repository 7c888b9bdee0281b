#[wirecall::message]
pub enum Shape {
    Circle(u32),
    Square(u32),
}

fn main() {}
