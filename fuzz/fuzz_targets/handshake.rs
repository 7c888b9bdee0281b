//! Parses arbitrary bytes as client and server hellos and negotiates over whatever the client
//! hello offers. Invariants: no panic; a parsed hello never claims more bytes than it was
//! given, lists 1..=16 (client) or 0..=16 (server) codecs, and re-encodes to bytes that parse
//! back to the same hello (to the very same bytes for a version 1 hello, which has no
//! extension block whose unknown entries a re-encoding drops); a negotiated codec is both
//! offered and supported.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wirecall_runtime::negotiate::{
    negotiate_codec, ClientHello, Preference, ServerHello, MAX_CODECS, PROTOCOL_VERSION,
};
use wirecall_runtime::Codec;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((hello, used))) = ClientHello::parse(data) {
        assert!(used <= data.len());
        assert!((1..=MAX_CODECS).contains(&hello.codecs.len()));
        let again = hello.to_bytes();
        assert_eq!(
            ClientHello::parse(&again).unwrap(),
            Some((hello.clone(), again.len()))
        );
        if hello.version < 2 {
            assert_eq!(again, &data[..used]);
        }
        for preference in [Preference::Client, Preference::Server] {
            for supported in [Codec::available(), vec![Codec::Protobuf], Vec::new()] {
                if let Some(chosen) = negotiate_codec(&hello.codecs, &supported, preference) {
                    assert!(hello.codecs.contains(&chosen.id()));
                    assert!(supported.contains(&chosen));
                }
            }
        }
        if hello.version == PROTOCOL_VERSION {
            let known: Vec<Codec> = hello
                .codecs
                .iter()
                .filter_map(|id| Codec::from_id(*id))
                .collect();
            if known.len() == hello.codecs.len()
                && hello.max_frame_len.is_none()
                && !hello.early_calls
                && hello.compression.is_empty()
            {
                let encoded = ClientHello::encode_with_token(&known, &hello.token);
                assert_eq!(ClientHello::parse(&encoded).unwrap().unwrap().0, hello);
            }
        }
    }
    if let Ok(Some((hello, used))) = ServerHello::parse(data) {
        assert!(used <= data.len());
        assert!(hello.supported.len() <= MAX_CODECS);
        let again = hello.encode();
        assert_eq!(
            ServerHello::parse(&again).unwrap(),
            Some((hello.clone(), again.len()))
        );
        if hello.version < 2 {
            assert_eq!(again, &data[..used]);
        }
    }
});
