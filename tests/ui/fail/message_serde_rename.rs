// A serde rename would change the JSON name on one side only: refused on the attribute.
#[wirecall::message]
pub struct User {
    #[serde(rename = "userId")]
    pub user_id: u64,
}

fn main() {}
