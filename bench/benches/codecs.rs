//! Micro-benchmarks of the layers under a call: each codec encoding and decoding each W1
//! payload, and the frame codec as a tokio-util `Encoder`/`Decoder`.
//!
//! ```text
//! cargo bench -p wirecall-bench --bench codecs
//! cargo bench -p wirecall-bench --bench codecs -- msgpack   # only names containing "msgpack"
//! ```

#![allow(missing_docs)]

use std::collections::HashMap;
use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tokio_util::codec::{Decoder, Encoder};
use wirecall::{Codec, MethodId, WireMessage};
use wirecall_runtime::transport::frame::{Frame, FrameCodec, FrameKind};
// The payloads are the shared fixture's user, as the end-to-end workloads send it.
use wirecall_test_support::{fanly, UserModel};

/// The 0-object case's reply.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct Dictionary {
    pub entries: HashMap<String, String>,
}

/// The 10- and 100-object cases' argument.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct Users {
    pub users: Vec<UserModel>,
}

const CODECS: [Codec; 3] = [Codec::Json, Codec::MessagePack, Codec::Protobuf];

/// Encodes and decodes `value` with every codec, as benchmarks named `{codec}/{op}/{case}`.
fn bench_message<T: WireMessage + Clone>(c: &mut Criterion, case: &str, value: &T) {
    for codec in CODECS {
        let mut encoded = BytesMut::new();
        codec
            .encode(value, &mut encoded)
            .expect("benchmark values encode");
        let mut group = c.benchmark_group(codec.name());
        group.throughput(Throughput::Bytes(encoded.len() as u64));
        let mut buf = BytesMut::with_capacity(encoded.len());
        group.bench_function(format!("encode/{case}"), |b| {
            b.iter(|| {
                buf.clear();
                codec.encode(black_box(value), &mut buf).unwrap();
            })
        });
        group.bench_function(format!("decode/{case}"), |b| {
            b.iter(|| codec.decode::<T>(black_box(&encoded)).unwrap())
        });
        group.finish();
    }
}

fn codecs(c: &mut Criterion) {
    let dictionary = Dictionary {
        entries: HashMap::from([("key".to_owned(), "value".to_owned())]),
    };
    bench_message(c, "0obj", &dictionary);
    bench_message(c, "1obj", &fanly());
    bench_message(
        c,
        "10obj",
        &Users {
            users: vec![fanly(); 10],
        },
    );
    bench_message(
        c,
        "100obj",
        &Users {
            users: vec![fanly(); 100],
        },
    );
}

fn frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    for (case, users) in [("1obj", 1), ("100obj", 100)] {
        let mut payload = BytesMut::new();
        Codec::MessagePack
            .encode(
                &Users {
                    users: vec![fanly(); users],
                },
                &mut payload,
            )
            .expect("benchmark values encode");
        let frame = Frame {
            kind: FrameKind::Request,
            request_id: 42,
            method: MethodId::new(0x0123_4567_89ab_cdef),
            deadline_ms: 30_000,
            flags: 0,
            payload: Bytes::from(payload),
        };
        let wire = frame.to_bytes();
        group.throughput(Throughput::Bytes(wire.len() as u64));
        let mut codec = FrameCodec::default();
        let mut buf = BytesMut::with_capacity(wire.len());
        group.bench_function(format!("encode/{case}"), |b| {
            b.iter(|| {
                buf.clear();
                codec.encode(black_box(frame.clone()), &mut buf).unwrap();
            })
        });
        group.bench_function(format!("decode/{case}"), |b| {
            b.iter_batched(
                || BytesMut::from(&wire[..]),
                |mut buf| codec.decode(&mut buf).unwrap(),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, codecs, frames);
criterion_main!(benches);
