async fn fallback(_error: wirecall::Error) -> Result<(), wirecall::Error> {
    Ok(())
}

#[wirecall::service]
#[wirecall(fallback = fallback)]
pub trait Feed {
    #[oneway]
    #[wirecall(timeout = "1s")]
    async fn post(&self, text: String);
}

fn main() {}
