//! A stream's reply metadata and trailers (protocol version 4), end to end against a real
//! server over TCP: set by the handler before its stream, by the stream while it runs, and
//! by a server layer; read by the caller with `ItemStream::metadata` and `trailers`, on server
//! streams, bidirectional streams and uploads, and through a failing end; and what a version 3
//! connection carries (neither).

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::Notify;
use wirecall::client::reply_metadata::with_reply_metadata;
use wirecall::{CallContext, Channel, ErrorCode, RunningServer, Server, Streaming};
use wirecall_test_support::quiet_panics_starting_with;

/// What the tests call: every stream shape, each setting reply metadata or trailers.
#[wirecall::service]
pub trait Counted {
    /// `0..n`, with the reply metadata `unit: item` set before the stream and the trailer
    /// `count: n` set after its last item.
    async fn count(&self, n: u64) -> Streaming<u64>;
    /// Sets `unit: late` while producing, before its first item, which waits for the test.
    async fn late(&self) -> Streaming<u64>;
    /// Each uploaded number doubled, with the trailer `seen: <count>`.
    async fn double(&self, numbers: Streaming<u64>) -> Streaming<u64>;
    /// The sum of the upload, with reply metadata `unit: sum` and the trailer `seen: <count>`.
    async fn sum(&self, numbers: Streaming<u64>) -> u64;
    /// Sets the trailer `reached: 1`, sends one item, then panics.
    async fn broken(&self) -> Streaming<u64>;
    /// A unary call whose trailer joins its reply metadata.
    async fn unary(&self) -> u64;
}

#[derive(Clone, Default)]
struct CountedImpl {
    /// Lets the first item of `late` go.
    release: Arc<Notify>,
}

fn set_trailer(key: &str, value: String) {
    CallContext::with_current(|call| call.set_trailer(key, value).unwrap())
        .expect("a trailer is set while the call is current");
}

impl Counted for CountedImpl {
    async fn count(&self, n: u64) -> Streaming<u64> {
        CallContext::with_current(|call| call.set_reply_metadata("unit", "item").unwrap());
        // The items, then a last step that yields nothing and sets the trailer.
        let items = futures::stream::iter(0..n).map(Some);
        let last = futures::stream::once(async move {
            set_trailer("count", n.to_string());
            None
        });
        Streaming::new(items.chain(last).filter_map(|item| async move { item }))
    }

    async fn late(&self) -> Streaming<u64> {
        let release = Arc::clone(&self.release);
        Streaming::new(futures::stream::once(async move {
            CallContext::with_current(|call| call.set_reply_metadata("unit", "late").unwrap());
            release.notified().await;
            7
        }))
    }

    async fn double(&self, numbers: Streaming<u64>) -> Streaming<u64> {
        let mut seen = 0u64;
        let doubled = numbers
            .map(Some)
            .chain(futures::stream::once(async { None }));
        Streaming::new(doubled.filter_map(move |item| {
            let out = match item {
                Some(n) => {
                    seen += 1;
                    Some(n * 2)
                }
                None => {
                    set_trailer("seen", seen.to_string());
                    None
                }
            };
            async move { out }
        }))
    }

    async fn sum(&self, mut numbers: Streaming<u64>) -> u64 {
        CallContext::with_current(|call| call.set_reply_metadata("unit", "sum").unwrap());
        let (mut sum, mut seen) = (0, 0);
        while let Some(n) = numbers.next().await {
            sum += n;
            seen += 1;
        }
        set_trailer("seen", seen.to_string());
        sum
    }

    async fn broken(&self) -> Streaming<u64> {
        set_trailer("reached", "1".to_owned());
        Streaming::new(
            futures::stream::iter([Some(1), None]).map(|item| match item {
                Some(n) => n,
                None => panic!("broken stream panicked on purpose"),
            }),
        )
    }

    async fn unary(&self) -> u64 {
        set_trailer("checked", "yes".to_owned());
        1
    }
}

async fn serve(counted: CountedImpl, max_version: Option<u8>) -> RunningServer {
    let mut builder = Server::builder().serve(CountedServer::new(counted));
    if let Some(version) = max_version {
        builder = builder.max_protocol_version(version);
    }
    builder.bind("127.0.0.1:0").await.unwrap()
}

async fn client(server: &RunningServer) -> CountedClient {
    CountedClient::new(Channel::connect(server.local_addr()).await.unwrap())
}

#[tokio::test]
async fn a_server_stream_carries_reply_metadata_before_its_items_and_trailers_after() {
    let server = serve(CountedImpl::default(), None).await;
    let counted = client(&server).await;
    let mut stream = counted.count(3).await.unwrap();
    assert_eq!(stream.trailers(), None, "no trailers before the end");
    assert_eq!(stream.metadata().await.get("unit"), Some("item"));
    let items: Vec<u64> = stream.by_ref().map(|item| item.unwrap()).collect().await;
    assert_eq!(items, [0, 1, 2]);
    assert_eq!(stream.metadata().await.get("unit"), Some("item"));
    let trailers = stream.trailers().expect("trailers once the stream ended");
    assert_eq!(trailers.get("count"), Some("3"));
    assert_eq!(trailers.get("unit"), None, "reply metadata is not repeated");

    // Read without asking for the metadata first: it is known all the same.
    let mut stream = counted.count(0).await.unwrap();
    assert!(stream.next().await.is_none());
    assert_eq!(stream.metadata().await.get("unit"), Some("item"));
    assert_eq!(stream.trailers().unwrap().get("count"), Some("0"));
    server.shutdown().await;
}

#[tokio::test]
async fn reply_metadata_set_while_producing_arrives_before_a_late_first_item() {
    let counted_impl = CountedImpl::default();
    let server = serve(counted_impl.clone(), None).await;
    let counted = client(&server).await;
    let mut stream = counted.late().await.unwrap();
    // The first item waits for the release below: the metadata must come without it.
    assert_eq!(stream.metadata().await.get("unit"), Some("late"));
    counted_impl.release.notify_one();
    assert_eq!(stream.next().await.unwrap().unwrap(), 7);
    assert!(stream.next().await.is_none());
    assert!(stream.trailers().unwrap().is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn bidirectional_streams_and_uploads_carry_them_too() {
    let server = serve(CountedImpl::default(), None).await;
    let counted = client(&server).await;
    let mut doubled = counted
        .double(Streaming::from_iter([1u64, 2, 3]))
        .await
        .unwrap();
    assert!(doubled.metadata().await.is_empty());
    let items: Vec<u64> = doubled.by_ref().map(|item| item.unwrap()).collect().await;
    assert_eq!(items, [2, 4, 6]);
    assert_eq!(doubled.trailers().unwrap().get("seen"), Some("3"));

    // An upload has one reply: its reply metadata and trailers come as one set.
    let (sum, metadata) =
        with_reply_metadata(counted.sum(Streaming::from_iter([1u64, 2, 3, 4]))).await;
    assert_eq!(sum.unwrap(), 10);
    assert_eq!(metadata.get("unit"), Some("sum"));
    assert_eq!(metadata.get("seen"), Some("4"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_failing_stream_sends_its_trailers_with_its_error() {
    quiet_panics_starting_with("broken stream panicked on purpose");
    let server = serve(CountedImpl::default(), None).await;
    let counted = client(&server).await;
    let mut stream = counted.broken().await.unwrap();
    assert_eq!(stream.next().await.unwrap().unwrap(), 1);
    match stream.next().await {
        Some(Err(error)) => assert_eq!(error.code(), Some(ErrorCode::HandlerPanicked)),
        other => panic!("expected the handler's panic, got {other:?}"),
    }
    assert!(stream.next().await.is_none());
    assert_eq!(stream.trailers().unwrap().get("reached"), Some("1"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_unary_calls_trailers_join_its_reply_metadata() {
    let server = serve(CountedImpl::default(), None).await;
    let counted = client(&server).await;
    let (reply, metadata) = with_reply_metadata(counted.unary()).await;
    assert_eq!(reply.unwrap(), 1);
    assert_eq!(metadata.get("checked"), Some("yes"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_layer_adds_a_trailer() {
    let server = Server::builder()
        .serve(CountedServer::new(CountedImpl::default()))
        .layer(tower::util::MapResponseLayer::new(
            |mut reply: wirecall::server::Reply| {
                if reply.is_stream() {
                    reply.set_trailer("layer", "counted").unwrap();
                } else {
                    assert!(matches!(
                        reply.set_trailer("layer", "counted"),
                        Err(wirecall::MetadataError::NotAStream)
                    ));
                }
                reply
            },
        ))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let counted = client(&server).await;
    let mut stream = counted.count(2).await.unwrap();
    while let Some(item) = stream.next().await {
        item.unwrap();
    }
    let trailers = stream.trailers().unwrap();
    assert_eq!(trailers.get("layer"), Some("counted"));
    assert_eq!(trailers.get("count"), Some("2"), "beside the handler's own");
    assert_eq!(counted.unary().await.unwrap(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_version_3_connection_carries_neither() {
    let server = serve(CountedImpl::default(), Some(3)).await;
    let counted = client(&server).await;
    let mut stream = counted.count(2).await.unwrap();
    assert!(stream.metadata().await.is_empty());
    let items: Vec<u64> = stream.by_ref().map(|item| item.unwrap()).collect().await;
    assert_eq!(items, [0, 1]);
    assert!(stream.trailers().unwrap().is_empty());
    server.shutdown().await;
}
