//! `#[service(codecs(json, msgpack))]`: a service whose types need only serde. Its server
//! never offers Protobuf, a server serving it alongside other services offers only the codecs
//! they all support, and a Protobuf-only client is refused at the handshake.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use wirecall::{Channel, Codec, Error, NegotiationError, Server};

/// No #[wirecall::message]: 128-bit numbers, a `VecDeque` and serde attributes are fine here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Ledger {
    #[serde(rename = "total")]
    balance: u128,
    history: VecDeque<i128>,
    note: Option<Vec<Option<String>>>,
}

#[wirecall::service(codecs(json, msgpack))]
trait Accounts {
    async fn settle(&self, ledger: Ledger, by: usize) -> Ledger;
    async fn find(&self, id: u64) -> Result<Option<Ledger>, String>;
}

#[wirecall::service]
trait Clock {
    async fn now(&self) -> u64;
}

struct Impl;

impl Accounts for Impl {
    async fn settle(&self, mut ledger: Ledger, by: usize) -> Ledger {
        ledger.balance += by as u128;
        ledger.history.push_front(-(by as i128));
        ledger
    }
    async fn find(&self, id: u64) -> Result<Option<Ledger>, String> {
        match id {
            0 => Ok(None),
            1 => Ok(Some(ledger())),
            _ => Err(format!("no account {id}")),
        }
    }
}

impl Clock for Impl {
    async fn now(&self) -> u64 {
        42
    }
}

fn ledger() -> Ledger {
    Ledger {
        balance: u128::MAX - 10,
        history: VecDeque::from([i128::MIN, 3]),
        note: Some(vec![None, Some("x".to_owned())]),
    }
}

#[tokio::test]
async fn a_serde_only_service_round_trips_in_json_and_msgpack() {
    let server = Server::builder()
        .serve(AccountsServer::new(Impl))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    // The generated `connect` offers only the service's codecs.
    let client = AccountsClient::connect(server.local_addr()).await.unwrap();
    assert_ne!(client.codec(), Codec::Protobuf);
    for codec in [Codec::Json, Codec::MessagePack] {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .unwrap();
        let client = AccountsClient::new(channel);
        let settled = client.settle(ledger(), 4).await.unwrap();
        assert_eq!(settled.balance, u128::MAX - 6, "{codec}");
        assert_eq!(settled.history, [-4, i128::MIN, 3], "{codec}");
        assert_eq!(client.find(0).await.unwrap(), Ok(None), "{codec}");
        assert_eq!(client.find(1).await.unwrap(), Ok(Some(ledger())), "{codec}");
        assert_eq!(
            client.find(2).await.unwrap(),
            Err("no account 2".to_owned()),
            "{codec}"
        );
    }
}

#[tokio::test]
async fn a_server_with_a_serde_only_service_never_offers_protobuf() {
    let server = Server::builder()
        .serve(ClockServer::new(Impl))
        .serve(AccountsServer::new(Impl))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let err = Channel::builder()
        .codec(Codec::Protobuf)
        .connect(server.local_addr())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Negotiation(NegotiationError::NoCommonCodec { .. })
        ),
        "{err:?}"
    );
    // The other service is reached with the codecs they share.
    let clock = ClockClient::connect(server.local_addr()).await.unwrap();
    assert_ne!(clock.codec(), Codec::Protobuf);
    assert_eq!(clock.now().await.unwrap(), 42);
}

#[tokio::test]
async fn a_shared_protobuf_channel_refuses_a_serde_only_call_locally() {
    let server = Server::builder()
        .serve(ClockServer::new(Impl))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .codec(Codec::Protobuf)
        .connect(server.local_addr())
        .await
        .unwrap();
    let err = AccountsClient::new(channel).find(1).await.unwrap_err();
    assert!(
        err.to_string().contains("not available for this service"),
        "{err}"
    );
}
