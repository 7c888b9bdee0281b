//! One test per row of the book's type table ("Rust types on the wire", in the Types and
//! codecs chapter): each row's types travel as a method's arguments and come back as its
//! return value, through a real server, in each of the three codecs. Message fields of the same
//! types are covered by `tests/types.rs`.

// The rows are spelled out in the signatures on purpose: they are what is under test.
#![allow(clippy::type_complexity)]

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wirecall::{Bytes, Channel, Codec, RunningServer, Server};

const CODECS: [Codec; 3] = [Codec::Json, Codec::MessagePack, Codec::Protobuf];

#[wirecall::message]
#[derive(Clone, PartialEq)]
struct Point {
    x: i32,
    label: String,
}

#[wirecall::message]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Level {
    Low,
    High = 5,
}

#[wirecall::message]
#[derive(Clone, PartialEq)]
enum Event {
    Tick,
    Moved(Point),
    Scaled(f32, f32),
    Renamed { from: String, to: String },
}

#[wirecall::message]
#[derive(Clone, PartialEq, thiserror::Error)]
enum Refusal {
    #[error("refused: {0}")]
    Because(String),
}

/// One method per row; each returns what it was given.
#[wirecall::service]
trait Rows {
    async fn boolean(&self, v: bool) -> bool;
    async fn signed(&self, a: i32, b: i64) -> (i32, i64);
    async fn unsigned(&self, a: u32, b: u64) -> (u32, u64);
    async fn small_unsigned(&self, a: u8, b: u16) -> (u8, u16);
    async fn small_signed(&self, a: i8, b: i16) -> (i8, i16);
    async fn floats(&self, a: f32, b: f64) -> (f32, f64);
    async fn letter(&self, v: char) -> char;
    async fn text(&self, v: String) -> String;
    async fn byte_list(&self, v: Vec<u8>, fixed: [u8; 3]) -> (Vec<u8>, [u8; 3]);
    async fn bytes(&self, v: Bytes) -> Bytes;
    async fn duration(&self, v: Duration) -> Duration;
    async fn time(&self, v: SystemTime) -> SystemTime;
    async fn message(&self, v: Point) -> Point;
    async fn unit_enum(&self, v: Level) -> Level;
    async fn data_enum(&self, v: Event) -> Event;
    async fn option(&self, v: Option<Point>, n: Option<u32>) -> (Option<Point>, Option<u32>);
    async fn lists(
        &self,
        list: Vec<Point>,
        hashed: HashSet<String>,
        sorted: BTreeSet<i64>,
    ) -> (Vec<Point>, HashSet<String>, BTreeSet<i64>);
    async fn array(&self, v: [Level; 2]) -> [Level; 2];
    async fn maps(
        &self,
        hashed: HashMap<String, Point>,
        sorted: BTreeMap<u32, Level>,
        lists: BTreeMap<char, Vec<u16>>,
    ) -> (
        HashMap<String, Point>,
        BTreeMap<u32, Level>,
        BTreeMap<char, Vec<u16>>,
    );
    async fn boxed(&self, v: Box<Point>, n: Box<u64>) -> (Box<Point>, Box<u64>);
    async fn tuple(
        &self,
        v: (u8, String, Level, Option<Point>, Vec<u32>, bool, f64, char),
    ) -> (u8, String, Level, Option<Point>, Vec<u32>, bool, f64, char);
    async fn result(&self, v: Option<Point>) -> Result<Point, Refusal>;
}

struct Echo;

impl Rows for Echo {
    async fn boolean(&self, v: bool) -> bool {
        v
    }
    async fn signed(&self, a: i32, b: i64) -> (i32, i64) {
        (a, b)
    }
    async fn unsigned(&self, a: u32, b: u64) -> (u32, u64) {
        (a, b)
    }
    async fn small_unsigned(&self, a: u8, b: u16) -> (u8, u16) {
        (a, b)
    }
    async fn small_signed(&self, a: i8, b: i16) -> (i8, i16) {
        (a, b)
    }
    async fn floats(&self, a: f32, b: f64) -> (f32, f64) {
        (a, b)
    }
    async fn letter(&self, v: char) -> char {
        v
    }
    async fn text(&self, v: String) -> String {
        v
    }
    async fn byte_list(&self, v: Vec<u8>, fixed: [u8; 3]) -> (Vec<u8>, [u8; 3]) {
        (v, fixed)
    }
    async fn bytes(&self, v: Bytes) -> Bytes {
        v
    }
    async fn duration(&self, v: Duration) -> Duration {
        v
    }
    async fn time(&self, v: SystemTime) -> SystemTime {
        v
    }
    async fn message(&self, v: Point) -> Point {
        v
    }
    async fn unit_enum(&self, v: Level) -> Level {
        v
    }
    async fn data_enum(&self, v: Event) -> Event {
        v
    }
    async fn option(&self, v: Option<Point>, n: Option<u32>) -> (Option<Point>, Option<u32>) {
        (v, n)
    }
    async fn lists(
        &self,
        list: Vec<Point>,
        hashed: HashSet<String>,
        sorted: BTreeSet<i64>,
    ) -> (Vec<Point>, HashSet<String>, BTreeSet<i64>) {
        (list, hashed, sorted)
    }
    async fn array(&self, v: [Level; 2]) -> [Level; 2] {
        v
    }
    async fn maps(
        &self,
        hashed: HashMap<String, Point>,
        sorted: BTreeMap<u32, Level>,
        lists: BTreeMap<char, Vec<u16>>,
    ) -> (
        HashMap<String, Point>,
        BTreeMap<u32, Level>,
        BTreeMap<char, Vec<u16>>,
    ) {
        (hashed, sorted, lists)
    }
    async fn boxed(&self, v: Box<Point>, n: Box<u64>) -> (Box<Point>, Box<u64>) {
        (v, n)
    }
    async fn tuple(
        &self,
        v: (u8, String, Level, Option<Point>, Vec<u32>, bool, f64, char),
    ) -> (u8, String, Level, Option<Point>, Vec<u32>, bool, f64, char) {
        v
    }
    async fn result(&self, v: Option<Point>) -> Result<Point, Refusal> {
        v.ok_or_else(|| Refusal::Because("nothing to return".to_owned()))
    }
}

/// A client per codec on one server.
async fn clients() -> (RunningServer, Vec<(Codec, RowsClient)>) {
    let server = Server::builder()
        .serve(RowsServer::new(Echo))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts");
    let mut clients = Vec::new();
    for codec in CODECS {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .expect("client connects");
        clients.push((codec, RowsClient::new(channel)));
    }
    (server, clients)
}

/// Sends each value through `call` in every codec and asserts it comes back equal.
async fn each_comes_back<T, F, Fut>(values: &[T], call: F)
where
    T: Clone + PartialEq + Debug,
    F: Fn(RowsClient, T) -> Fut,
    Fut: Future<Output = Result<T, wirecall::Error>>,
{
    let (_server, clients) = clients().await;
    for (codec, client) in clients {
        for value in values {
            let back = call(client.clone(), value.clone())
                .await
                .unwrap_or_else(|e| panic!("{codec}: {value:?}: {e}"));
            assert_eq!(&back, value, "{codec}");
        }
    }
}

fn point(x: i32) -> Point {
    Point {
        x,
        label: format!("p{x}"),
    }
}

#[tokio::test]
async fn row_bool() {
    each_comes_back(&[true, false], |c, v| async move { c.boolean(v).await }).await;
}

#[tokio::test]
async fn row_i32_i64() {
    let values = [(0, 0), (i32::MIN, i64::MIN), (i32::MAX, i64::MAX), (-1, -1)];
    each_comes_back(&values, |c, (a, b)| async move { c.signed(a, b).await }).await;
}

#[tokio::test]
async fn row_u32_u64() {
    let values = [(0, 0), (u32::MAX, u64::MAX), (1, 1 << 40)];
    each_comes_back(&values, |c, (a, b)| async move { c.unsigned(a, b).await }).await;
}

#[tokio::test]
async fn row_u8_u16() {
    let values = [(0, 0), (u8::MAX, u16::MAX), (7, 300)];
    each_comes_back(
        &values,
        |c, (a, b)| async move { c.small_unsigned(a, b).await },
    )
    .await;
}

#[tokio::test]
async fn row_i8_i16() {
    let values = [(0, 0), (i8::MIN, i16::MIN), (i8::MAX, i16::MAX), (-1, -300)];
    each_comes_back(
        &values,
        |c, (a, b)| async move { c.small_signed(a, b).await },
    )
    .await;
}

#[tokio::test]
async fn row_f32_f64_including_nan_and_the_infinities() {
    let values = [
        (0.0, 0.0),
        (-0.0, -0.0),
        (1.5, 0.1),
        (f32::MAX, f64::MIN_POSITIVE),
        (f32::INFINITY, f64::NEG_INFINITY),
        (f32::NEG_INFINITY, f64::INFINITY),
        (f32::NAN, f64::NAN),
    ];
    let (_server, clients) = clients().await;
    for (codec, client) in clients {
        for (a, b) in values {
            let (x, y) = client.floats(a, b).await.unwrap();
            // Bit for bit: the sign of zero and NaN (which is not equal to itself) included.
            assert_eq!(
                (x.to_bits(), y.to_bits()),
                (a.to_bits(), b.to_bits()),
                "{codec}: {a} {b}"
            );
        }
    }
}

#[tokio::test]
async fn row_char() {
    each_comes_back(&['a', '\0', '€', '🦀', char::MAX], |c, v| async move {
        c.letter(v).await
    })
    .await;
}

#[tokio::test]
async fn row_string() {
    let values = ["".to_owned(), "fanly".to_owned(), "ünï\"cøde\n".to_owned()];
    each_comes_back(&values, |c, v| async move { c.text(v).await }).await;
}

#[tokio::test]
async fn row_byte_list_and_byte_array() {
    let values = [(vec![], [0, 0, 0]), (vec![0, 255, 7], [1, 2, 255])];
    each_comes_back(&values, |c, (v, a)| async move { c.byte_list(v, a).await }).await;
}

#[tokio::test]
async fn row_bytes() {
    let values = [Bytes::new(), Bytes::from_static(&[0, 1, 254, 255])];
    each_comes_back(&values, |c, v| async move { c.bytes(v).await }).await;
}

#[tokio::test]
async fn row_duration() {
    let values = [
        Duration::ZERO,
        Duration::new(3, 999_999_999),
        Duration::from_nanos(1),
    ];
    each_comes_back(&values, |c, v| async move { c.duration(v).await }).await;
}

#[tokio::test]
async fn row_system_time() {
    let values = [UNIX_EPOCH, UNIX_EPOCH + Duration::new(1_700_000_000, 5)];
    each_comes_back(&values, |c, v| async move { c.time(v).await }).await;
}

#[tokio::test]
async fn row_message_struct() {
    each_comes_back(&[Point::default(), point(-9)], |c, v| async move {
        c.message(v).await
    })
    .await;
}

#[tokio::test]
async fn row_unit_enum() {
    each_comes_back(&[Level::Low, Level::High], |c, v| async move {
        c.unit_enum(v).await
    })
    .await;
}

#[tokio::test]
async fn row_enum_with_data() {
    let values = [
        Event::Tick,
        Event::Moved(point(3)),
        Event::Scaled(0.5, -2.0),
        Event::Renamed {
            from: "a".to_owned(),
            to: String::new(),
        },
    ];
    each_comes_back(&values, |c, v| async move { c.data_enum(v).await }).await;
}

#[tokio::test]
async fn row_option() {
    let values = [
        (None, None),
        (Some(point(1)), Some(0)),
        (None, Some(u32::MAX)),
    ];
    each_comes_back(&values, |c, (v, n)| async move { c.option(v, n).await }).await;
}

#[tokio::test]
async fn row_vec_hash_set_btree_set() {
    let values = [
        (vec![], HashSet::new(), BTreeSet::new()),
        (
            vec![point(1), Point::default(), point(2)],
            HashSet::from(["x".to_owned(), "y".to_owned(), "".to_owned()]),
            BTreeSet::from([i64::MIN, 0, 5]),
        ),
    ];
    each_comes_back(
        &values,
        |c, (l, h, s)| async move { c.lists(l, h, s).await },
    )
    .await;
}

#[tokio::test]
async fn row_fixed_array() {
    each_comes_back(
        &[[Level::Low, Level::High], [Level::High, Level::High]],
        |c, v| async move { c.array(v).await },
    )
    .await;
}

#[tokio::test]
async fn row_hash_map_btree_map_with_message_enum_and_list_values() {
    let values = [
        (HashMap::new(), BTreeMap::new(), BTreeMap::new()),
        (
            HashMap::from([
                ("a".to_owned(), point(1)),
                ("".to_owned(), Point::default()),
            ]),
            BTreeMap::from([(0, Level::High), (u32::MAX, Level::Low)]),
            BTreeMap::from([('x', vec![1, 2]), ('€', vec![])]),
        ),
    ];
    each_comes_back(&values, |c, (h, s, l)| async move { c.maps(h, s, l).await }).await;
}

#[tokio::test]
async fn row_box() {
    let values = [
        (Box::new(point(4)), Box::new(0)),
        (Box::default(), Box::new(u64::MAX)),
    ];
    each_comes_back(&values, |c, (v, n)| async move { c.boxed(v, n).await }).await;
}

#[tokio::test]
async fn row_tuple_of_eight() {
    let values = [
        (0, String::new(), Level::Low, None, vec![], false, 0.0, '\0'),
        (
            255,
            "t".to_owned(),
            Level::High,
            Some(point(8)),
            vec![1, 2, 3],
            true,
            -2.5,
            'z',
        ),
    ];
    each_comes_back(&values, |c, v| async move { c.tuple(v).await }).await;
}

#[tokio::test]
async fn row_result() {
    let (_server, clients) = clients().await;
    for (codec, client) in clients {
        assert_eq!(
            client.result(Some(point(2))).await.unwrap(),
            Ok(point(2)),
            "{codec}"
        );
        assert_eq!(
            client.result(None).await.unwrap(),
            Err(Refusal::Because("nothing to return".to_owned())),
            "{codec}"
        );
    }
}

#[test]
fn json_writes_nan_and_the_infinities_as_the_proto3_json_mapping_does() {
    #[wirecall::message]
    struct Reading {
        value: f64,
        history: Vec<f32>,
        last: Option<f64>,
    }
    let reading = Reading {
        value: f64::NAN,
        history: vec![f32::INFINITY, 1.0, f32::NEG_INFINITY],
        last: Some(f64::NEG_INFINITY),
    };
    let mut bytes = bytes::BytesMut::new();
    Codec::Json.encode(&reading, &mut bytes).unwrap();
    assert_eq!(
        std::str::from_utf8(&bytes).unwrap(),
        r#"{"value":"NaN","history":["Infinity",1.0,"-Infinity"],"last":"-Infinity"}"#
    );
    let back: Reading = Codec::Json.decode(&bytes).unwrap();
    assert!(back.value.is_nan());
    assert_eq!(back.history, reading.history);
    assert_eq!(back.last, Some(f64::NEG_INFINITY));
    // Only those three names are floats; anything else in their place is a decode error.
    let err = Codec::Json
        .decode::<Reading>(br#"{"value":"nan","history":[],"last":null}"#)
        .unwrap_err();
    assert!(err.to_string().contains("Infinity"), "{err}");
}
