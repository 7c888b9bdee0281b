#[wirecall::service]
pub trait Timed {
    #[wirecall(timeout = "0s")]
    async fn zero(&self);
    #[wirecall(timeout = "300")]
    async fn no_unit(&self);
    #[wirecall(timeout = "3us")]
    async fn unknown_unit(&self);
    #[wirecall(timeout = "-1s")]
    async fn negative(&self);
    #[wirecall(timeout = 300)]
    async fn not_a_string(&self);
    #[wirecall(breaker(open = "0ms"))]
    async fn zero_open_window(&self);
}

fn main() {}
