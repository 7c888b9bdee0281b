//! Codec negotiation through the public API.

mod common;

use common::*;
use wirecall::{Channel, Codec, Error, NegotiationError, Server};

#[tokio::test]
async fn client_offering_only_msgpack_gets_msgpack() {
    let (server, _) = start_server().await;
    let channel = Channel::builder()
        .codec(Codec::MessagePack)
        .connect(server.local_addr())
        .await
        .unwrap();
    assert_eq!(channel.codec(), Codec::MessagePack);
    let client = UserServiceClient::new(channel);
    assert_eq!(client.get_user(fanly()).await.unwrap(), fanly());
}

#[tokio::test]
async fn client_preference_wins_by_default_and_server_order_when_asked() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .codecs([Codec::Protobuf, Codec::Json])
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let offer = [Codec::Json, Codec::Protobuf];
    let channel = Channel::builder()
        .codecs(offer)
        .connect(server.local_addr())
        .await
        .unwrap();
    assert_eq!(channel.codec(), Codec::Json);

    let server_first = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .codecs([Codec::Protobuf, Codec::Json])
        .prefer_server_codec_order(true)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .codecs(offer)
        .connect(server_first.local_addr())
        .await
        .unwrap();
    assert_eq!(channel.codec(), Codec::Protobuf);
}

#[tokio::test]
async fn no_common_codec_is_a_clear_error_naming_both_lists() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .codecs([Codec::Protobuf])
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let err = Channel::builder()
        .codec(Codec::Json)
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
    assert_eq!(
        err.to_string(),
        "codec negotiation failed: no common codec: the client offered [json], the server supports [protobuf]"
    );
    // The refused connection does not disturb a compatible client.
    let ok = UserServiceClient::new(
        Channel::builder()
            .codec(Codec::Protobuf)
            .connect(server.local_addr())
            .await
            .unwrap(),
    );
    assert_eq!(ok.get_user_id("ab".to_owned()).await.unwrap(), 2);
}

#[tokio::test]
async fn a_non_wirecall_server_is_reported_as_such() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let (mut socket, _) = listener.accept().await.unwrap();
        socket
            .write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            .await
            .unwrap();
    });
    let err = Channel::connect(addr).await.unwrap_err();
    assert!(
        matches!(err, Error::Negotiation(NegotiationError::BadMagic(_))),
        "{err:?}"
    );
}

#[tokio::test]
async fn connect_failure_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = Channel::connect(addr).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
}

/// A hello cannot carry a codec twice (the peer refuses such a hello as malformed), so a
/// codec list with a repeat is a configuration error on both builders, never cut or
/// deduplicated behind the user's back.
#[tokio::test]
async fn a_codec_listed_twice_is_a_configuration_error_on_both_sides() {
    let twice = [Codec::Json, Codec::MessagePack, Codec::Json];
    let err = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .codecs(twice)
        .bind("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Config(message) if message.contains("json twice")),
        "{err}"
    );

    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let err = Channel::builder()
        .codecs(twice)
        .connect(server.local_addr())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Config(message) if message.contains("json twice")),
        "{err}"
    );
    // Each codec once is fine.
    let channel = Channel::builder()
        .codecs([Codec::Json, Codec::MessagePack])
        .connect(server.local_addr())
        .await
        .unwrap();
    assert_eq!(channel.codec(), Codec::Json);
}
