// Any other serde key, an unreadable one and one inside `cfg_attr` are refused too.
#[wirecall::message]
pub struct Reading {
    #[serde(with = "my_format")]
    pub value: u64,
    #[serde]
    pub unit: String,
    #[cfg_attr(test, serde(rename = "ts"))]
    pub at: u64,
}

fn main() {}
