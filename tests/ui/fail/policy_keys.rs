#[wirecall::service]
pub trait Keys {
    #[wirecall(deadline = "1s")]
    async fn unknown_key(&self);
    #[wirecall(breaker(half_open = 2))]
    async fn unknown_breaker_setting(&self);
    #[wirecall(timeout = "1s", timeout = "2s")]
    async fn twice(&self);
}

fn main() {}
