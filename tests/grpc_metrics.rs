//! gRPC calls are counted in the server's metrics like wirecall calls: by method and outcome,
//! streams and their items. One test in this binary: the recorder is global to the process.

use futures::StreamExt;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Endpoint;
use tonic::Request;
use wirecall::Server;
use wirecall_test_support::feed::{FeedImpl, FeedServer};

#[derive(Clone, PartialEq, prost::Message)]
struct AddArgs {
    #[prost(uint64, tag = "1")]
    a: u64,
    #[prost(uint64, tag = "2")]
    b: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct CountArgs {
    #[prost(uint64, tag = "1")]
    count: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct U64Reply {
    #[prost(uint64, tag = "1")]
    value: u64,
}

/// The value of the sample `series` (its name and labels, as the page writes them).
fn sample(page: &str, series: &str) -> f64 {
    page.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sample {series} in\n{page}"))
}

#[tokio::test]
async fn grpc_calls_and_streams_are_counted() {
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .unwrap();
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Endpoint::from_shared(format!("http://{}", server.local_addr()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = tonic::client::Grpc::new(channel);
    for (a, b) in [(1, 2), (3, 4)] {
        client.ready().await.unwrap();
        let path = PathAndQuery::from_static("/wirecall.services.Feed/add");
        let codec = tonic_prost::ProstCodec::<AddArgs, U64Reply>::default();
        let reply = client
            .unary(Request::new(AddArgs { a, b }), path, codec)
            .await;
        assert_eq!(reply.unwrap().into_inner().value, a + b);
    }
    client.ready().await.unwrap();
    let path = PathAndQuery::from_static("/wirecall.services.Feed/numbers");
    let codec = tonic_prost::ProstCodec::<CountArgs, U64Reply>::default();
    let items = client
        .server_streaming(Request::new(CountArgs { count: 7 }), path, codec)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(items.count().await, 7);

    // The stream's end is recorded as its task finishes, just after its trailers.
    let numbers = "wirecall_server_calls_total{service=\"Feed\",method=\"numbers\",outcome=\"ok\"}";
    wirecall_test_support::eventually("the stream is counted", || {
        metrics.render().contains(numbers)
    })
    .await;
    let page = metrics.render();
    let adds = "wirecall_server_calls_total{service=\"Feed\",method=\"add\",outcome=\"ok\"}";
    assert_eq!(sample(&page, adds), 2.0);
    assert_eq!(sample(&page, numbers), 1.0);
    assert_eq!(sample(&page, "wirecall_server_streams_opened_total"), 1.0);
    assert_eq!(sample(&page, "wirecall_server_stream_items_total"), 7.0);
    assert_eq!(sample(&page, "wirecall_server_calls_in_flight"), 0.0);
}
