//! Properties of the byte-level layers: whatever goes in comes back out, and whatever bytes a
//! peer sends, the decoders neither panic nor hand out more than the configured maximum.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use proptest::collection::{hash_map, vec};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};
use wirecall::{Codec, MethodId};
use wirecall_runtime::negotiate::{
    negotiate_codec, ClientHello, Preference, ServerHello, MAX_CODECS,
};
use wirecall_runtime::transport::frame::{
    Frame, FrameCodec, FrameKind, HEADER_LEN, LENGTH_PREFIX_LEN,
};

/// A message with every field shape `#[wirecall::message]` supports.
#[wirecall::message]
#[derive(Clone, PartialEq)]
struct Profile {
    user_id: i32,
    serial: i64,
    visits: u64,
    active: bool,
    name: String,
    nickname: Option<String>,
    age: Option<i32>,
    scores: Vec<i64>,
    tags: Vec<String>,
    avatar: Vec<u8>,
    attributes: HashMap<String, String>,
    counters: HashMap<String, i64>,
    manager: Option<Contact>,
    contacts: Vec<Contact>,
}

#[wirecall::message]
#[derive(Clone, PartialEq)]
struct Contact {
    user_id: i32,
    email: String,
}

const CASES: u32 = 256;
const MAX_PAYLOAD: usize = 4 * 1024;

fn frame_kind() -> impl Strategy<Value = FrameKind> {
    (1u8..=7).prop_map(|wire| FrameKind::from_u8(wire).expect("1..=7 are frame kinds"))
}

fn frame() -> impl Strategy<Value = Frame> {
    (
        frame_kind(),
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        vec(any::<u8>(), 0..=MAX_PAYLOAD),
    )
        .prop_map(|(kind, request_id, method, deadline_ms, payload)| Frame {
            kind,
            request_id,
            method: MethodId::new(method),
            deadline_ms,
            flags: 0,
            payload: Bytes::from(payload),
        })
}

fn contact() -> impl Strategy<Value = Contact> {
    (any::<i32>(), ".{0,24}").prop_map(|(user_id, email)| Contact { user_id, email })
}

fn profile() -> impl Strategy<Value = Profile> {
    let scalars = (
        any::<i32>(),
        any::<i64>(),
        any::<u64>(),
        any::<bool>(),
        ".{0,40}",
        proptest::option::of(".{0,16}"),
        proptest::option::of(any::<i32>()),
    );
    let collections = (
        vec(any::<i64>(), 0..16),
        vec(".{0,12}", 0..8),
        vec(any::<u8>(), 0..64),
        hash_map(".{0,8}", ".{0,16}", 0..8),
        hash_map(".{0,8}", any::<i64>(), 0..8),
        proptest::option::of(contact()),
        vec(contact(), 0..4),
    );
    (scalars, collections).prop_map(
        |(
            (user_id, serial, visits, active, name, nickname, age),
            (scores, tags, avatar, attributes, counters, manager, contacts),
        )| Profile {
            user_id,
            serial,
            visits,
            active,
            name,
            nickname,
            age,
            scores,
            tags,
            avatar,
            attributes,
            counters,
            manager,
            contacts,
        },
    )
}

/// Splits `bytes` at the given cut points (taken modulo the length, sorted).
fn chunks(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    if bytes.is_empty() {
        return vec![Vec::new()];
    }
    let mut points: Vec<usize> = cuts.iter().map(|c| c % bytes.len()).collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|pair| bytes[pair[0]..pair[1]].to_vec())
        .collect()
}

/// Feeds `chunks` one at a time, decoding after each, until the decoder fails or the input
/// ends; returns the decoded frames and whether it failed.
fn decode_chunks(codec: &mut FrameCodec, chunks: &[Vec<u8>]) -> (Vec<Frame>, bool) {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(_) => return (frames, true),
            }
        }
    }
    (frames, false)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn any_frame_survives_encode_then_decode(frame in frame()) {
        let mut codec = FrameCodec::new(64 * 1024);
        let mut buf = BytesMut::new();
        codec.encode(frame.clone(), &mut buf).unwrap();
        prop_assert_eq!(buf.len(), LENGTH_PREFIX_LEN + HEADER_LEN + frame.payload.len());
        prop_assert_eq!(&buf[..], &frame.to_bytes()[..]);
        let decoded = codec.decode(&mut buf).unwrap();
        prop_assert_eq!(decoded, Some(frame));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn frames_split_at_arbitrary_points_decode_in_order(
        frames in vec(frame(), 1..6),
        cuts in vec(any::<usize>(), 0..24),
    ) {
        let mut codec = FrameCodec::new(64 * 1024);
        let mut wire = BytesMut::new();
        for frame in &frames {
            codec.encode(frame.clone(), &mut wire).unwrap();
        }
        let (decoded, failed) = decode_chunks(&mut codec, &chunks(&wire, &cuts));
        prop_assert!(!failed);
        prop_assert_eq!(decoded, frames);
    }

    #[test]
    fn a_frame_over_the_maximum_is_refused_by_the_encoder(
        max in (HEADER_LEN as u32)..256,
        extra in 1usize..64,
    ) {
        let mut codec = FrameCodec::new(max);
        let payload = vec![0u8; max as usize - HEADER_LEN + extra];
        let frame = Frame {
            kind: FrameKind::Request,
            request_id: 1,
            method: MethodId::new(1),
            deadline_ms: 0,
            flags: 0,
            payload: Bytes::from(payload),
        };
        let mut buf = BytesMut::new();
        prop_assert!(codec.encode(frame, &mut buf).is_err());
        prop_assert!(buf.is_empty(), "nothing is written for a refused frame");
    }

    #[test]
    fn arbitrary_bytes_never_yield_a_frame_over_the_maximum(
        max in (HEADER_LEN as u32)..2048,
        bytes in vec(any::<u8>(), 0..4096),
        cuts in vec(any::<usize>(), 0..16),
    ) {
        let mut codec = FrameCodec::new(max);
        let (frames, _failed) = decode_chunks(&mut codec, &chunks(&bytes, &cuts));
        let mut consumed = 0;
        for frame in &frames {
            prop_assert!(HEADER_LEN + frame.payload.len() <= max as usize);
            consumed += LENGTH_PREFIX_LEN + HEADER_LEN + frame.payload.len();
        }
        prop_assert!(consumed <= bytes.len());
    }

    #[test]
    fn plausible_length_prefixes_never_yield_a_frame_over_the_maximum(
        max in (HEADER_LEN as u32)..512,
        len in 0u32..1024,
        body in vec(any::<u8>(), 0..1100),
    ) {
        // Random bytes rarely start with a small length; build such prefixes on purpose.
        let mut wire = len.to_be_bytes().to_vec();
        wire.extend_from_slice(&body);
        let mut codec = FrameCodec::new(max);
        let (frames, failed) = decode_chunks(&mut codec, &[wire]);
        for frame in &frames {
            prop_assert!(HEADER_LEN + frame.payload.len() <= max as usize);
        }
        if len > max || (len as usize) < HEADER_LEN {
            prop_assert!(failed, "length {} with maximum {} must be refused", len, max);
            prop_assert!(frames.is_empty());
        }
    }

    #[test]
    fn any_message_round_trips_through_every_codec(profile in profile()) {
        for codec in Codec::available() {
            let mut buf = BytesMut::new();
            codec.encode(&profile, &mut buf).unwrap();
            let decoded: Profile = codec.decode(&buf).unwrap();
            prop_assert_eq!(&decoded, &profile, "{}", codec);
        }
    }

    #[test]
    fn arbitrary_bytes_decoded_as_a_message_fail_cleanly(bytes in vec(any::<u8>(), 0..512)) {
        for codec in Codec::available() {
            // Either outcome is fine; panicking or hanging is not.
            let _ = codec.decode::<Profile>(&bytes);
        }
    }

    #[test]
    fn arbitrary_bytes_parsed_as_a_client_hello_never_panic(bytes in vec(any::<u8>(), 0..40)) {
        if let Ok(Some((hello, used))) = ClientHello::parse(&bytes) {
            prop_assert!(used <= bytes.len());
            prop_assert!((1..=MAX_CODECS).contains(&hello.codecs.len()));
            prop_assert_eq!(&bytes[..4], b"WCAL");
            let again = hello.to_bytes();
            prop_assert_eq!(ClientHello::parse(&again).unwrap(), Some((hello, again.len())));
        }
    }

    #[test]
    fn arbitrary_bytes_after_the_magic_parsed_as_hellos_never_panic(
        rest in vec(any::<u8>(), 0..40),
    ) {
        let mut bytes = b"WCAL".to_vec();
        bytes.extend_from_slice(&rest);
        if let Ok(Some((hello, used))) = ClientHello::parse(&bytes) {
            // A version 1 hello has no extension block; a later one at least its length.
            let fixed = 7 + hello.codecs.len() + hello.token.len();
            prop_assert!(used == fixed || (hello.version >= 2 && used >= fixed + 2));
            prop_assert!((1..=MAX_CODECS).contains(&hello.codecs.len()));
            if hello.version < 2 {
                prop_assert_eq!(&hello.to_bytes()[..], &bytes[..used]);
            }
        }
        if let Ok(Some((hello, used))) = ServerHello::parse(&bytes) {
            let fixed = 8 + hello.supported.len();
            prop_assert!(used == fixed || (hello.version >= 2 && used >= fixed + 2));
            prop_assert!(hello.supported.len() <= MAX_CODECS);
            let again = hello.encode();
            prop_assert_eq!(ServerHello::parse(&again).unwrap(), Some((hello, again.len())));
        }
    }

    #[test]
    fn a_client_hello_round_trips_and_negotiates_an_offered_codec(
        offer in proptest::sample::subsequence(Codec::available(), 1..=Codec::available().len())
            .prop_shuffle(),
        supported in vec(proptest::sample::select(Codec::available()), 0..4),
        server_order in any::<bool>(),
    ) {
        let bytes = ClientHello::encode(&offer);
        let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
        prop_assert_eq!(used, bytes.len());
        let preference = if server_order { Preference::Server } else { Preference::Client };
        match negotiate_codec(&hello.codecs, &supported, preference) {
            Some(chosen) => {
                prop_assert!(offer.contains(&chosen));
                prop_assert!(supported.contains(&chosen));
            }
            None => prop_assert!(!offer.iter().any(|c| supported.contains(c))),
        }
    }

    #[test]
    fn negotiation_over_arbitrary_ids_only_picks_common_codecs(
        offered in vec(any::<u8>(), 0..20),
        supported in vec(proptest::sample::select(Codec::available()), 0..4),
        server_order in any::<bool>(),
    ) {
        let preference = if server_order { Preference::Server } else { Preference::Client };
        if let Some(chosen) = negotiate_codec(&offered, &supported, preference) {
            prop_assert!(offered.contains(&chosen.id()));
            prop_assert!(supported.contains(&chosen));
        }
    }
}
