// The path to serde comes from the macro's own `crate = "..."` argument.
#[wirecall::message]
#[serde(crate = "my_serde")]
pub struct Ping {
    pub count: u32,
}

fn main() {}
