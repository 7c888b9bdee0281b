//! Every shape a method's messages take round-trips with every codec: the most arguments a
//! method may take (16), `Option<Option<T>>` in each place it can stand (an argument, a
//! value, the `ok` of a result, an error, a stream item, an uploaded item), with `Some(None)`
//! kept apart from `None`, and the same through a serde-only service.

use futures::StreamExt;
use wirecall::stream::Streaming;
use wirecall::{Channel, Codec, Server};

#[wirecall::service]
trait Shapes {
    #[allow(clippy::too_many_arguments)]
    async fn sixteen(
        &self,
        a: u8,
        b: u16,
        c: u32,
        d: u64,
        e: i8,
        f: i16,
        g: i32,
        h: i64,
        i: bool,
        j: String,
        k: Vec<u8>,
        l: Option<u32>,
        m: f32,
        n: f64,
        o: char,
        p: (u8, String),
    ) -> String;
    async fn nested(&self, value: Option<Option<u32>>) -> Option<Option<u32>>;
    async fn nested_ok(&self, value: Option<Option<u32>>) -> Result<Option<u32>, String>;
    async fn nested_err(&self, fail: Option<Option<String>>) -> Result<(), Option<String>>;
    async fn nested_items(
        &self,
        items: Streaming<Option<Option<u8>>>,
    ) -> Streaming<Option<Option<u8>>>;
}

#[wirecall::service(codecs(json, msgpack))]
trait SerdeShapes {
    async fn nested(&self, value: Option<Option<u32>>) -> Result<Option<u32>, String>;
    /// The uploaded items as `{:?}` (inside a `Vec`, serde itself writes `Some(None)` as `None`).
    async fn nested_items(&self, items: Streaming<Option<Option<u8>>>) -> Vec<String>;
}

struct Impl;

impl Shapes for Impl {
    async fn sixteen(
        &self,
        a: u8,
        b: u16,
        c: u32,
        d: u64,
        e: i8,
        f: i16,
        g: i32,
        h: i64,
        i: bool,
        j: String,
        k: Vec<u8>,
        l: Option<u32>,
        m: f32,
        n: f64,
        o: char,
        p: (u8, String),
    ) -> String {
        format!("{a} {b} {c} {d} {e} {f} {g} {h} {i} {j} {k:?} {l:?} {m} {n} {o} {p:?}")
    }

    async fn nested(&self, value: Option<Option<u32>>) -> Option<Option<u32>> {
        value
    }

    async fn nested_ok(&self, value: Option<Option<u32>>) -> Result<Option<u32>, String> {
        value.ok_or_else(|| "none".to_owned())
    }

    async fn nested_err(&self, fail: Option<Option<String>>) -> Result<(), Option<String>> {
        match fail {
            None => Ok(()),
            Some(reason) => Err(reason),
        }
    }

    async fn nested_items(
        &self,
        items: Streaming<Option<Option<u8>>>,
    ) -> Streaming<Option<Option<u8>>> {
        items
    }
}

impl SerdeShapes for Impl {
    async fn nested(&self, value: Option<Option<u32>>) -> Result<Option<u32>, String> {
        value.ok_or_else(|| "none".to_owned())
    }

    async fn nested_items(&self, items: Streaming<Option<Option<u8>>>) -> Vec<String> {
        items.map(|item| format!("{item:?}")).collect().await
    }
}

fn uploads() -> Vec<Option<Option<u8>>> {
    vec![None, Some(None), Some(Some(7))]
}

async fn channel(server: &wirecall::RunningServer, codec: Codec) -> Channel {
    Channel::builder()
        .codec(codec)
        .connect(server.local_addr())
        .await
        .unwrap()
}

#[tokio::test]
async fn every_message_shape_round_trips_with_every_codec() {
    let server = Server::builder()
        .serve(ShapesServer::new(Impl))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    for codec in [Codec::Json, Codec::MessagePack, Codec::Protobuf] {
        let client = ShapesClient::new(channel(&server, codec).await);
        let line = client
            .sixteen(
                1,
                2,
                3,
                4,
                -5,
                -6,
                -7,
                -8,
                true,
                "ten".to_owned(),
                vec![11],
                Some(12),
                13.5,
                14.25,
                'o',
                (16, "p".to_owned()),
            )
            .await
            .unwrap();
        assert_eq!(
            line, "1 2 3 4 -5 -6 -7 -8 true ten [11] Some(12) 13.5 14.25 o (16, \"p\")",
            "{codec}"
        );
        for value in [None, Some(None), Some(Some(3))] {
            assert_eq!(client.nested(value).await.unwrap(), value, "{codec}");
            let expected = value.ok_or_else(|| "none".to_owned());
            assert_eq!(client.nested_ok(value).await.unwrap(), expected, "{codec}");
        }
        for fail in [None, Some(None), Some(Some("why".to_owned()))] {
            let expected = fail.clone().map_or(Ok(()), Err);
            assert_eq!(client.nested_err(fail).await.unwrap(), expected, "{codec}");
        }
        let items = client
            .nested_items(futures::stream::iter(uploads()))
            .await
            .unwrap();
        let echoed: Vec<_> = items.map(Result::unwrap).collect().await;
        assert_eq!(echoed, uploads(), "{codec}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_serde_only_service_keeps_nested_options_apart() {
    let server = Server::builder()
        .serve(SerdeShapesServer::new(Impl))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    for codec in [Codec::Json, Codec::MessagePack] {
        let client = SerdeShapesClient::new(channel(&server, codec).await);
        for value in [None, Some(None), Some(Some(3))] {
            let expected = value.ok_or_else(|| "none".to_owned());
            assert_eq!(client.nested(value).await.unwrap(), expected, "{codec}");
        }
        let items = client
            .nested_items(futures::stream::iter(uploads()))
            .await
            .unwrap();
        assert_eq!(items, ["None", "Some(None)", "Some(Some(7))"], "{codec}");
    }
    server.shutdown().await;
}
