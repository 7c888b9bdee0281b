//! A `Bytes` field of 256 bytes or more decodes as a view of the payload it arrived in
//! (MessagePack, Protobuf), not a copy; shorter ones, and JSON's, are copies. Either way the
//! value is the same, through a real server, in arguments, replies and stream items, on both
//! sides of the 256-byte line.

use futures::StreamExt;
use wirecall::stream::Streaming;
use wirecall::{Bytes, Channel, Codec, Server};

#[wirecall::message]
#[derive(Clone, PartialEq)]
struct Blob {
    id: u64,
    data: Bytes,
    note: Option<String>,
    tail: Bytes,
}

fn blob(data_len: usize, tail_len: usize) -> Blob {
    Blob {
        id: 7,
        data: (0..data_len).map(|i| i as u8).collect::<Vec<u8>>().into(),
        note: Some("after the data".to_owned()),
        tail: Bytes::from(vec![0xA5; tail_len]),
    }
}

fn lies_inside(part: &Bytes, payload: &Bytes) -> bool {
    let start = payload.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    at >= start && at + part.len() <= start + payload.len()
}

fn encoded(codec: Codec, value: &Blob) -> Bytes {
    let mut buf = bytes::BytesMut::new();
    codec.encode(value, &mut buf).unwrap();
    buf.freeze()
}

#[test]
fn a_long_bytes_field_is_a_view_of_its_payload_and_a_short_one_a_copy() {
    for codec in [Codec::MessagePack, Codec::Protobuf] {
        let sent = blob(1024, 255);
        let payload = encoded(codec, &sent);
        let got: Blob = codec.decode_shared(payload.clone()).unwrap();
        assert!(got == sent, "{codec}");
        assert!(lies_inside(&got.data, &payload), "{codec}: 1 KiB is shared");
        assert!(
            !lies_inside(&got.tail, &payload),
            "{codec}: 255 bytes are copied"
        );

        let at_the_line: Blob = codec.decode_shared(encoded(codec, &blob(256, 0))).unwrap();
        assert_eq!(at_the_line.data.len(), 256);
    }
}

#[test]
fn json_and_decoding_from_a_slice_copy() {
    let sent = blob(1024, 0);
    let payload = encoded(Codec::Json, &sent);
    let got: Blob = Codec::Json.decode_shared(payload.clone()).unwrap();
    assert!(got == sent);
    assert!(!lies_inside(&got.data, &payload));

    for codec in [Codec::MessagePack, Codec::Protobuf] {
        let payload = encoded(codec, &sent);
        let got: Blob = codec.decode(&payload).unwrap();
        assert!(got == sent, "{codec}");
        assert!(!lies_inside(&got.data, &payload), "{codec}");
    }
}

#[test]
fn a_message_keyed_by_field_name_shares_too() {
    // MessagePack as another writer packs it: a map keyed by field names, `bin` values.
    let mut buf = vec![0x82]; // a map of 2 entries
    buf.extend_from_slice(&[0xA4, b'd', b'a', b't', b'a']); // "data":
    buf.extend_from_slice(&[0xC5, 0x01, 0x2C]); // bin 16, 300 bytes
    buf.extend_from_slice(&[3; 300]);
    buf.extend_from_slice(&[0xA2, b'i', b'd', 0x09]); // "id": 9
    let payload = Bytes::from(buf);
    let got: Blob = Codec::MessagePack.decode_shared(payload.clone()).unwrap();
    assert_eq!(got.id, 9);
    assert_eq!(&got.data[..], &[3; 300][..]);
    assert!(lies_inside(&got.data, &payload));
}

#[wirecall::service]
trait Blobs {
    async fn echo(&self, blob: Blob, extra: Bytes) -> (Blob, Bytes);
    async fn chunks(&self, sizes: Vec<u32>) -> Streaming<Bytes>;
    async fn total(&self, chunks: Streaming<Bytes>) -> u64;
}

struct BlobsImpl;

impl Blobs for BlobsImpl {
    async fn echo(&self, blob: Blob, extra: Bytes) -> (Blob, Bytes) {
        (blob, extra)
    }

    async fn chunks(&self, sizes: Vec<u32>) -> Streaming<Bytes> {
        Streaming::from_iter(
            sizes
                .into_iter()
                .map(|size| Bytes::from(vec![size as u8; size as usize])),
        )
    }

    async fn total(&self, mut chunks: Streaming<Bytes>) -> u64 {
        let mut total = 0;
        while let Some(chunk) = chunks.next().await {
            assert!(chunk.iter().all(|b| *b == chunk.len() as u8));
            total += chunk.len() as u64;
        }
        total
    }
}

const SIZES: [u32; 6] = [0, 1, 255, 256, 257, 70_000];

#[tokio::test]
async fn bytes_round_trip_on_both_sides_of_the_line_with_every_codec() {
    let server = Server::builder()
        .serve(BlobsServer::new(BlobsImpl))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    for codec in Codec::ALL {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .unwrap();
        let client = BlobsClient::new(channel);
        for size in SIZES {
            let sent = blob(size as usize, size as usize / 2);
            let extra = Bytes::from(vec![1; size as usize]);
            let (back, extra_back) = client.echo(sent.clone(), extra.clone()).await.unwrap();
            assert!(back == sent, "{codec}, {size} bytes");
            assert_eq!(extra_back, extra, "{codec}, {size} bytes");
        }
        let chunks: Vec<Bytes> = client
            .chunks(SIZES.to_vec())
            .await
            .unwrap()
            .map(|item| item.unwrap())
            .collect()
            .await;
        let sizes: Vec<u32> = chunks.iter().map(|chunk| chunk.len() as u32).collect();
        assert_eq!(sizes, SIZES, "{codec}");
        for chunk in &chunks {
            assert!(chunk.iter().all(|b| *b == chunk.len() as u8), "{codec}");
        }
        let uploaded = SIZES.map(|size| Bytes::from(vec![size as u8; size as usize]));
        let total = client.total(Streaming::from_iter(uploaded)).await.unwrap();
        assert_eq!(
            total,
            SIZES.iter().map(|s| *s as u64).sum::<u64>(),
            "{codec}"
        );
    }
}

#[test]
fn damaged_payloads_decode_alike_shared_or_copied_and_never_panic() {
    // Every truncation and many single-byte changes of a payload with a shared `Bytes`: the
    // shared decode gives exactly what the copying one gives, value or error.
    for codec in Codec::ALL {
        let payload = encoded(codec, &blob(600, 300));
        let mut damaged: Vec<Bytes> = (0..payload.len()).map(|len| payload.slice(..len)).collect();
        for index in (0..payload.len()).step_by(3) {
            let mut flipped = payload.to_vec();
            flipped[index] ^= 0xa5;
            damaged.push(flipped.into());
        }
        for input in damaged {
            let copied = codec.decode::<Blob>(&input);
            let shared = codec.decode_shared::<Blob>(input.clone());
            match (copied, shared) {
                (Ok(copied), Ok(shared)) => assert!(copied == shared, "{codec}"),
                (Err(copied), Err(shared)) => {
                    assert_eq!(copied.to_string(), shared.to_string(), "{codec}")
                }
                (copied, shared) => panic!("{codec}: {copied:?} against {shared:?}"),
            }
        }
    }
}
