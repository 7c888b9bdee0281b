//! Every policy key, on methods and on the trait, compiles; the declared policies show in
//! the schema.

use std::time::Duration;

#[wirecall::message]
#[derive(Clone)]
pub struct Query {
    pub text: String,
}

async fn cached(error: wirecall::Error, query: Query) -> Result<Vec<String>, wirecall::Error> {
    let _ = error;
    Ok(vec![query.text])
}

mod fallbacks {
    pub struct Defaults;

    impl Defaults {
        pub async fn count(_error: wirecall::Error) -> Result<u64, wirecall::Error> {
            Ok(0)
        }
    }
}

#[wirecall::service]
#[wirecall(timeout = "1s", concurrency = 100, retries = 1)]
pub trait Search {
    #[wirecall(timeout = "300ms", concurrency = 50, breaker, fallback = cached)]
    async fn find(&self, query: Query) -> Vec<String>;
    #[idempotent]
    #[wirecall(retries = 2)]
    #[wirecall(breaker(window = "20s", buckets = 20, min_calls = 10, threshold = 25, open = "2s", trials = 1))]
    async fn count(&self) -> u64;
    #[idempotent]
    #[wirecall(breaker = false, fallback = fallbacks::Defaults::count)]
    async fn total(&self) -> u64;
    #[oneway]
    async fn log(&self, line: String);
}

struct Engine;

impl Search for Engine {
    async fn find(&self, query: Query) -> Vec<String> {
        vec![query.text]
    }
    async fn count(&self) -> u64 {
        1
    }
    async fn total(&self) -> u64 {
        2
    }
    async fn log(&self, _line: String) {}
}

fn main() {
    use wirecall::Service as _;

    let schema = SearchServer::new(Engine).schema();
    let policy = |name: &str| {
        let method = schema.methods.iter().find(|m| m.name == name).unwrap();
        method.policy.clone()
    };
    assert_eq!(policy("find"), "timeout=300ms concurrency=50 breaker=on");
    // The trait's `retries` apply to idempotent methods only.
    assert_eq!(
        policy("count"),
        "timeout=1s retries=2 concurrency=100 breaker=on breaker.window=20s breaker.buckets=20 \
         breaker.min_calls=10 breaker.threshold=25 breaker.open=2s breaker.trials=1"
    );
    assert_eq!(policy("total"), "timeout=1s retries=1 concurrency=100 breaker=off");
    assert_eq!(policy("log"), "");
    let _ = Duration::from_secs(1);
}
