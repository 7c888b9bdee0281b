#[wirecall::message]
pub struct Meta {
    pub created: u64,
}

#[wirecall::message]
pub struct Document {
    pub title: String,
    #[serde(flatten)]
    pub meta: Meta,
}

fn main() {}
