//! Schema evolution, the rule a rolling restart needs: a message may gain a field at the end
//! or lose one, and an enum may gain a variant; old and new peers still talk, in every codec.
//! Each case encodes with one version and decodes with the other, both ways.

use bytes::BytesMut;
use wirecall::{Codec, WireMessage};

const CODECS: [Codec; 3] = [Codec::Json, Codec::MessagePack, Codec::Protobuf];

mod v1 {
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct User {
        pub id: u64,
        pub name: String,
        pub level: super::v1::Level,
    }

    #[wirecall::message]
    #[derive(Clone, Copy, PartialEq)]
    pub enum Level {
        Guest,
        Member,
        #[wirecall(other)]
        Unknown,
    }

    #[wirecall::message]
    #[derive(Clone, Copy, PartialEq)]
    pub enum Strict {
        A,
        B,
    }

    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Holder {
        pub strict: Strict,
    }
}

mod v2 {
    /// v1's `User` with a field added at the end.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct User {
        pub id: u64,
        pub name: String,
        pub level: Level,
        pub email: String,
    }

    /// v1's `Level` with a variant added before the catch-all.
    #[wirecall::message]
    #[derive(Clone, Copy, PartialEq)]
    pub enum Level {
        Guest,
        Member,
        Admin = 3,
        #[wirecall(other)]
        Unknown = 2,
    }

    #[wirecall::message]
    #[derive(Clone, Copy, PartialEq)]
    pub enum Strict {
        A,
        B,
        C,
    }

    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Holder {
        pub strict: Strict,
    }

    /// v1's `User` without its last field.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct SlimUser {
        pub id: u64,
        pub name: String,
    }
}

fn recode<A: WireMessage, B: WireMessage>(
    codec: Codec,
    value: &A,
) -> Result<B, wirecall::CodecError> {
    let mut buf = BytesMut::new();
    codec.encode(value, &mut buf).expect("encodes");
    codec.decode(&buf)
}

fn ada_v1() -> v1::User {
    v1::User {
        id: 7,
        name: "ada".to_owned(),
        level: v1::Level::Member,
    }
}

fn ada_v2() -> v2::User {
    v2::User {
        id: 7,
        name: "ada".to_owned(),
        level: v2::Level::Member,
        email: "ada@example.org".to_owned(),
    }
}

#[test]
fn a_new_peer_reads_an_old_message_without_the_added_field() {
    for codec in CODECS {
        let user: v2::User = recode(codec, &ada_v1()).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(
            user,
            v2::User {
                email: String::new(),
                ..ada_v2()
            },
            "{codec}"
        );
    }
}

#[test]
fn an_old_peer_reads_a_new_message_and_ignores_the_added_field() {
    for codec in CODECS {
        let user: v1::User = recode(codec, &ada_v2()).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(user, ada_v1(), "{codec}");
    }
}

#[test]
fn a_peer_that_removed_the_last_field_still_talks_both_ways() {
    for codec in CODECS {
        let slim: v2::SlimUser =
            recode(codec, &ada_v1()).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!((slim.id, slim.name.as_str()), (7, "ada"), "{codec}");
        let user: v1::User = recode(codec, &slim).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(
            user,
            v1::User {
                level: v1::Level::Guest,
                ..ada_v1()
            },
            "{codec}"
        );
    }
}

#[test]
fn a_new_enum_variant_reaches_an_old_peer_as_its_catch_all() {
    for codec in CODECS {
        let admin = v2::User {
            level: v2::Level::Admin,
            ..ada_v2()
        };
        let user: v1::User = recode(codec, &admin).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(user.level, v1::Level::Unknown, "{codec}");
        // And the old variants still mean the same to the new peer.
        let user: v2::User = recode(codec, &ada_v1()).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(user.level, v2::Level::Member, "{codec}");
    }
}

#[test]
fn a_new_enum_variant_without_a_catch_all_is_a_decode_error_for_an_old_peer() {
    for codec in CODECS {
        let new = v2::Holder {
            strict: v2::Strict::C,
        };
        let err = recode::<_, v1::Holder>(codec, &new).expect_err("unknown variant");
        assert!(
            err.to_string().contains("decoding failed"),
            "{codec}: {err}"
        );
        let old: v2::Holder = recode(
            codec,
            &v1::Holder {
                strict: v1::Strict::B,
            },
        )
        .unwrap();
        assert_eq!(old.strict, v2::Strict::B, "{codec}");
    }
}

mod events_v1 {
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub enum Event {
        Started(u64),
        Moved {
            to: String,
        },
        #[wirecall(other)]
        Unknown,
    }

    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Log {
        pub events: Vec<Event>,
    }
}

mod events_v2 {
    /// A variant added at the end, before the catch-all.
    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub enum Event {
        Started(u64),
        Moved {
            to: String,
        },
        Stopped,
        #[wirecall(other)]
        Unknown,
    }

    #[wirecall::message]
    #[derive(Clone, PartialEq)]
    pub struct Log {
        pub events: Vec<Event>,
    }
}

#[test]
fn a_new_variant_of_an_enum_with_data_reaches_an_old_peer_as_its_catch_all() {
    use events_v1::Event as Old;
    use events_v2::Event as New;
    let new = events_v2::Log {
        events: vec![
            New::Started(1),
            New::Stopped,
            New::Moved { to: "x".to_owned() },
            New::Unknown,
        ],
    };
    let old_log = events_v1::Log {
        events: vec![
            Old::Started(1),
            Old::Unknown,
            Old::Moved { to: "x".to_owned() },
        ],
    };
    for codec in CODECS {
        let old: events_v1::Log = recode(codec, &new).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(
            old.events,
            [
                Old::Started(1),
                Old::Unknown,
                Old::Moved { to: "x".to_owned() },
                Old::Unknown
            ],
            "{codec}"
        );
        let back: events_v2::Log =
            recode(codec, &old_log).unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(
            back.events,
            [
                New::Started(1),
                New::Unknown,
                New::Moved { to: "x".to_owned() }
            ],
            "{codec}"
        );
    }
}

#[test]
fn a_value_that_is_not_a_message_is_refused_naming_the_message() {
    // JSON: a bool, a number, a string and null where `User` is expected.
    for text in ["true", "-3", "7", "1.5", r#""ada""#, "null"] {
        let err = Codec::Json
            .decode::<v1::User>(text.as_bytes())
            .expect_err(text)
            .to_string();
        assert!(
            err.contains("a `User` message (a map of fields or an array)"),
            "{text}: {err}"
        );
    }
    // MessagePack: true, -3, 7, 1.5, "ada" and nil. (rmp-serde hands a `bin` to a struct as
    // the sequence of its bytes, which fails on the first field instead.)
    let packed: [&[u8]; 6] = [
        &[0xC3],
        &[0xFD],
        &[0x07],
        &[0xCB, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0],
        &[0xA3, b'a', b'd', b'a'],
        &[0xC0],
    ];
    for bytes in packed {
        let err = Codec::MessagePack
            .decode::<v1::User>(bytes)
            .expect_err("not a message")
            .to_string();
        assert!(
            err.contains("a `User` message (a map of fields or an array)"),
            "{bytes:02X?}: {err}"
        );
    }
}

#[test]
fn a_message_packed_as_a_map_by_another_writer_is_read_by_field_name_or_index() {
    // What a MessagePack writer other than wirecall may send for v1's `User`: a map instead
    // of wirecall's array, keyed by field name (as a string or as bytes) or by field index,
    // with keys the struct does not have. Those are skipped; `level`, absent, takes its
    // default.
    let by_name: &[u8] = &[
        0x83, // a map of 3 entries
        0xA2, b'i', b'd', 0x07, // "id": 7
        0xA3, b'z', b'z', b'z', 0xA1, b'x', // "zzz": "x", unknown
        0xA4, b'n', b'a', b'm', b'e', 0xA3, b'a', b'd', b'a', // "name": "ada"
    ];
    let by_bytes: &[u8] = &[
        0x83, // a map of 3 entries
        0xC4, 0x02, b'i', b'd', 0x07, // bin "id": 7
        0xC4, 0x01, 0xFF, 0x01, // a key that is not UTF-8: 1, skipped
        0xC4, 0x04, b'n', b'a', b'm', b'e', 0xA3, b'a', b'd', b'a', // bin "name": "ada"
    ];
    let by_index: &[u8] = &[
        0x83, // a map of 3 entries
        0x00, 0x07, // field 0: 7
        0x09, 0xC0, // field 9, past the struct's three: nil, skipped
        0x01, 0xA3, b'a', b'd', b'a', // field 1: "ada"
    ];
    for (form, bytes) in [
        ("by name", by_name),
        ("by bytes", by_bytes),
        ("by index", by_index),
    ] {
        let user: v1::User = Codec::MessagePack.decode(bytes).expect(form);
        assert_eq!(
            (user.id, user.name.as_str(), user.level),
            (7, "ada", v1::User::default().level),
            "{form}"
        );
    }
}
