//! The types Rust users send: enums (unit-only and with data, as arguments, returns, fields,
//! `Option`, `Vec`, map values and result errors, a `thiserror` enum included), small integers,
//! `char`, `Duration`, `SystemTime`, sets, `Box`, nested lists, `Option<Vec<T>>`, tuples,
//! fixed arrays and `Result<Option<T>, E>`. Every case round-trips through a real server in
//! each of the three codecs; hostile bytes are decode errors, never panics.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use wirecall::{Channel, Codec, RunningServer, Server};

const CODECS: [Codec; 3] = [Codec::Json, Codec::MessagePack, Codec::Protobuf];

/// A protobuf `enum`; `Red` is number 0, what a missing field decodes to.
#[wirecall::message]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Color {
    Red,
    Green,
    Blue = 7,
}

/// An enum with data: a oneof, one field per variant.
#[wirecall::message]
#[derive(Clone, PartialEq)]
enum Shape {
    Empty,
    Circle(f64),
    Rect(u32, u32),
    Poly {
        points: Vec<(i32, i32)>,
        color: Color,
    },
    Named(Box<Shape>, String),
    Lists(Vec<u32>),
}

/// An error enum written with thiserror, as Rust services usually do.
#[wirecall::message]
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum StoreError {
    #[error("no key {0:?}")]
    Missing(String),
    #[error("store is read-only")]
    ReadOnly,
    #[error("quota of {limit} bytes exceeded by {by}")]
    Quota { limit: u64, by: u64 },
}

#[wirecall::message]
#[derive(Clone, PartialEq)]
struct Everything {
    pub color: Color,
    pub maybe_color: Option<Color>,
    pub colors: Vec<Color>,
    pub by_name: HashMap<String, Color>,
    pub shape: Shape,
    pub shapes: Vec<Shape>,
    pub shape_map: BTreeMap<u32, Shape>,
    pub maybe_shape: Option<Shape>,
    pub small: u8,
    pub short: u16,
    pub tiny: i8,
    pub signed_short: i16,
    pub letter: char,
    pub timeout: Duration,
    pub at: SystemTime,
    pub maybe_at: Option<SystemTime>,
    pub ordered: BTreeMap<String, Vec<u32>>,
    pub unique: HashSet<String>,
    pub sorted: BTreeSet<i64>,
    pub boxed: Box<u64>,
    pub grid: Vec<Vec<u32>>,
    pub maybe_list: Option<Vec<String>>,
    pub holes: Vec<Option<u32>>,
    pub pair: (u32, String),
    pub key: [u8; 4],
    pub triple: [u16; 3],
    pub negative_zero: f64,
}

fn everything() -> Everything {
    Everything {
        color: Color::Blue,
        maybe_color: Some(Color::Red),
        colors: vec![Color::Green, Color::Red, Color::Blue],
        by_name: HashMap::from([
            ("sky".to_owned(), Color::Blue),
            ("fire".to_owned(), Color::Red),
        ]),
        shape: Shape::Poly {
            points: vec![(0, 0), (-3, 4)],
            color: Color::Green,
        },
        shapes: vec![
            Shape::Empty,
            Shape::Circle(0.0),
            Shape::Rect(0, 2),
            Shape::Named(Box::new(Shape::Circle(1.5)), "ring".to_owned()),
            Shape::Lists(vec![]),
        ],
        shape_map: BTreeMap::from([(1, Shape::Empty), (2, Shape::Lists(vec![1, 2]))]),
        maybe_shape: Some(Shape::Empty),
        small: 255,
        short: 65535,
        tiny: -128,
        signed_short: -32768,
        letter: '€',
        timeout: Duration::new(3, 500_000_000),
        at: UNIX_EPOCH + Duration::new(1_700_000_000, 123),
        maybe_at: None,
        ordered: BTreeMap::from([("a".to_owned(), vec![1, 2]), ("b".to_owned(), vec![])]),
        unique: HashSet::from(["x".to_owned(), "y".to_owned()]),
        sorted: BTreeSet::from([-5, 0, 9]),
        boxed: Box::new(42),
        grid: vec![vec![1, 2], vec![], vec![3]],
        maybe_list: Some(vec![]),
        holes: vec![Some(1), None, Some(0)],
        pair: (9, "nine".to_owned()),
        key: [0, 1, 2, 255],
        triple: [1, 0, 3],
        negative_zero: -0.0,
    }
}

#[wirecall::service]
trait Types {
    async fn color(&self, color: Color) -> Color;
    async fn colors(&self, colors: Vec<Color>, maybe: Option<Color>) -> Vec<Color>;
    async fn shape(&self, shape: Shape) -> Shape;
    async fn everything(&self, value: Everything) -> Everything;
    async fn get(&self, key: String) -> Result<u64, StoreError>;
    async fn lookup(&self, key: String) -> Result<Option<u64>, StoreError>;
    async fn list(&self, count: u32) -> Result<Vec<Color>, Color>;
    async fn pair(&self, pair: (u8, char)) -> (char, u8);
    async fn nested(&self, grid: Vec<Vec<u32>>) -> Option<Vec<u32>>;
    async fn when(&self, at: SystemTime, wait: Duration) -> SystemTime;
}

struct Impl;

impl Types for Impl {
    async fn color(&self, color: Color) -> Color {
        color
    }
    async fn colors(&self, mut colors: Vec<Color>, maybe: Option<Color>) -> Vec<Color> {
        colors.extend(maybe);
        colors
    }
    async fn shape(&self, shape: Shape) -> Shape {
        shape
    }
    async fn everything(&self, value: Everything) -> Everything {
        value
    }
    async fn get(&self, key: String) -> Result<u64, StoreError> {
        match key.as_str() {
            "one" => Ok(1),
            "ro" => Err(StoreError::ReadOnly),
            "big" => Err(StoreError::Quota { limit: 10, by: 0 }),
            _ => Err(StoreError::Missing(key)),
        }
    }
    async fn lookup(&self, key: String) -> Result<Option<u64>, StoreError> {
        match key.as_str() {
            "one" => Ok(Some(1)),
            "zero" => Ok(Some(0)),
            "none" => Ok(None),
            _ => Err(StoreError::Missing(key)),
        }
    }
    async fn list(&self, count: u32) -> Result<Vec<Color>, Color> {
        if count > 3 {
            Err(Color::Red)
        } else {
            Ok(vec![Color::Green; count as usize])
        }
    }
    async fn pair(&self, pair: (u8, char)) -> (char, u8) {
        (pair.1, pair.0)
    }
    async fn nested(&self, grid: Vec<Vec<u32>>) -> Option<Vec<u32>> {
        if grid.is_empty() {
            None
        } else {
            Some(grid.into_iter().flatten().collect())
        }
    }
    async fn when(&self, at: SystemTime, wait: Duration) -> SystemTime {
        at + wait
    }
}

async fn start() -> RunningServer {
    Server::builder()
        .serve(TypesServer::new(Impl))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts")
}

async fn client(server: &RunningServer, codec: Codec) -> TypesClient {
    let channel = Channel::builder()
        .codec(codec)
        .connect(server.local_addr())
        .await
        .expect("client connects");
    TypesClient::new(channel)
}

#[tokio::test]
async fn unit_enums_round_trip_as_arguments_returns_options_and_lists() {
    let server = start().await;
    for codec in CODECS {
        let client = client(&server, codec).await;
        for color in [Color::Red, Color::Green, Color::Blue] {
            assert_eq!(client.color(color).await.unwrap(), color, "{codec}");
        }
        let colors = client
            .colors(vec![Color::Blue, Color::Red], Some(Color::Red))
            .await
            .unwrap();
        assert_eq!(colors, [Color::Blue, Color::Red, Color::Red], "{codec}");
        assert_eq!(client.colors(vec![], None).await.unwrap(), [], "{codec}");
    }
}

#[tokio::test]
async fn enums_with_data_round_trip_in_every_variant() {
    let server = start().await;
    let shapes = [
        Shape::Empty,
        Shape::Circle(-0.0),
        Shape::Circle(2.5),
        Shape::Rect(0, 0),
        Shape::Rect(3, 4),
        Shape::Poly {
            points: vec![],
            color: Color::Red,
        },
        Shape::Poly {
            points: vec![(1, -1)],
            color: Color::Blue,
        },
        Shape::Named(
            Box::new(Shape::Named(Box::new(Shape::Empty), "in".to_owned())),
            "out".to_owned(),
        ),
        Shape::Lists(vec![0, 1]),
    ];
    for codec in CODECS {
        let client = client(&server, codec).await;
        for shape in &shapes {
            let back = client.shape(shape.clone()).await.unwrap();
            assert_eq!(&back, shape, "{codec}");
            if let (Shape::Circle(sent), Shape::Circle(got)) = (shape, &back) {
                assert_eq!(sent.to_bits(), got.to_bits(), "{codec}: sign of zero");
            }
        }
    }
}

#[tokio::test]
async fn every_standard_type_round_trips_as_message_fields() {
    let server = start().await;
    for codec in CODECS {
        let client = client(&server, codec).await;
        let back = client.everything(everything()).await.unwrap();
        assert_eq!(back, everything(), "{codec}");
        assert!(
            back.negative_zero.is_sign_negative(),
            "{codec}: -0.0 keeps its sign"
        );
        let back = client.everything(Everything::default()).await.unwrap();
        assert_eq!(back, Everything::default(), "{codec}");
    }
}

#[tokio::test]
async fn a_thiserror_enum_travels_as_the_error_of_a_result() {
    let server = start().await;
    for codec in CODECS {
        let client = client(&server, codec).await;
        assert_eq!(
            client.get("one".to_owned()).await.unwrap(),
            Ok(1),
            "{codec}"
        );
        assert_eq!(
            client.get("ro".to_owned()).await.unwrap(),
            Err(StoreError::ReadOnly),
            "{codec}"
        );
        let err = client.get("k".to_owned()).await.unwrap().unwrap_err();
        assert_eq!(err, StoreError::Missing("k".to_owned()), "{codec}");
        assert_eq!(err.to_string(), "no key \"k\"");
        assert_eq!(
            client.get("big".to_owned()).await.unwrap(),
            Err(StoreError::Quota { limit: 10, by: 0 }),
            "{codec}"
        );
    }
}

#[tokio::test]
async fn results_of_options_and_lists_keep_every_shape() {
    let server = start().await;
    for codec in CODECS {
        let client = client(&server, codec).await;
        assert_eq!(
            client.lookup("one".to_owned()).await.unwrap(),
            Ok(Some(1)),
            "{codec}"
        );
        assert_eq!(
            client.lookup("zero".to_owned()).await.unwrap(),
            Ok(Some(0)),
            "{codec}"
        );
        assert_eq!(
            client.lookup("none".to_owned()).await.unwrap(),
            Ok(None),
            "{codec}"
        );
        assert_eq!(
            client.lookup("x".to_owned()).await.unwrap(),
            Err(StoreError::Missing("x".to_owned())),
            "{codec}"
        );
        assert_eq!(client.list(0).await.unwrap(), Ok(vec![]), "{codec}");
        assert_eq!(
            client.list(2).await.unwrap(),
            Ok(vec![Color::Green; 2]),
            "{codec}"
        );
        assert_eq!(client.list(9).await.unwrap(), Err(Color::Red), "{codec}");
    }
}

#[tokio::test]
async fn tuples_nested_lists_and_times_round_trip_as_arguments_and_returns() {
    let server = start().await;
    let at = UNIX_EPOCH + Duration::new(1_000, 5);
    for codec in CODECS {
        let client = client(&server, codec).await;
        assert_eq!(
            client.pair((200, 'ß')).await.unwrap(),
            ('ß', 200),
            "{codec}"
        );
        assert_eq!(client.pair((0, '\0')).await.unwrap(), ('\0', 0), "{codec}");
        assert_eq!(client.nested(vec![]).await.unwrap(), None, "{codec}");
        assert_eq!(
            client.nested(vec![vec![]]).await.unwrap(),
            Some(vec![]),
            "{codec}"
        );
        assert_eq!(
            client.nested(vec![vec![1], vec![2, 3]]).await.unwrap(),
            Some(vec![1, 2, 3]),
            "{codec}"
        );
        assert_eq!(
            client.when(at, Duration::from_millis(1500)).await.unwrap(),
            at + Duration::from_millis(1500),
            "{codec}"
        );
    }
}

// ---- wire forms and hostile input, through the codecs directly ----

#[wirecall::message]
#[derive(PartialEq)]
struct Wide {
    value: u32,
    short: i32,
    signed: i32,
}

#[wirecall::message]
#[derive(PartialEq)]
struct Narrow {
    value: u8,
    short: u16,
    signed: i8,
}

fn encode<T: wirecall::WireMessage>(codec: Codec, value: &T) -> BytesMut {
    let mut buf = BytesMut::new();
    codec.encode(value, &mut buf).expect("encodes");
    buf
}

#[test]
fn small_integers_out_of_range_are_decode_errors_in_every_codec() {
    for wide in [
        Wide {
            value: 256,
            short: 0,
            signed: 0,
        },
        Wide {
            value: 0,
            short: 65536,
            signed: 0,
        },
        Wide {
            value: 0,
            short: -1,
            signed: 0,
        },
        Wide {
            value: 0,
            short: 0,
            signed: 128,
        },
        Wide {
            value: 0,
            short: 0,
            signed: -129,
        },
    ] {
        for codec in CODECS {
            let bytes = encode(codec, &wide);
            let err = codec.decode::<Narrow>(&bytes).expect_err("out of range");
            assert!(
                matches!(err, wirecall::CodecError::Decode { .. }),
                "{codec}: {err}"
            );
        }
    }
    let fits = Wide {
        value: 255,
        short: 65535,
        signed: -128,
    };
    for codec in CODECS {
        let narrow: Narrow = codec.decode(&encode(codec, &fits)).expect("in range");
        assert_eq!(
            (narrow.value, narrow.short, narrow.signed),
            (255, 65535, -128),
            "{codec}"
        );
    }
}

#[test]
fn a_char_is_a_code_point_in_protobuf_and_surrogates_are_decode_errors() {
    #[wirecall::message]
    struct Number {
        value: u32,
    }
    #[wirecall::message]
    struct Letter {
        value: char,
    }
    let letter: Letter = Codec::Protobuf
        .decode(&encode(Codec::Protobuf, &Number { value: 0x20AC }))
        .unwrap();
    assert_eq!(letter.value, '€');
    for value in [0xD800, 0x11_0000, u32::MAX] {
        let bytes = encode(Codec::Protobuf, &Number { value });
        assert!(
            Codec::Protobuf.decode::<Letter>(&bytes).is_err(),
            "{value:#x}"
        );
    }
}

#[test]
fn unit_enums_are_names_in_json_and_numbers_in_msgpack_and_protobuf() {
    #[wirecall::message]
    struct Holder {
        color: Color,
    }
    let holder = Holder { color: Color::Blue };
    assert_eq!(&encode(Codec::Json, &holder)[..], br#"{"color":"Blue"}"#);
    // [7]: a one-element array holding the number.
    assert_eq!(&encode(Codec::MessagePack, &holder)[..], [0x91, 0x07]);
    // Field 1, varint 7.
    assert_eq!(&encode(Codec::Protobuf, &holder)[..], [0x08, 0x07]);
}

#[test]
fn enums_with_data_are_externally_tagged_in_json() {
    #[wirecall::message]
    struct Holder {
        shape: Shape,
    }
    let json = |shape| String::from_utf8(encode(Codec::Json, &Holder { shape }).to_vec()).unwrap();
    assert_eq!(json(Shape::Empty), r#"{"shape":"Empty"}"#);
    assert_eq!(json(Shape::Circle(1.0)), r#"{"shape":{"Circle":1.0}}"#);
    assert_eq!(json(Shape::Rect(1, 2)), r#"{"shape":{"Rect":[1,2]}}"#);
    assert_eq!(
        json(Shape::Poly {
            points: vec![],
            color: Color::Red
        }),
        r#"{"shape":{"Poly":{"points":[],"color":"Red"}}}"#
    );
}

#[test]
fn durations_and_timestamps_are_the_well_known_protobuf_messages() {
    #[wirecall::message]
    struct Holder {
        wait: Duration,
    }
    // Field 1 holds google.protobuf.Duration { seconds: 3, nanos: 5 }.
    let bytes = encode(
        Codec::Protobuf,
        &Holder {
            wait: Duration::new(3, 5),
        },
    );
    assert_eq!(&bytes[..], [0x0a, 0x04, 0x08, 0x03, 0x10, 0x05]);
    // A negative duration from another implementation cannot be a `Duration`.
    let negative = [
        0x0a, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    assert!(Codec::Protobuf.decode::<Holder>(&negative).is_err());
    let min = [
        0x0a, 0x0b, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
    ];
    assert!(Codec::Protobuf.decode::<Holder>(&min).is_err());
}

#[test]
fn fixed_arrays_of_the_wrong_length_are_decode_errors() {
    #[wirecall::message]
    struct Five {
        key: Vec<u8>,
        grid: Vec<u16>,
    }
    #[wirecall::message]
    struct Four {
        key: [u8; 4],
        grid: [u16; 2],
    }
    for (key, grid) in [(vec![1; 5], vec![1, 2]), (vec![1; 4], vec![1, 2, 3])] {
        // The arrays' wire forms: `bytes`, and a list wrapped in a message.
        let five = Five { key, grid };
        for codec in [Codec::Json, Codec::MessagePack] {
            assert!(
                codec.decode::<Four>(&encode(codec, &five)).is_err(),
                "{codec}"
            );
        }
    }
    let four = Four {
        key: [1, 2, 3, 4],
        grid: [0, 9],
    };
    for codec in CODECS {
        assert_eq!(
            codec.decode::<Four>(&encode(codec, &four)).unwrap().key,
            [1, 2, 3, 4]
        );
    }
}

#[test]
fn truncated_and_garbage_bytes_never_panic() {
    let full = everything();
    for codec in CODECS {
        let bytes = encode(codec, &full);
        for len in 0..bytes.len() {
            let _ = codec.decode::<Everything>(&bytes[..len]);
        }
        let mut flipped = bytes.to_vec();
        for index in 0..flipped.len() {
            flipped[index] ^= 0xa5;
            let _ = codec.decode::<Everything>(&flipped);
            flipped[index] ^= 0xa5;
        }
    }
}

#[test]
fn deeply_nested_enums_hit_the_recursion_limit_instead_of_the_stack() {
    // 200 nested `Named` variants, hand-encoded: field 5 (Named) holding field 1 (the inner
    // shape) ... Protobuf's limit is 100 nested messages.
    let mut inner: Vec<u8> = vec![0x0a, 0x00]; // Empty
    for _ in 0..200 {
        let mut named = vec![0x0a];
        push_len(&mut named, inner.len());
        named.extend_from_slice(&inner);
        let mut outer = vec![0x2a];
        push_len(&mut outer, named.len());
        outer.extend_from_slice(&named);
        inner = outer;
    }
    let mut args = vec![0x0a];
    push_len(&mut args, inner.len());
    args.extend_from_slice(&inner);
    #[wirecall::message]
    struct ShapeArgs {
        shape: Shape,
    }
    let err = Codec::Protobuf
        .decode::<ShapeArgs>(&args)
        .expect_err("too deep");
    assert!(err.to_string().contains("recursion"), "{err}");
}

fn push_len(buf: &mut Vec<u8>, mut len: usize) {
    while len >= 0x80 {
        buf.push((len as u8) | 0x80);
        len >>= 7;
    }
    buf.push(len as u8);
}

mod properties {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    struct Small {
        byte: u8,
        short: i16,
        letter: char,
        wait: Duration,
        shape: Shape,
        color: Option<Color>,
        grid: Vec<Vec<u16>>,
        pair: (i8, Option<String>),
        key: [u8; 2],
    }

    fn shape() -> impl Strategy<Value = Shape> {
        prop_oneof![
            Just(Shape::Empty),
            any::<f64>().prop_map(Shape::Circle),
            (any::<u32>(), any::<u32>()).prop_map(|(w, h)| Shape::Rect(w, h)),
            vec(any::<u32>(), 0..4).prop_map(Shape::Lists),
        ]
    }

    fn color() -> impl Strategy<Value = Color> {
        prop_oneof![Just(Color::Red), Just(Color::Green), Just(Color::Blue)]
    }

    fn small() -> impl Strategy<Value = Small> {
        (
            (
                any::<u8>(),
                any::<i16>(),
                any::<char>(),
                any::<u64>(),
                0..1_000_000_000u32,
            ),
            shape(),
            proptest::option::of(color()),
            vec(vec(any::<u16>(), 0..3), 0..3),
            (any::<i8>(), proptest::option::of(".{0,4}")),
            any::<[u8; 2]>(),
        )
            .prop_map(
                |((byte, short, letter, secs, nanos), shape, color, grid, pair, key)| Small {
                    byte,
                    short,
                    letter,
                    wait: Duration::new(secs >> 2, nanos),
                    shape,
                    color,
                    grid,
                    pair,
                    key,
                },
            )
    }

    /// Equality that treats NaN as equal to itself (NaN must survive every codec).
    fn same(a: &Small, b: &Small) -> bool {
        match (&a.shape, &b.shape) {
            (Shape::Circle(x), Shape::Circle(y)) if x.is_nan() => {
                y.is_nan()
                    && Small {
                        shape: Shape::Empty,
                        ..a.clone()
                    } == Small {
                        shape: Shape::Empty,
                        ..b.clone()
                    }
            }
            _ => a == b,
        }
    }

    proptest! {
        #[test]
        fn any_value_of_the_new_types_round_trips_in_every_codec(value in small()) {
            for codec in CODECS {
                let back: Small = codec.decode(&encode(codec, &value)).unwrap();
                prop_assert!(same(&back, &value), "{codec}: {back:?} != {value:?}");
            }
        }

        #[test]
        fn arbitrary_bytes_decode_to_an_error_or_a_value_never_a_panic(
            bytes in vec(any::<u8>(), 0..256),
        ) {
            for codec in CODECS {
                let _ = codec.decode::<Small>(&bytes);
                let _ = codec.decode::<Everything>(&bytes);
            }
        }
    }
}

#[test]
fn json_floats_come_back_to_the_last_bit() {
    // serde_json's default parser returned 1.1869669388839099e86 for this one.
    for value in [
        1.18696693888391e86,
        0.1,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        -0.0,
    ] {
        let back: Shape = {
            #[wirecall::message]
            struct Holder {
                shape: Shape,
            }
            let bytes = encode(
                Codec::Json,
                &Holder {
                    shape: Shape::Circle(value),
                },
            );
            Codec::Json.decode::<Holder>(&bytes).unwrap().shape
        };
        match back {
            Shape::Circle(got) => assert_eq!(got.to_bits(), value.to_bits(), "{value:e}"),
            other => panic!("{other:?}"),
        }
    }
}

/// `depth` nested `Shape::Named` variants in the serde form of `codec`.
fn nested_named(codec: Codec, depth: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    match codec {
        Codec::Json => {
            bytes.extend_from_slice(br#"{"shape":"#);
            for _ in 0..depth {
                bytes.extend_from_slice(br#"{"Named":["#);
            }
            bytes.extend_from_slice(br#""Empty""#);
            for _ in 0..depth {
                bytes.extend_from_slice(br#","x"]}"#);
            }
            bytes.push(b'}');
            bytes
        }
        _ => {
            // [ {"Named": [ <shape>, "x" ]} ] ... innermost "Empty".
            bytes.push(0x91);
            for _ in 0..depth {
                bytes.extend_from_slice(&[0x81, 0xa5]);
                bytes.extend_from_slice(b"Named");
                bytes.push(0x92);
            }
            bytes.push(0xa5);
            bytes.extend_from_slice(b"Empty");
            for _ in 0..depth {
                bytes.extend_from_slice(&[0xa1, b'x']);
            }
            bytes
        }
    }
}

#[test]
fn deep_nesting_in_json_and_msgpack_is_a_decode_error_not_a_stack_overflow() {
    #[wirecall::message]
    struct Holder {
        shape: Shape,
    }
    // A thread with the smallest stack a tokio worker gets by default (2 MiB).
    let outcome = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            for codec in [Codec::Json, Codec::MessagePack] {
                let shallow = nested_named(codec, 3);
                codec
                    .decode::<Holder>(&shallow)
                    .unwrap_or_else(|e| panic!("{codec}: {e}"));
                let deep = nested_named(codec, 5_000);
                let err = codec.decode::<Holder>(&deep).expect_err("too deep");
                assert!(
                    err.to_string().contains("depth") || err.to_string().contains("recursion"),
                    "{codec}: {err}"
                );
            }
        })
        .unwrap()
        .join();
    assert!(outcome.is_ok());
}
