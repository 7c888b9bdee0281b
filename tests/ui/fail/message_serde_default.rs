// Missing struct fields already take their defaults; variant fields are read by serde's
// derive, which needs them all. Both are told so.
#[wirecall::message]
#[serde(default)]
pub struct Page {
    #[serde(default = "twenty")]
    pub size: u32,
}

#[wirecall::message]
pub enum Query {
    ById {
        #[serde(default)]
        id: u64,
    },
}

fn twenty() -> u32 {
    20
}

fn main() {}
