// `Option<Option<T>>` keeps `Some(None)` apart from `None` in every codec, in a struct field
// and in the fields of enum variants alike (the book's type table: `[value]` in JSON).

use wirecall::__private::prost::Message as _;

#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct Patch {
    pub name: Option<Option<String>>,
}

#[wirecall::message]
#[derive(Clone, PartialEq)]
pub enum Change {
    Named { name: Option<Option<String>> },
    Pair(Option<Option<u8>>, u8),
    Alone(Option<Option<u8>>),
}

/// An enum decodes from Protobuf as a field of a message.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct Holder {
    pub change: Change,
}

fn protobuf_round_trip(change: &Change) -> Change {
    let holder = Holder { change: change.clone() };
    Holder::decode(holder.encode_to_vec().as_slice())
        .expect("protobuf decodes")
        .change
}

fn main() {
    for name in [None, Some(None), Some(Some("ada".to_owned()))] {
        let patch = Patch { name: name.clone() };
        let json = serde_json::to_string(&patch).expect("json encodes");
        let back: Patch = serde_json::from_str(&json).expect("json decodes");
        assert!(back == patch, "{json}");
        let change = Change::Named { name };
        let json = serde_json::to_string(&change).expect("json encodes");
        let back: Change = serde_json::from_str(&json).expect("json decodes");
        assert!(back == change, "{json}");
        assert!(protobuf_round_trip(&change) == change);
    }
    for value in [None, Some(None), Some(Some(7))] {
        for change in [Change::Pair(value, 1), Change::Alone(value)] {
            let json = serde_json::to_string(&change).expect("json encodes");
            let back: Change = serde_json::from_str(&json).expect("json decodes");
            assert!(back == change, "{json}");
            assert!(protobuf_round_trip(&change) == change);
        }
    }
    assert_eq!(
        serde_json::to_string(&Change::Alone(Some(None))).expect("json encodes"),
        r#"{"Alone":[null]}"#
    );
}
