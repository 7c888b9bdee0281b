//! A balanced channel asks the endpoints' health service: periodically when
//! `health_check` is on, and before it re-admits an ejected endpoint.

mod cluster;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cluster::{shares, wait_for_endpoints, ClusterClient, ClusterServer, Ledger, Node};
use tower::Service as _;
use wirecall::discovery::{Registration, Registry, StaticRegistry};
use wirecall::health::{HealthReporter, ServingStatus};
use wirecall::server::{Reply, Request};
use wirecall::{Channel, Next, RunningServer, Server};
use wirecall_test_support::eventually_async;

/// A test server and how many health checks it has answered.
struct Started {
    server: RunningServer,
    checks: Arc<AtomicUsize>,
}

impl std::ops::Deref for Started {
    type Target = RunningServer;

    fn deref(&self) -> &RunningServer {
        &self.server
    }
}

impl Started {
    async fn shutdown(self) {
        self.server.shutdown().await;
    }

    /// Waits until the server has answered `more` health checks beyond those answered so
    /// far: the balanced channel has then looked at its status that many times, which is
    /// what a test that something did *not* happen must wait for.
    async fn wait_checks(&self, more: usize) {
        let target = self.checks.load(Ordering::SeqCst) + more;
        eventually_async(&format!("{more} more health checks"), || async {
            self.checks.load(Ordering::SeqCst) >= target
        })
        .await;
    }
}

/// A server named `name` with a health service reporting through `health`, counting the
/// health checks it answers.
async fn start(registry: &Registry, name: &str, health: &HealthReporter) -> Started {
    let checks = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&checks);
    let count_checks = tower::layer::layer_fn(move |inner: Next<Request, Reply>| {
        let counted = Arc::clone(&counted);
        tower::service_fn(move |request: Request| {
            if request.context().service() == "wirecall.Health" {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            let mut inner = inner.clone();
            async move { inner.call(request).await }
        })
    });
    let server = Server::builder()
        .serve(ClusterServer::new(Node {
            name: name.to_owned(),
            ledger: Ledger::default(),
        }))
        .serve(health.service())
        .layer(count_checks)
        .register(registry.clone(), Registration::bound_address())
        .bind("127.0.0.1:0")
        .await
        .expect("bind a test server");
    Started { server, checks }
}

async fn balanced(registry: &Registry, check_every: Option<Duration>) -> Channel {
    let builder = Channel::balanced()
        .channel(Channel::builder().timeout(Duration::from_secs(5)))
        .probe_backoff(Duration::from_millis(20), Duration::from_millis(50))
        .eager(true);
    let builder = match check_every {
        Some(interval) => builder.health_check(interval),
        None => builder,
    };
    builder
        .discover(registry, ClusterClient::SERVICE_NAME)
        .await
        .expect("discover the cluster")
}

/// Waits until the endpoint at `address` is (or is no longer) ejected.
async fn wait_ejected(channel: &Channel, address: &str, ejected: bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let endpoints = channel.endpoints();
        if endpoints
            .iter()
            .any(|e| e.address == address && e.ejected == ejected)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{address} not ejected={ejected} within 5 s: {endpoints:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Every endpoint has its connection open (eager channels open them in the background).
async fn wait_connected(client: &ClusterClient, servers: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while shares(client, 60).await.len() < servers {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not every server answers"
        );
    }
}

#[tokio::test]
async fn active_checks_eject_an_endpoint_that_reports_not_serving_and_readmit_it() {
    let registry = Registry::new(StaticRegistry::new());
    let (healthy, sick) = (HealthReporter::new(), HealthReporter::new());
    healthy.set("Cluster", ServingStatus::Serving);
    sick.set("Cluster", ServingStatus::Serving);
    let a = start(&registry, "a", &healthy).await;
    let b = start(&registry, "b", &sick).await;
    let channel = balanced(&registry, Some(Duration::from_millis(50))).await;
    let client = ClusterClient::new(channel.clone());
    wait_for_endpoints(&channel, 2, Duration::from_secs(5)).await;
    wait_connected(&client, 2).await;

    sick.set("Cluster", ServingStatus::NotServing);
    let b_address = b.local_addr().to_string();
    wait_ejected(&channel, &b_address, true).await;
    let counts = shares(&client, 100).await;
    assert_eq!(counts, HashMap::from([("a".to_owned(), 100)]));

    // The probe connects at once but re-admits only once the service is serving again.
    b.wait_checks(3).await;
    assert!(channel
        .endpoints()
        .iter()
        .any(|e| e.address == b_address && e.ejected));
    sick.set("Cluster", ServingStatus::Serving);
    wait_ejected(&channel, &b_address, false).await;
    let counts = shares(&client, 300).await;
    assert!(counts.get("b").copied().unwrap_or(0) >= 30, "{counts:?}");

    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_draining_server_leaves_rotation_before_it_deregisters() {
    let registry = Registry::new(StaticRegistry::new());
    let (stays, drains) = (HealthReporter::new(), HealthReporter::new());
    let a = start(&registry, "a", &stays).await;
    let b = start(&registry, "b", &drains).await;
    let channel = balanced(&registry, Some(Duration::from_millis(50))).await;
    let client = ClusterClient::new(channel.clone());
    wait_for_endpoints(&channel, 2, Duration::from_secs(5)).await;
    wait_connected(&client, 2).await;

    // Draining without shutting down (what `drain_on_shutdown` reports when a shutdown begins,
    // or an operator taking a server out of rotation): still registered, no longer called.
    drains.set("", ServingStatus::Draining);
    drains.set("Cluster", ServingStatus::Draining);
    wait_ejected(&channel, &b.local_addr().to_string(), true).await;
    assert_eq!(channel.endpoints().len(), 2, "{:?}", channel.endpoints());
    assert_eq!(
        shares(&client, 50).await,
        HashMap::from([("a".to_owned(), 50)])
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn without_active_checks_a_server_that_reports_not_serving_keeps_its_calls() {
    let registry = Registry::new(StaticRegistry::new());
    let (one, two) = (HealthReporter::new(), HealthReporter::new());
    let a = start(&registry, "a", &one).await;
    let b = start(&registry, "b", &two).await;
    two.set("Cluster", ServingStatus::NotServing);
    let channel = balanced(&registry, None).await;
    let client = ClusterClient::new(channel.clone());
    wait_for_endpoints(&channel, 2, Duration::from_secs(5)).await;
    // Off by default: only failed connections eject, and nothing asks for the status.
    wait_connected(&client, 2).await;
    assert_eq!(b.checks.load(Ordering::SeqCst), 0);
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_server_without_the_health_service_is_judged_by_its_connection() {
    let registry = Registry::new(StaticRegistry::new());
    let servers = [
        cluster::start_node(&registry, "a", Duration::from_secs(2)).await,
        cluster::start_node(&registry, "b", Duration::from_secs(2)).await,
    ];
    let channel = balanced(&registry, Some(Duration::from_millis(30))).await;
    let client = ClusterClient::new(channel.clone());
    wait_for_endpoints(&channel, 2, Duration::from_secs(5)).await;
    wait_connected(&client, 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        channel.endpoints().iter().all(|e| !e.ejected),
        "{:?}",
        channel.endpoints()
    );
    for server in servers {
        server.shutdown().await;
    }
}

#[tokio::test]
async fn active_checks_never_eject_every_endpoint_in_rotation() {
    let registry = Registry::new(StaticRegistry::new());
    let (one, two) = (HealthReporter::new(), HealthReporter::new());
    let a = start(&registry, "a", &one).await;
    let b = start(&registry, "b", &two).await;
    let channel = balanced(&registry, Some(Duration::from_millis(30))).await;
    let client = ClusterClient::new(channel.clone());
    wait_for_endpoints(&channel, 2, Duration::from_secs(5)).await;
    wait_connected(&client, 2).await;

    // One unfit server leaves; when the last one in rotation turns unfit too, it stays.
    two.set("Cluster", ServingStatus::NotServing);
    wait_ejected(&channel, &b.local_addr().to_string(), true).await;
    one.set("Cluster", ServingStatus::NotServing);
    a.wait_checks(3).await;
    let a_address = a.local_addr().to_string();
    assert!(
        channel
            .endpoints()
            .iter()
            .any(|e| e.address == a_address && !e.ejected),
        "{:?}",
        channel.endpoints()
    );
    assert_eq!(
        shares(&client, 20).await,
        HashMap::from([("a".to_owned(), 20)])
    );
    a.shutdown().await;
    b.shutdown().await;
}
