//! The Python client's Protobuf fixture: the `Tags` fixture service's schema, its descriptor
//! set, and sightings (every shape the Protobuf form has) in their JSON form and encoded in
//! Protobuf by this crate's codec. The Python tests read them back and write them again with
//! dynamic messages built from the descriptors, so the two sides cannot drift apart unseen.
//!
//! The file is committed; this test fails when it is stale and rewrites it when
//! `WIRECALL_WRITE_FIXTURES=1` is set.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use bytes::BytesMut;
use serde_json::{json, Value};

use super::descriptor_set;
use crate::codec::Codec;
use crate::reflect::proto_fixtures::{tags, Colour, Event, Sighting};

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../clients/python/tests/fixtures/tags_protobuf.json")
}

fn sightings() -> Vec<Sighting> {
    let plain = Sighting {
        place: "dock".into(),
        at: SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 5),
        after: Duration::new(3, 250),
        confidence: None,
        scores: Vec::new(),
        raw: Vec::new(),
        labels: BTreeMap::new(),
        pair: (0, String::new()),
        digest: [0; 4],
        colour: Colour::Red,
        event: Event::Started,
        parent: None,
        maybe: None,
        grid: Vec::new(),
        counts: HashMap::new(),
        initial: 'a',
        colours: Vec::new(),
        history: Vec::new(),
    };
    let rich = Sighting {
        place: "quay".into(),
        confidence: Some(0.5),
        scores: vec![1, 300, 70_000],
        raw: vec![0, 1, 255],
        labels: BTreeMap::from([("north".to_owned(), vec![-1, 2])]),
        pair: (7, "seven".into()),
        digest: [1, 2, 3, 4],
        colour: Colour::Blue,
        event: Event::Moved {
            to: "pier".into(),
            steps: 12,
            via: BTreeMap::from([("gate".to_owned(), Colour::Blue)]),
            note: Some("windy".into()),
        },
        parent: Some(Box::new(Sighting {
            event: Event::Pair(-4, "four".into()),
            maybe: Some(Some(9)),
            ..plain.clone()
        })),
        maybe: Some(None),
        grid: vec![vec![1, -2], Vec::new(), vec![3]],
        counts: HashMap::from([(42, Some(true))]),
        initial: 'é',
        colours: vec![Colour::Blue, Colour::Red],
        history: vec![
            ("then".into(), Some(Duration::new(1, 0))),
            ("never".into(), None),
        ],
        ..plain.clone()
    };
    let tagged = Sighting {
        event: Event::Tagged(Colour::Blue),
        ..plain.clone()
    };
    let trail = Sighting {
        event: Event::Trail(vec!["a".into(), "b".into()]),
        ..plain.clone()
    };
    vec![plain, rich, tagged, trail]
}

fn fixture() -> Value {
    let schema = tags();
    let descriptors = descriptor_set(&schema, "wirecall.services").expect("Tags speaks Protobuf");
    let sightings: Vec<Value> = sightings()
        .iter()
        .map(|sighting| {
            let mut protobuf = BytesMut::new();
            Codec::Protobuf
                .encode(sighting, &mut protobuf)
                .expect("encodes");
            json!({
                "json": serde_json::to_value(sighting).expect("to JSON"),
                "protobuf": protobuf.to_vec(),
            })
        })
        .collect();
    json!({
        "schema": serde_json::to_value(&schema).expect("to JSON"),
        "descriptors": descriptors,
        "sightings": sightings,
    })
}

#[test]
fn the_python_fixture_is_current() {
    let expected = serde_json::to_string_pretty(&fixture()).expect("serialises") + "\n";
    let path = fixture_path();
    if std::env::var_os("WIRECALL_WRITE_FIXTURES").is_some() {
        std::fs::write(&path, &expected).expect("writes the fixture");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == expected,
        "{} is stale: rerun with WIRECALL_WRITE_FIXTURES=1",
        path.display()
    );
}
