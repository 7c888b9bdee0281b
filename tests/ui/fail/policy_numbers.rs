#[wirecall::service]
pub trait Counted {
    #[wirecall(concurrency = 0)]
    async fn no_concurrency(&self);
    #[idempotent]
    #[wirecall(retries = -1)]
    async fn negative_retries(&self);
    #[wirecall(breaker(min_calls = 0, trials = 0))]
    async fn zero_breaker_counts(&self);
    #[wirecall(breaker(threshold = 150))]
    async fn threshold_over_100(&self);
}

fn main() {}
