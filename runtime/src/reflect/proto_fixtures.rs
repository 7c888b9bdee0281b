//! Services whose schemas cover every shape the `.proto` export has (scalars, `Option`,
//! lists, maps, tuples, unit enums, enums with data, well-known types, server streams,
//! uploads with and without arguments, `Result` replies), for the tests of the export and of
//! the gRPC descriptors built from it.

// Fixture fields and variants are documented only where a doc comment is part of the test.
#![allow(missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

use super::schema::ServiceSchema;
use crate::{Service as _, Streaming};

/// Where a tag was seen.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct Sighting {
    /// The place's name.
    pub place: String,
    pub at: SystemTime,
    pub after: Duration,
    pub confidence: Option<f64>,
    pub scores: Vec<u32>,
    pub raw: Vec<u8>,
    pub labels: BTreeMap<String, Vec<i64>>,
    pub pair: (u16, String),
    pub digest: [u8; 4],
    pub colour: Colour,
    pub event: Event,
    pub parent: Option<Box<Sighting>>,
    pub maybe: Option<Option<i32>>,
    pub grid: Vec<Vec<i8>>,
    pub counts: HashMap<u64, Option<bool>>,
    pub initial: char,
    pub colours: Vec<Colour>,
    pub history: Vec<(String, Option<Duration>)>,
}

/// A colour.
#[wirecall_macros::message]
#[derive(Clone, Copy, PartialEq)]
pub enum Colour {
    /// The default.
    Red,
    Blue = 5,
    #[wirecall(other)]
    Unknown = 9,
}

/// What happened.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub enum Event {
    Started,
    /// Moved somewhere.
    Moved {
        to: String,
        steps: u32,
        via: BTreeMap<String, Colour>,
        note: Option<String>,
    },
    Tagged(Colour),
    Pair(i32, String),
    Trail(Vec<String>),
}

/// Tags and their sightings.
#[wirecall_macros::service(name = "Tags")]
pub trait Tags {
    /// Records a sighting and echoes it.
    #[idempotent]
    async fn record(&self, sighting: Sighting, note: String) -> Sighting;
    /// Looks a sighting up.
    async fn lookup(&self, place: String) -> Result<Sighting, String>;
    async fn forget(&self, place: String) -> Result<(), String>;
    #[oneway]
    async fn ping(&self);
    /// Every sighting from `since` on.
    async fn watch(&self, since: SystemTime) -> Streaming<Sighting>;
}

/// A sensor hub: uploads with and without arguments, one of them answering with a stream.
#[wirecall_macros::service(name = "acme.Hub")]
pub trait Hub {
    async fn ingest(&self, readings: Streaming<f64>) -> u64;
    async fn tagged(&self, tag: String, readings: Streaming<Option<u32>>) -> Vec<Vec<u32>>;
    async fn echo(&self, prefix: String, lines: Streaming<Event>) -> Streaming<(u8, Colour)>;
    async fn windows(&self, spans: Streaming<Vec<Duration>>) -> HashMap<String, Option<i64>>;
}

/// A circle, also the name of a variant of [`Shape`].
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub struct Circle {
    pub radius: f64,
}

/// Inside `Shape`, `Circle` names the variant's nested message, which shadows the struct.
#[wirecall_macros::message]
#[derive(Clone, PartialEq)]
pub enum Shape {
    Circle {
        radius: f64,
        marks: BTreeMap<u32, Vec<String>>,
    },
    Other(Circle),
    Unknown,
}

/// Shapes, in a service of their own.
#[wirecall_macros::service(name = "Shapes")]
pub trait Shapes {
    async fn area(&self, shape: Shape, scale: Option<Vec<f32>>) -> Result<f64, Shape>;
}

impl Shapes for Nothing {
    async fn area(&self, _shape: Shape, _scale: Option<Vec<f32>>) -> Result<f64, Shape> {
        Ok(0.0)
    }
}

/// Implements the services with answers no test looks at.
pub struct Nothing;

impl Tags for Nothing {
    async fn record(&self, sighting: Sighting, _note: String) -> Sighting {
        sighting
    }
    async fn lookup(&self, _place: String) -> Result<Sighting, String> {
        Err(String::new())
    }
    async fn forget(&self, _place: String) -> Result<(), String> {
        Ok(())
    }
    async fn ping(&self) {}
    async fn watch(&self, _since: SystemTime) -> Streaming<Sighting> {
        Streaming::from_iter(Vec::new())
    }
}

impl Hub for Nothing {
    async fn ingest(&self, _readings: Streaming<f64>) -> u64 {
        0
    }
    async fn tagged(&self, _tag: String, _readings: Streaming<Option<u32>>) -> Vec<Vec<u32>> {
        Vec::new()
    }
    async fn echo(&self, _prefix: String, _lines: Streaming<Event>) -> Streaming<(u8, Colour)> {
        Streaming::from_iter(Vec::new())
    }
    async fn windows(&self, _spans: Streaming<Vec<Duration>>) -> HashMap<String, Option<i64>> {
        HashMap::new()
    }
}

/// The schema of `Tags`.
pub fn tags() -> ServiceSchema {
    TagsServer::new(Nothing).schema()
}

/// The schema of `acme.Hub`.
pub fn hub() -> ServiceSchema {
    HubServer::new(Nothing).schema()
}

/// The schema of `Shapes`.
pub fn shapes() -> ServiceSchema {
    ShapesServer::new(Nothing).schema()
}

/// A hand-written service that describes no types: the export leaves it out.
pub fn undescribed() -> ServiceSchema {
    ServiceSchema {
        name: "Opaque".into(),
        doc: String::new(),
        codecs: vec!["json".into()],
        methods: Vec::new(),
        types: Vec::new(),
        described: false,
    }
}
