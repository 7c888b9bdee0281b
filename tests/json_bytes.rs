//! JSON carries byte strings as base64 text from protocol version 6 on, and as arrays of
//! numbers on older connections; readers take both (wire chapter, "JSON"). Checked through a
//! real server, on connections capped at version 5 from either side.

use futures::StreamExt;
use wirecall::client::Method;
use wirecall::stream::Streaming;
use wirecall::{Bytes, Channel, Codec, Error, ErrorCode, Server};

#[wirecall::service]
trait Notes {
    async fn echo(&self, data: Bytes) -> Bytes;
    async fn split(&self, data: Bytes) -> Streaming<Bytes>;
    async fn joined(&self, parts: Streaming<Bytes>) -> Bytes;
}

struct NotesImpl;

impl Notes for NotesImpl {
    async fn echo(&self, data: Bytes) -> Bytes {
        data
    }

    async fn split(&self, data: Bytes) -> Streaming<Bytes> {
        let parts: Vec<Bytes> = data.chunks(2).map(Bytes::copy_from_slice).collect();
        Streaming::from_iter(parts)
    }

    async fn joined(&self, mut parts: Streaming<Bytes>) -> Bytes {
        let mut all = Vec::new();
        while let Some(part) = parts.next().await {
            all.extend_from_slice(&part);
        }
        all.into()
    }
}

static ECHO: Method = Method::new("Notes", "echo");

async fn server(max_version: u8) -> wirecall::RunningServer {
    Server::builder()
        .max_protocol_version(max_version)
        .serve(NotesServer::new(NotesImpl))
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

async fn json_channel(server: &wirecall::RunningServer, max_version: u8) -> Channel {
    Channel::builder()
        .codec(Codec::Json)
        .max_protocol_version(max_version)
        .connect(server.local_addr())
        .await
        .unwrap()
}

async fn echo_raw(channel: &Channel, args: &'static str) -> Result<String, Error> {
    let reply = channel
        .call_raw(&ECHO, Codec::Json, Bytes::from_static(args.as_bytes()))
        .await?;
    Ok(String::from_utf8(reply.to_vec()).unwrap())
}

#[tokio::test]
async fn a_reply_carries_base64_on_version_6_and_numbers_when_either_side_is_older() {
    let newest = wirecall::PROTOCOL_VERSION;
    let cases = [
        (newest, newest, r#"{"value":"aGk="}"#),
        (newest, 5, r#"{"value":[104,105]}"#),
        (5, newest, r#"{"value":[104,105]}"#),
    ];
    for (server_version, client_version, reply) in cases {
        let server = server(server_version).await;
        let channel = json_channel(&server, client_version).await;
        let expected_version = server_version.min(client_version);
        assert_eq!(channel.protocol_version(), expected_version);
        // Whichever form the arguments take, the server reads them.
        for args in [
            r#"{"data":"aGk="}"#,
            r#"{"data":"aGk"}"#,
            r#"{"data":[104,105]}"#,
        ] {
            assert_eq!(
                echo_raw(&channel, args).await.unwrap(),
                reply,
                "version {expected_version}, arguments {args}"
            );
        }
        server.shutdown().await;
    }
}

#[tokio::test]
async fn text_that_is_not_base64_is_a_bad_request_that_says_so() {
    let server = server(wirecall::PROTOCOL_VERSION).await;
    let channel = json_channel(&server, wirecall::PROTOCOL_VERSION).await;
    let err = echo_raw(&channel, r#"{"data":"not base64!"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::BadRequest), "{err}");
    assert!(err.to_string().contains("base64"), "{err}");
    server.shutdown().await;
}

#[tokio::test]
async fn typed_calls_streams_and_uploads_round_trip_bytes_on_every_version() {
    let data = Bytes::from((0..=255u8).collect::<Vec<u8>>());
    for version in [1, 3, 5, wirecall::PROTOCOL_VERSION] {
        let server = server(wirecall::PROTOCOL_VERSION).await;
        let client = NotesClient::new(json_channel(&server, version).await);
        assert_eq!(client.echo(data.clone()).await.unwrap(), data, "v{version}");
        if version >= 3 {
            let parts: Vec<Bytes> = client
                .split(data.clone())
                .await
                .unwrap()
                .map(|part| part.unwrap())
                .collect()
                .await;
            assert_eq!(parts.len(), 128, "v{version}");
            assert_eq!(parts.concat(), data.to_vec(), "v{version}");
            let joined = client.joined(Streaming::from_iter(parts)).await.unwrap();
            assert_eq!(joined, data, "v{version}");
        }
        server.shutdown().await;
    }
}
