//! Call context and metadata through the public API: metadata both ways in every codec, what a
//! handler sees of its call, the limits, and version 1 peers on either side.

use std::time::Duration;

use wirecall::client::reply_metadata::with_reply_metadata;
use wirecall::{CallContext, Channel, Codec, Error, RunningServer, Server};

#[wirecall::service]
trait Probe {
    /// Echoes the value of one metadata key, and sends back `seen-keys`.
    async fn header(&self, key: String) -> Option<String>;
    /// What the handler knows about its call.
    async fn whoami(&self) -> CallFacts;
    /// Sets `stamp` in the reply metadata through a copy of the context (after an await),
    /// and reports what the same copy gets when used from another task.
    async fn stamp(&self) -> String;
}

#[wirecall::message]
#[derive(Clone, PartialEq)]
struct CallFacts {
    request_id: u64,
    service: String,
    method: String,
    has_peer_addr: bool,
    remaining_ms: Option<u64>,
}

struct ProbeImpl;

impl Probe for ProbeImpl {
    async fn header(&self, key: String) -> Option<String> {
        CallContext::with_current(|call| {
            let keys: Vec<&str> = call.metadata().iter().map(|(k, _)| k).collect();
            call.set_reply_metadata("seen-keys", keys.join(","))
                .unwrap();
            call.metadata().get(&key).map(str::to_owned)
        })
        .expect("a handler runs inside its call's context")
    }

    async fn whoami(&self) -> CallFacts {
        // Read after an await: the context follows the handler across suspension points.
        tokio::task::yield_now().await;
        let call = CallContext::current().expect("inside a call");
        CallFacts {
            request_id: call.request_id(),
            service: call.service().to_owned(),
            method: call.method_name().to_owned(),
            has_peer_addr: call.peer().peer_addr.is_some(),
            remaining_ms: call.remaining().map(|d| d.as_millis() as u64),
        }
    }

    async fn stamp(&self) -> String {
        let call = CallContext::current().expect("inside a call");
        tokio::task::yield_now().await;
        call.set_reply_metadata("stamp", "from-a-copy").unwrap();
        let elsewhere = tokio::spawn(async move { call.set_reply_metadata("late", "no") });
        match elsewhere.await.unwrap() {
            Err(err) => err.to_string(),
            Ok(()) => "the copy set metadata from another task".to_owned(),
        }
    }
}

async fn start(max_version: u8) -> RunningServer {
    Server::builder()
        .serve(ProbeServer::new(ProbeImpl))
        .max_protocol_version(max_version)
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

#[tokio::test]
async fn metadata_travels_both_ways_in_every_codec() {
    let server = start(wirecall::PROTOCOL_VERSION).await;
    for codec in [Codec::Json, Codec::MessagePack, Codec::Protobuf] {
        let channel = Channel::builder()
            .codec(codec)
            .metadata("tenant", "acme")
            .metadata("x-request-id", "default")
            .connect(server.local_addr())
            .await
            .unwrap();
        assert_eq!(channel.protocol_version(), wirecall::PROTOCOL_VERSION);
        let probe = ProbeClient::new(channel.clone());
        assert_eq!(
            probe.header("tenant".into()).await.unwrap().as_deref(),
            Some("acme")
        );

        // A handle's own entries are added to the channel's, and replace them per key.
        let per_call = ProbeClient::new(channel.with_metadata("x-request-id", "call-7").unwrap());
        let (reply, replied) = with_reply_metadata(per_call.header("x-request-id".into())).await;
        assert_eq!(reply.unwrap().as_deref(), Some("call-7"), "{codec}");
        assert_eq!(replied.get("seen-keys"), Some("tenant,x-request-id"));

        // Without a capture, reply metadata is simply not kept.
        assert_eq!(probe.header("missing".into()).await.unwrap(), None);
    }
}

/// `CallContext::current()` hands out a copy; reply metadata set through it reaches the
/// reply while the handler runs, and is refused (not silently dropped) anywhere else.
#[tokio::test]
async fn reply_metadata_set_through_a_copy_of_the_context_is_sent_or_refused() {
    let server = start(wirecall::PROTOCOL_VERSION).await;
    let channel = Channel::connect(server.local_addr()).await.unwrap();
    let probe = ProbeClient::new(channel);
    let (reply, replied) = with_reply_metadata(probe.stamp()).await;
    assert!(
        reply
            .unwrap()
            .contains("only be set from the call's own handler"),
        "the copy used in another task is refused"
    );
    assert_eq!(replied.get("stamp"), Some("from-a-copy"));
    assert_eq!(replied.get("late"), None);
}

#[tokio::test]
async fn a_handler_sees_its_call() {
    let server = start(wirecall::PROTOCOL_VERSION).await;
    let channel = Channel::builder()
        .timeout(Duration::from_secs(5))
        .connect(server.local_addr())
        .await
        .unwrap();
    let probe = ProbeClient::new(channel);
    let first = probe.whoami().await.unwrap();
    let second = probe.whoami().await.unwrap();
    assert_eq!(first.service, "Probe");
    assert_eq!(first.method, "whoami");
    assert!(first.has_peer_addr);
    assert!(second.request_id > first.request_id);
    let remaining = first.remaining_ms.expect("the call has a deadline");
    assert!(remaining <= 5_000 && remaining > 4_000, "{remaining} ms");
    assert!(
        CallContext::current().is_none(),
        "no context outside a handler"
    );
}

#[tokio::test]
async fn metadata_limits_are_checked_before_anything_is_sent() {
    let server = start(wirecall::PROTOCOL_VERSION).await;
    let err = Channel::builder()
        .metadata("Not Valid", "x")
        .connect(server.local_addr())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");

    let channel = Channel::connect(server.local_addr()).await.unwrap();
    let too_big = channel.with_metadata("big", "x".repeat(wirecall::MAX_METADATA_BYTES));
    assert!(matches!(too_big, Err(wirecall::MetadataError::TooLarge(_))));
}

#[tokio::test]
async fn a_new_client_reaches_a_version_1_server_without_metadata() {
    let server = start(1).await;
    let channel = Channel::builder()
        .metadata("tenant", "acme")
        .connect(server.local_addr())
        .await
        .expect("the client dials again with version 1");
    assert_eq!(channel.protocol_version(), 1);
    let probe = ProbeClient::new(channel);
    let (reply, replied) = with_reply_metadata(probe.header("tenant".into())).await;
    assert_eq!(reply.unwrap(), None, "a version 1 peer gets no metadata");
    assert!(replied.is_empty());
}

#[tokio::test]
async fn a_version_1_client_reaches_a_new_server() {
    let server = start(wirecall::PROTOCOL_VERSION).await;
    let channel = Channel::builder()
        .max_protocol_version(1)
        .metadata("tenant", "acme")
        .connect(server.local_addr())
        .await
        .unwrap();
    assert_eq!(channel.protocol_version(), 1);
    let probe = ProbeClient::new(channel);
    assert_eq!(probe.header("tenant".into()).await.unwrap(), None);
    assert_eq!(probe.whoami().await.unwrap().method, "whoami");
}
