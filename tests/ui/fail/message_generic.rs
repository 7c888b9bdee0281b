#[wirecall::message]
pub struct Page<T> {
    pub items: Vec<T>,
}

fn main() {}
