// Every field travels in every codec; each way of skipping one is refused.
#[wirecall::message]
pub struct Session {
    #[serde(skip)]
    pub cache: Vec<u8>,
    #[serde(skip_serializing)]
    pub token: String,
    #[serde(skip_deserializing)]
    pub seen: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[wirecall::message]
pub enum Step {
    Run(u32),
    #[serde(skip)]
    Internal,
}

fn main() {}
