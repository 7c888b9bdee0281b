#[wirecall::service]
pub trait Counted {
    #[wirecall(concurrency = 0)]
    async fn no_concurrency(&self);
    #[idempotent]
    #[wirecall(retries = -1)]
    async fn negative_retries(&self);
    // Each key refused at 0 says why 0 does not work for it.
    #[wirecall(breaker(min_calls = 0, trials = 0, buckets = 0))]
    async fn zero_breaker_counts(&self);
    #[wirecall(breaker(threshold = 150))]
    async fn threshold_over_100(&self);
}

fn main() {}
