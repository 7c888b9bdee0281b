// `rename_all` on a message compiled, and over JSON its renamed fields arrived as defaults
// (the writer wrote `userId`, the reader looked for `user_id`): now refused.
#[wirecall::message]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub user_id: u64,
    pub display_name: String,
}

fn main() {}
