//! The hellos' encoding and parsing: round trips, refusals, the extension block.

use super::*;

#[test]
fn client_hello_round_trips() {
    let bytes = ClientHello::encode(&[Codec::MessagePack, Codec::Json]);
    assert_eq!(bytes, b"WCAL\x06\x02\x02\x01\x00\x00\x00");
    let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(hello.codecs, vec![2, 1]);
    assert!(hello.token.is_empty());
}

#[test]
fn client_hello_carries_a_token() {
    let bytes = ClientHello::encode_with_token(&[Codec::Json], b"s3cret");
    assert_eq!(bytes, b"WCAL\x06\x01\x01\x06s3cret\x00\x00");
    let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(hello.token, b"s3cret");
    assert!(!format!("{hello:?}").contains("s3cret"));
}

#[test]
fn partial_hellos_ask_for_more() {
    for token in [&b""[..], b"token"] {
        let bytes = ClientHello::encode_with_token(&[Codec::Protobuf], token);
        for cut in 0..bytes.len() {
            assert_eq!(
                ClientHello::parse(&bytes[..cut]).unwrap(),
                None,
                "cut at {cut}"
            );
        }
    }
}

#[test]
fn wrong_magic_is_rejected_from_the_first_byte() {
    assert!(matches!(
        ClientHello::parse(b"G"),
        Err(NegotiationError::BadMagic(_))
    ));
    assert!(matches!(
        ClientHello::parse(b"GET / HTTP/1.1"),
        Err(NegotiationError::BadMagic(_))
    ));
}

#[test]
fn empty_codec_list_is_malformed() {
    assert!(matches!(
        ClientHello::parse(b"WCAL\x01\x00"),
        Err(NegotiationError::BadCodecCount(0))
    ));
}

fn client_hello(max_frame_len: Option<u32>) -> ClientHello {
    ClientHello {
        version: PROTOCOL_VERSION,
        codecs: vec![2, 1],
        token: b"s3cret".to_vec(),
        max_frame_len,
        early_calls: max_frame_len.is_some(),
        compression: Vec::new(),
    }
}

/// A driver reads exactly what the parser asks for, so the parser must never ask for a
/// byte beyond the hello, and must ask for more than it has until the hello is whole.
#[test]
fn the_parser_never_asks_for_bytes_past_the_hello() {
    let mut bytes = client_hello(Some(1 << 20)).to_bytes();
    let len = bytes.len();
    bytes.extend_from_slice(b"the first frame");
    for cut in 0..len {
        match ClientHello::parse_progress(&bytes[..cut]).unwrap() {
            Progress::Need(total) => assert!(cut < total && total <= len, "cut {cut}"),
            Progress::Done(..) => panic!("done at {cut} of {len}"),
        }
    }
    let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
    assert_eq!((hello, used), (client_hello(Some(1 << 20)), len));
}

#[test]
fn the_frame_limit_round_trips_in_both_hellos() {
    for max in [None, Some(64), Some(u32::MAX)] {
        let bytes = client_hello(max).to_bytes();
        assert_eq!(
            ClientHello::parse(&bytes).unwrap().unwrap().0,
            client_hello(max)
        );
        let server = ServerHello {
            version: 2,
            status: HelloStatus::Accepted,
            codec: 2,
            supported: vec![2, 3, 1],
            max_frame_len: max,
            early_calls: max.is_none(),
            compression: Vec::new(),
        };
        let bytes = server.encode();
        assert_eq!(
            ServerHello::parse(&bytes).unwrap().unwrap(),
            (server, bytes.len())
        );
    }
}

#[test]
fn a_version_1_hello_has_no_extension_block() {
    let mut hello = client_hello(Some(4096));
    hello.version = 1;
    let bytes = hello.to_bytes();
    assert_eq!(bytes.len(), 7 + 2 + 6);
    let (parsed, _) = ClientHello::parse(&bytes).unwrap().unwrap();
    assert_eq!(parsed.max_frame_len, None);
}

#[test]
fn unknown_extensions_are_skipped() {
    let mut bytes = b"WCAL\x02\x01\x01\x00".to_vec();
    // type 9 (unknown, 3 bytes), then the frame limit.
    bytes.extend_from_slice(&[0, 11, 9, 3, 0xaa, 0xbb, 0xcc, 1, 4, 0, 0, 0x10, 0]);
    let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
    assert_eq!((hello.max_frame_len, used), (Some(4096), bytes.len()));
}

#[test]
fn early_calls_is_an_empty_entry_after_the_frame_limit() {
    let hello = client_hello(Some(4096));
    let bytes = hello.to_bytes();
    assert!(
        bytes.ends_with(&[0, 8, 1, 4, 0, 0, 0x10, 0, 2, 0]),
        "{bytes:?}"
    );
    // Alone, and in either order with the frame limit.
    for (extensions, max) in [
        (&[0u8, 2, 2, 0][..], None),
        (&[0, 8, 2, 0, 1, 4, 0, 0, 0x10, 0][..], Some(4096)),
    ] {
        let mut bytes = b"WCAL\x02\x01\x01\x00".to_vec();
        bytes.extend_from_slice(extensions);
        let (hello, _) = ClientHello::parse(&bytes).unwrap().unwrap();
        assert!(hello.early_calls);
        assert_eq!(hello.max_frame_len, max);
    }
}

#[test]
fn malformed_extensions_are_refused() {
    let cases: [&[u8]; 11] = [
        // An entry longer than the block.
        &[0, 3, 1, 4, 0],
        // A frame limit of 3 bytes.
        &[0, 5, 1, 3, 0, 0, 1],
        // A frame limit smaller than a frame header.
        &[0, 6, 1, 4, 0, 0, 0, 5],
        // The frame limit twice.
        &[0, 12, 1, 4, 0, 0, 1, 0, 1, 4, 0, 0, 1, 0],
        // A stray byte after the entries.
        &[0, 1, 7],
        // Early calls with a value.
        &[0, 3, 2, 1, 0],
        // Early calls twice.
        &[0, 4, 2, 0, 2, 0],
        // An empty compression list.
        &[0, 2, 3, 0],
        // An algorithm listed twice.
        &[0, 4, 3, 2, 1, 1],
        // Nine algorithms.
        &[0, 11, 3, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        // Compression twice.
        &[0, 6, 3, 1, 1, 3, 1, 1],
    ];
    for extensions in cases {
        let mut bytes = b"WCAL\x05\x01\x01\x00".to_vec();
        bytes.extend_from_slice(extensions);
        let err = ClientHello::parse(&bytes).unwrap_err();
        assert!(
            matches!(err, NegotiationError::BadExtensions(_)),
            "{extensions:?}: {err}"
        );
    }
    // A block over the limit is refused from its length alone.
    let err = ClientHello::parse(b"WCAL\x02\x01\x01\x00\xff\xff").unwrap_err();
    assert!(matches!(err, NegotiationError::BadExtensions(_)), "{err}");
}

#[test]
fn compression_is_offered_from_version_5_on_and_round_trips() {
    let hello = |version| ClientHello {
        version,
        codecs: vec![1],
        token: Vec::new(),
        max_frame_len: None,
        early_calls: false,
        compression: vec![1, 7],
    };
    let bytes = hello(5).to_bytes();
    assert!(bytes.ends_with(&[0, 4, 3, 2, 1, 7]), "{bytes:02x?}");
    assert_eq!(ClientHello::parse(&bytes).unwrap().unwrap().0, hello(5));
    // A version 4 hello has no such extension to carry it, and one that carries it
    // anyway has it skipped as unknown: the hello parses, and re-encodes without it.
    let older = ClientHello::parse(&hello(4).to_bytes()).unwrap().unwrap().0;
    assert!(older.compression.is_empty());
    let mut stray = b"WCAL\x04\x01\x01\x00\x00\x04\x03\x02\x01\x01".to_vec();
    let (parsed, used) = ClientHello::parse(&stray).unwrap().unwrap();
    assert_eq!((parsed.compression.len(), used), (0, stray.len()));
    stray.truncate(8);
    stray.extend_from_slice(&[0, 0]);
    assert_eq!(parsed.to_bytes(), stray);
    let server = ServerHello {
        version: 5,
        status: HelloStatus::Accepted,
        codec: 1,
        supported: vec![1],
        max_frame_len: None,
        early_calls: true,
        compression: vec![1],
    };
    let bytes = server.encode();
    assert!(bytes.ends_with(&[0, 5, 2, 0, 3, 1, 1]), "{bytes:02x?}");
    assert_eq!(ServerHello::parse(&bytes).unwrap().unwrap().0, server);
}

#[test]
fn a_codec_listed_twice_is_refused() {
    let err = ClientHello::parse(b"WCAL\x02\x03\x02\x01\x02\x00\x00\x00").unwrap_err();
    assert!(matches!(err, NegotiationError::DuplicateCodec(2)), "{err}");
    let err = ServerHello::parse(b"WCAL\x02\x00\x01\x02\x01\x01\x00\x00").unwrap_err();
    assert!(matches!(err, NegotiationError::DuplicateCodec(1)), "{err}");
}
