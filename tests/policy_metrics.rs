//! What per-method policies count, through the `metrics` facade into a Prometheus recorder:
//! retries, fallbacks taken, calls refused by the concurrency limit, and the changes of state
//! of a policy's breaker, labelled with the endpoint it guards. One test in this binary: the
//! recorder is global to the process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::sync::Semaphore;
use tower::util::BoxLayer;
use tower::Service as _;
use wirecall::server::{Reply, Request};
use wirecall::{BoxError, CallError, Error, Next, Server};
use wirecall_test_support::{eventually, quiet_panics_starting_with};

#[wirecall::service]
trait Metered {
    /// Refused by the server's layer the first two times.
    #[idempotent]
    #[wirecall(retries = 2)]
    async fn retried(&self) -> u64;
    /// Waits until the test lets it go.
    #[wirecall(concurrency = 1)]
    async fn hold(&self);
    /// Always fails (the handler panics); its breaker opens after 2 calls, and the fallback
    /// answers from then on.
    #[wirecall(breaker(min_calls = 2, open = "60s"), fallback = zero)]
    async fn broken(&self) -> u64;
}

async fn zero(error: Error) -> Result<u64, Error> {
    assert!(matches!(error, Error::CircuitOpen { .. }), "{error}");
    Ok(0)
}

#[derive(Clone)]
struct Handler {
    holding: Arc<AtomicU64>,
    gate: Arc<Semaphore>,
}

impl Metered for Handler {
    async fn retried(&self) -> u64 {
        1
    }

    async fn hold(&self) {
        self.holding.fetch_add(1, Ordering::SeqCst);
        self.gate.acquire().await.unwrap().forget();
    }

    async fn broken(&self) -> u64 {
        panic!("injected failure")
    }
}

/// Refuses the first two calls of `retried` as overloaded.
fn refuse_twice() -> BoxLayer<Next<Request, Reply>, Request, Reply, BoxError> {
    let refused = Arc::new(AtomicU64::new(0));
    BoxLayer::new(tower::layer::layer_fn(
        move |inner: Next<Request, Reply>| {
            let refused = Arc::clone(&refused);
            tower::service_fn(move |request: Request| {
                let refuse = request.method_name() == "retried"
                    && refused.fetch_add(1, Ordering::SeqCst) < 2;
                let mut inner = inner.clone();
                async move {
                    if refuse {
                        return Err(BoxError::from(CallError::Overloaded("busy".to_owned())));
                    }
                    inner.call(request).await
                }
            })
        },
    ))
}

fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find(|line| line.starts_with(series))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[tokio::test]
async fn retries_fallbacks_refusals_and_breaker_changes_are_counted() {
    let prometheus = PrometheusBuilder::new().install_recorder().unwrap();
    quiet_panics_starting_with("injected failure");
    let handler = Handler {
        holding: Arc::new(AtomicU64::new(0)),
        gate: Arc::new(Semaphore::new(0)),
    };
    let server = Server::builder()
        .serve(MeteredServer::new(handler.clone()))
        .layer(refuse_twice())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let client = MeteredClient::connect(server.local_addr()).await.unwrap();

    assert_eq!(client.retried().await.unwrap(), 1);

    let held = {
        let client = client.clone();
        tokio::spawn(async move { client.hold().await })
    };
    eventually("one call to hold", || {
        handler.holding.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(matches!(
        client.hold().await,
        Err(Error::ConcurrencyLimit { .. })
    ));
    handler.gate.add_permits(1);
    held.await.unwrap().unwrap();

    for _ in 0..2 {
        assert!(matches!(
            client.broken().await,
            Err(Error::HandlerPanicked { .. })
        ));
    }
    assert_eq!(
        client.broken().await.unwrap(),
        0,
        "the fallback answered the open circuit"
    );

    let page = prometheus.render();
    let labels = r#"{service="Metered",method="#;
    assert_eq!(
        sample(
            &page,
            &format!(r#"wirecall_client_retries_total{labels}"retried"}}"#)
        ),
        Some(2.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            &format!(r#"wirecall_client_concurrency_rejected_total{labels}"hold"}}"#)
        ),
        Some(1.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            &format!(r#"wirecall_client_fallbacks_total{labels}"broken"}}"#)
        ),
        Some(1.0),
        "{page}"
    );
    let endpoint = server.local_addr().to_string();
    let opened = page
        .lines()
        .find(|line| {
            line.starts_with("wirecall_client_circuit_state_changes_total{")
                && line.contains(&format!(r#"endpoint="{endpoint}""#))
                && line.contains(r#"to="open""#)
        })
        .unwrap_or_else(|| panic!("no open change for {endpoint} in:\n{page}"));
    assert!(opened.ends_with(" 1"), "{opened}");
    server.shutdown().await;
}
