#[wirecall::message]
pub struct User {
    #[serde(alias = "id")]
    pub user_id: u64,
}

#[wirecall::message]
pub enum Role {
    #[serde(alias = "Visitor")]
    Guest,
}

fn main() {}
