#[wirecall::message]
#[serde(deny_unknown_fields)]
pub struct Ping {
    pub count: u32,
}

fn main() {}
