#[wirecall::message]
pub struct Pixel {
    pub red: u8,
    pub alpha: i16,
    pub name: String,
}

fn main() {}
