#[wirecall::message]
pub struct Ticket {
    pub id: u64,
}

/// Takes the arguments but returns the wrong type.
async fn wrong_reply(_error: wirecall::Error, _ticket: Ticket) -> Result<String, wirecall::Error> {
    Ok(String::new())
}

#[wirecall::service]
pub trait Desk {
    // `Ticket` is not `Clone`: the fallback needs its own copy of the arguments.
    #[wirecall(fallback = wrong_reply)]
    async fn open(&self, ticket: Ticket) -> u64;
}

fn main() {}
