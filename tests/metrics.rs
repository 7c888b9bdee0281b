//! Server metrics through the `metrics` facade, as the `user` example serves them with
//! `--metrics`: a Prometheus exporter with its HTTP listener, scraped with a real HTTP client
//! (hyper), before and after more calls.
//!
//! One test in this binary: the recorder is global to the process.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use wirecall::{Channel, Error, NegotiationError, Server};

#[wirecall::service]
trait Counter {
    async fn add(&self, a: i64, b: i64) -> i64;
    async fn fail(&self) -> i64;
}

struct Adder;

impl Counter for Adder {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }

    async fn fail(&self) -> i64 {
        panic!("this method always panics")
    }
}

/// GETs `http://addr/metrics` and returns the page.
async fn scrape(addr: SocketAddr) -> String {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::get("/metrics")
        .header("host", addr.to_string())
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

/// The value of the sample whose line starts with `series` (name and labels, as printed).
fn sample(page: &str, series: &str) -> f64 {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no sample {series} in:\n{page}"))
}

fn free_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

#[tokio::test]
async fn the_prometheus_page_counts_calls_connections_bytes_and_handshake_failures() {
    let metrics_addr = free_port();
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(metrics_addr)
        .install()
        .unwrap();
    let server = Server::builder()
        .serve(CounterServer::new(Adder))
        .token("secret")
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .token("secret")
        .connect(server.local_addr())
        .await
        .unwrap();
    let client = CounterClient::new(channel);
    for i in 0..3 {
        assert_eq!(client.add(i, 1).await.unwrap(), i + 1);
    }
    assert!(matches!(
        client.fail().await,
        Err(Error::HandlerPanicked { .. })
    ));
    let refused = Channel::builder()
        .token("wrong")
        .early_calls(false)
        .connect(server.local_addr())
        .await;
    assert!(matches!(
        refused,
        Err(Error::Negotiation(NegotiationError::AuthenticationFailed))
    ));

    let ok = r#"wirecall_server_calls_total{service="Counter",method="add",outcome="ok"}"#;
    let panicked = r#"wirecall_server_calls_total{service="Counter",method="fail",outcome="handler_panicked"}"#;
    let durations =
        r#"wirecall_server_call_duration_seconds_count{service="Counter",method="add"}"#;
    let page = scrape(metrics_addr).await;
    assert_eq!(sample(&page, ok), 3.0);
    assert_eq!(sample(&page, panicked), 1.0);
    assert_eq!(sample(&page, durations), 3.0);
    assert_eq!(sample(&page, "wirecall_server_connections"), 1.0);
    assert_eq!(sample(&page, "wirecall_server_connections_total"), 1.0);
    assert_eq!(sample(&page, "wirecall_server_calls_in_flight"), 0.0);
    assert_eq!(
        sample(
            &page,
            r#"wirecall_server_handshake_failures_total{reason="authentication"}"#
        ),
        1.0
    );
    let received = sample(&page, "wirecall_server_received_bytes_total");
    let sent = sample(&page, "wirecall_server_sent_bytes_total");
    // Four frames each way, each at least a header (22 bytes).
    assert!(
        received >= 4.0 * 22.0 && sent >= 4.0 * 22.0,
        "{received} {sent}"
    );

    // The counters move.
    for i in 0..5 {
        client.add(i, i).await.unwrap();
    }
    let page = scrape(metrics_addr).await;
    assert_eq!(sample(&page, ok), 8.0);
    assert_eq!(sample(&page, durations), 8.0);
    assert!(sample(&page, "wirecall_server_received_bytes_total") > received);
    assert!(sample(&page, "wirecall_server_sent_bytes_total") > sent);

    // A closed connection leaves the gauge.
    client.channel().close().await;
    let closed = async {
        loop {
            let page = scrape(metrics_addr).await;
            if sample(&page, "wirecall_server_connections") == 0.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .unwrap();
    server.shutdown().await;
}
