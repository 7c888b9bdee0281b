// serde's catch-all is spelled `#[wirecall(other)]` on a message.
#[wirecall::message]
pub enum Event {
    Started(u64),
    #[serde(other)]
    Unknown,
}

fn main() {}
