//! The services of the `every_type` example: two services covering every type of the
//! gateway's JSON mapping, a `Reading` in each. The gateway's tests use them too.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use wirecall::Streaming;

/// The weather service: its `Reading` is not the lab's.
pub mod weather {
    use super::*;

    /// One observation of a station.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Reading {
        /// The station's name.
        pub station: String,
        /// Degrees Celsius.
        pub celsius: f64,
        /// How long after the hour it was taken.
        pub taken: Duration,
    }

    /// No reading for a station.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Missing {
        /// The station asked for.
        pub station: String,
    }

    /// Readings by station.
    #[wirecall::service]
    pub trait Weather {
        /// The latest reading of `station`: none for an empty name, an error for `nowhere`.
        async fn latest(&self, station: String) -> Result<Option<Reading>, Missing>;
        /// Records a reading (one-way).
        #[oneway]
        async fn record(&self, reading: Reading);
        /// `count` readings (at most 20), one by one.
        async fn watch(&self, count: u8) -> Streaming<Reading>;
        /// The latest reading of each of `stations` in turn, as `latest` answers it.
        async fn survey(
            &self,
            stations: Vec<String>,
        ) -> Streaming<Result<Option<Reading>, Missing>>;
        /// How many readings were uploaded.
        async fn upload(&self, readings: Streaming<Reading>) -> u64;
        /// Each uploaded reading back (bidirectional).
        async fn relay(&self, readings: Streaming<Reading>) -> Streaming<Reading>;
    }

    /// The weather service's handler.
    pub struct Station;

    impl Weather for Station {
        async fn latest(&self, station: String) -> Result<Option<Reading>, Missing> {
            match station.as_str() {
                "" => Ok(None),
                "nowhere" => Err(Missing { station }),
                _ => Ok(Some(Reading {
                    station,
                    celsius: 21.5,
                    taken: Duration::from_millis(1500),
                })),
            }
        }

        async fn record(&self, _reading: Reading) {}

        async fn watch(&self, count: u8) -> Streaming<Reading> {
            let readings = (0..count.min(20)).map(|n| Reading {
                station: format!("s{n}"),
                celsius: f64::from(n),
                taken: Duration::from_secs(n.into()),
            });
            Streaming::from_iter(readings)
        }

        async fn survey(
            &self,
            stations: Vec<String>,
        ) -> Streaming<Result<Option<Reading>, Missing>> {
            let mut answers = Vec::new();
            for station in stations.into_iter().take(20) {
                answers.push(self.latest(station).await);
            }
            Streaming::from_iter(answers)
        }

        async fn upload(&self, mut readings: Streaming<Reading>) -> u64 {
            let mut count = 0;
            while readings.next().await.is_some() {
                count += 1;
            }
            count
        }

        async fn relay(&self, readings: Streaming<Reading>) -> Streaming<Reading> {
            readings
        }
    }
}

/// The lab service: every other type.
pub mod lab {
    use super::*;

    /// A kind of sample; names this side does not know are `Unknown`.
    #[wirecall::message]
    #[derive(Clone, Copy, PartialEq)]
    pub enum Kind {
        /// Water.
        Water,
        /// Soil.
        Soil,
        /// Anything else.
        #[wirecall(other)]
        Unknown,
    }

    /// A shape: an enum with data.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub enum Shape {
        /// A point.
        Dot,
        /// A circle of this radius.
        Circle(f64),
        /// A rectangle.
        Rect {
            /// Width.
            w: u32,
            /// Height.
            h: u32,
        },
        /// A segment between two points.
        Segment(i16, i16),
    }

    /// One measurement of the lab: its `Reading` is not the weather's.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Reading {
        /// The sample's number.
        pub sample: u32,
        /// The values measured.
        pub values: Vec<f32>,
        /// The kind of sample.
        pub kind: Kind,
    }

    /// Every type the JSON mapping has, in one message.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Everything {
        /// u8.
        pub a_u8: u8,
        /// u16.
        pub a_u16: u16,
        /// u32.
        pub a_u32: u32,
        /// u64.
        pub a_u64: u64,
        /// i8.
        pub an_i8: i8,
        /// i16.
        pub an_i16: i16,
        /// i32.
        pub an_i32: i32,
        /// i64.
        pub an_i64: i64,
        /// f32.
        pub an_f32: f32,
        /// f64.
        pub an_f64: f64,
        /// bool.
        pub a_bool: bool,
        /// char.
        pub a_char: char,
        /// String.
        pub a_string: String,
        /// Bytes.
        pub some_bytes: Bytes,
        /// `Vec<u8>`.
        pub a_byte_list: Vec<u8>,
        /// An optional number.
        pub maybe: Option<u32>,
        /// A list.
        pub names: Vec<String>,
        /// A set.
        pub ids: BTreeSet<i32>,
        /// A fixed array.
        pub rgb: [u8; 3],
        /// A tuple.
        pub pair: (u16, String),
        /// A map with string keys.
        pub by_name: BTreeMap<String, i64>,
        /// A map with integer keys.
        pub by_id: BTreeMap<u32, String>,
        /// A map with signed keys.
        pub by_offset: BTreeMap<i8, bool>,
        /// A duration.
        pub wait: Duration,
        /// An enum with data.
        pub shape: Shape,
        /// An enum with a catch-all.
        pub kind: Kind,
        /// A nested message.
        pub reading: Reading,
        /// An optional nested message.
        pub spare: Option<Reading>,
    }

    /// A lab error.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub enum LabError {
        /// Division by zero.
        DivideByZero,
        /// A value out of range.
        OutOfRange {
            /// Which.
            what: String,
        },
    }

    /// Every type, echoed.
    #[wirecall::service]
    pub trait Lab {
        /// The message back as it was read.
        async fn echo(&self, all: Everything) -> Everything;
        /// `a / b`; `b == 0` is an error.
        async fn divide(&self, a: i64, b: i64) -> Result<i64, LabError>;
        /// The area of a shape (NaN for a segment, an infinity for a huge circle).
        async fn area(&self, shape: Shape) -> f64;
        /// A reading checked: a sample over 1000 is out of range.
        async fn check(&self, reading: Reading) -> Result<(), LabError>;
        /// The value of `Option<Option<T>>` argument, counted: 0 absent, 1 `Some(None)`, 2.
        async fn depth(&self, nested: Option<Option<u8>>) -> u8;
    }

    /// The lab's handler.
    pub struct Bench;

    impl Lab for Bench {
        async fn echo(&self, all: Everything) -> Everything {
            all
        }

        async fn divide(&self, a: i64, b: i64) -> Result<i64, LabError> {
            a.checked_div(b).ok_or(LabError::DivideByZero)
        }

        async fn area(&self, shape: Shape) -> f64 {
            match shape {
                Shape::Dot => 0.0,
                Shape::Circle(radius) => std::f64::consts::PI * radius * radius,
                Shape::Rect { w, h } => f64::from(w) * f64::from(h),
                Shape::Segment(..) => f64::NAN,
            }
        }

        async fn check(&self, reading: Reading) -> Result<(), LabError> {
            if reading.sample > 1000 {
                return Err(LabError::OutOfRange {
                    what: "sample".into(),
                });
            }
            Ok(())
        }

        async fn depth(&self, nested: Option<Option<u8>>) -> u8 {
            match nested {
                None => 0,
                Some(None) => 1,
                Some(Some(_)) => 2,
            }
        }
    }
}
