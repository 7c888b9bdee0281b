// `#[wirecall::message]` structs encode with every codec: round-trip through protobuf and JSON.

use std::collections::{BTreeMap, HashMap};

use wirecall::__private::prost::Message as _;
use wirecall::message;

#[message]
#[derive(Clone, PartialEq)]
pub struct Address {
    pub city: String,
    pub zip: u32,
}

#[message]
#[derive(Clone, PartialEq, Debug)]
pub struct Person {
    pub name: String,
    pub age: u32,
    pub score: f64,
    pub active: bool,
    pub tags: Vec<String>,
    pub lucky_numbers: Vec<i64>,
    pub nickname: Option<String>,
    pub home: Address,
    pub work: Option<Address>,
    pub previous: Vec<Address>,
    pub attributes: HashMap<String, String>,
    pub friends: BTreeMap<u64, Address>,
    pub avatar: Vec<u8>,
    pub chunks: Vec<Vec<u8>>,
    pub key: wirecall::__private::Bytes,
}

#[message]
pub struct Empty {}

fn sample() -> Person {
    let mut person = Person {
        name: "Ada".to_owned(),
        age: 36,
        score: 9.5,
        active: true,
        tags: vec!["math".to_owned()],
        lucky_numbers: vec![-1, 7],
        nickname: Some("countess".to_owned()),
        home: Address { city: "London".to_owned(), zip: 1 },
        work: None,
        previous: vec![Address { city: "Paris".to_owned(), zip: 2 }],
        attributes: HashMap::new(),
        friends: BTreeMap::new(),
        avatar: vec![1, 2, 3],
        chunks: vec![vec![4], vec![]],
        key: wirecall::__private::Bytes::from_static(b"k"),
    };
    person.attributes.insert("lang".to_owned(), "en".to_owned());
    person.friends.insert(7, Address { city: "Turin".to_owned(), zip: 3 });
    person
}

fn main() {
    let person = sample();

    let encoded = person.encode_to_vec();
    let decoded = Person::decode(encoded.as_slice()).expect("protobuf decodes");
    assert_eq!(decoded, person);

    let json = serde_json::to_string(&person).expect("json encodes");
    let decoded: Person = serde_json::from_str(&json).expect("json decodes");
    assert_eq!(decoded, person);

    // prost provides `Default`; the user's own `Debug` derive is kept.
    assert_eq!(Person::default().age, 0);
    let _ = format!("{person:?} {:?}", Address::default());
    assert_eq!(Empty::default().encode_to_vec().len(), 0);
}
