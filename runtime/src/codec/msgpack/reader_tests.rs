//! The reader against rmp-serde's, which it replaced: the same inputs, read as the same types,
//! give the same values, or both an error.

use std::collections::BTreeMap;
use std::fmt::Debug;

use bytes::Bytes;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};

use super::reader::Reader;
use super::MAX_DEPTH;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Fields {
    a: u32,
    b: String,
    c: Option<Vec<u8>>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Unit;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Newtype(u32);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Pair(u8, i64);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Variants {
    A,
    B(u32),
    C(u8, String),
    D { x: i32 },
}

fn ours<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    T::deserialize(&mut Reader::new(bytes, MAX_DEPTH)).map_err(|e| e.to_string())
}

fn theirs<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let mut deserializer = rmp_serde::Deserializer::from_read_ref(bytes);
    deserializer.set_max_depth(MAX_DEPTH);
    T::deserialize(&mut deserializer).map_err(|e| e.to_string())
}

/// Both readers read `bytes` as a `T` to the same value (compared by their `Debug` form, so
/// that NaN equals itself), or both refuse it.
fn agree<T: DeserializeOwned + Debug>(bytes: &[u8]) {
    match (ours::<T>(bytes), theirs::<T>(bytes)) {
        (Ok(ours), Ok(theirs)) => assert_eq!(
            format!("{ours:?}"),
            format!("{theirs:?}"),
            "{} from {bytes:02x?}",
            std::any::type_name::<T>()
        ),
        (Err(_), Err(_)) => {}
        (ours, theirs) => panic!(
            "{} from {bytes:02x?}: this reader {ours:?}, rmp-serde {theirs:?}",
            std::any::type_name::<T>()
        ),
    }
}

/// Every type the comparison reads.
fn agree_on_every_type(bytes: &[u8]) {
    agree::<bool>(bytes);
    agree::<u8>(bytes);
    agree::<u16>(bytes);
    agree::<u32>(bytes);
    agree::<u64>(bytes);
    agree::<i8>(bytes);
    agree::<i16>(bytes);
    agree::<i32>(bytes);
    agree::<i64>(bytes);
    agree::<i128>(bytes);
    agree::<u128>(bytes);
    agree::<f32>(bytes);
    agree::<f64>(bytes);
    agree::<char>(bytes);
    agree::<String>(bytes);
    agree::<()>(bytes);
    agree::<Vec<u8>>(bytes);
    agree::<Vec<u32>>(bytes);
    agree::<Vec<String>>(bytes);
    agree::<[u8; 2]>(bytes);
    agree::<Bytes>(bytes);
    agree::<Option<u32>>(bytes);
    agree::<Option<Option<u32>>>(bytes);
    agree::<(u8, String)>(bytes);
    agree::<BTreeMap<String, u32>>(bytes);
    agree::<BTreeMap<u8, Option<String>>>(bytes);
    agree::<Fields>(bytes);
    agree::<Option<Fields>>(bytes);
    agree::<Vec<Fields>>(bytes);
    agree::<Unit>(bytes);
    agree::<Newtype>(bytes);
    agree::<Pair>(bytes);
    agree::<Variants>(bytes);
    // Not `Vec<Variants>`: see `a_byte_string_read_as_an_array_gives_each_byte_as_a_number`.
    agree::<IgnoredAny>(bytes);
}

#[test]
fn what_rmp_serde_writes_reads_back_the_same() {
    let fields = Fields {
        a: 7,
        b: "héllo".into(),
        c: Some(vec![0, 127, 128, 255]),
    };
    let inputs = [
        rmp_serde::to_vec(&fields).unwrap(),
        rmp_serde::to_vec_named(&fields).unwrap(),
        rmp_serde::to_vec(&vec![Variants::A, Variants::B(300)]).unwrap(),
        rmp_serde::to_vec(&Variants::C(1, "x".into())).unwrap(),
        rmp_serde::to_vec(&Variants::D { x: -70_000 }).unwrap(),
        rmp_serde::to_vec_named(&Variants::D { x: 5 }).unwrap(),
        rmp_serde::to_vec(&Unit).unwrap(),
        rmp_serde::to_vec(&Newtype(u32::MAX)).unwrap(),
        rmp_serde::to_vec(&Pair(255, i64::MIN)).unwrap(),
        rmp_serde::to_vec(&Some(Some(5u32))).unwrap(),
        rmp_serde::to_vec(&Bytes::from_static(b"\x00\xff")).unwrap(),
        rmp_serde::to_vec(&(f32::NAN, f64::INFINITY)).unwrap(),
        rmp_serde::to_vec(&[u64::MAX, 0, 1 << 40]).unwrap(),
        rmp_serde::to_vec(&BTreeMap::from([(1u8, Some("z")), (2, None)])).unwrap(),
        rmp_serde::to_vec(&'é').unwrap(),
        rmp_serde::to_vec(&(u128::MAX, i128::MIN, -5i128)).unwrap(),
    ];
    for input in &inputs {
        agree_on_every_type(input);
    }
    assert_eq!(ours::<Fields>(&inputs[0]), Ok(fields));
    assert_eq!(
        ours::<Vec<Variants>>(&inputs[2]),
        Ok(vec![Variants::A, Variants::B(300)])
    );
}

/// Writes one random MessagePack value, nesting up to `depth` more levels, in any of the
/// encodings a writer may choose (a small number in a wide form, a short string as `str16`).
fn random_value(rng: &mut fastrand::Rng, depth: u32, out: &mut Vec<u8>) {
    const TEXTS: &[&[u8]] = &[
        b"",
        b"a",
        b"b",
        b"c",
        b"x",
        b"A",
        b"B",
        b"C",
        b"D",
        b"E",
        b"ab",
        "é".as_bytes(),
        b"\xff",
    ];
    let kinds = if depth == 0 { 9 } else { 12 };
    match rng.u8(0..kinds) {
        0 => out.push(0xc0),
        1 => out.push(if rng.bool() { 0xc3 } else { 0xc2 }),
        2 => {
            let value = match rng.u8(0..4) {
                0 => rng.u64(0..3),
                1 => rng.u64(126..260),
                2 => rng.u64(65_530..65_540),
                _ => rng.u64(..),
            };
            match rng.u8(0..5) {
                0 if value < 128 => out.push(value as u8),
                0 | 1 if value <= 0xff => out.extend([0xcc, value as u8]),
                0..=2 if value <= 0xffff => {
                    out.push(0xcd);
                    out.extend((value as u16).to_be_bytes());
                }
                0..=3 if value <= 0xffff_ffff => {
                    out.push(0xce);
                    out.extend((value as u32).to_be_bytes());
                }
                _ => {
                    out.push(0xcf);
                    out.extend(value.to_be_bytes());
                }
            }
        }
        3 => {
            let value = match rng.u8(0..3) {
                0 => rng.i64(-40..0),
                1 => rng.i64(-200..200),
                _ => rng.i64(..),
            };
            match rng.u8(0..5) {
                0 if (-32..0).contains(&value) => out.push(value as u8),
                0 | 1 if i8::try_from(value).is_ok() => out.extend([0xd0, value as u8]),
                0..=2 if i16::try_from(value).is_ok() => {
                    out.push(0xd1);
                    out.extend((value as i16).to_be_bytes());
                }
                0..=3 if i32::try_from(value).is_ok() => {
                    out.push(0xd2);
                    out.extend((value as i32).to_be_bytes());
                }
                _ => {
                    out.push(0xd3);
                    out.extend(value.to_be_bytes());
                }
            }
        }
        4 => {
            if rng.bool() {
                out.push(0xca);
                out.extend((rng.f32() * 100.0 - 50.0).to_be_bytes());
            } else {
                out.push(0xcb);
                out.extend((rng.f64() * 1e9).to_be_bytes());
            }
        }
        5 => {
            let text = TEXTS[rng.usize(..TEXTS.len())];
            match rng.u8(0..3) {
                0 => out.push(0xa0 | text.len() as u8),
                1 => out.extend([0xd9, text.len() as u8]),
                _ => {
                    out.push(0xda);
                    out.extend((text.len() as u16).to_be_bytes());
                }
            }
            out.extend(text);
        }
        6 => {
            let len = if rng.u8(0..8) == 0 {
                16
            } else {
                rng.usize(0..5)
            };
            if rng.bool() {
                out.extend([0xc4, len as u8]);
            } else {
                out.push(0xc5);
                out.extend((len as u16).to_be_bytes());
            }
            out.extend((0..len).map(|_| rng.u8(..)));
        }
        7 => {
            if rng.bool() {
                out.extend([0xd4, rng.u8(..), rng.u8(..)]);
            } else {
                out.extend([0xc7, 2, rng.u8(..), rng.u8(..), rng.u8(..)]);
            }
        }
        8 => out.push(if rng.u8(0..8) == 0 { 0xc1 } else { 0xc0 }),
        9 => {
            let len = rng.usize(0..4);
            if rng.bool() {
                out.push(0x90 | len as u8);
            } else {
                out.push(0xdc);
                out.extend((len as u16).to_be_bytes());
            }
            for _ in 0..len {
                random_value(rng, depth - 1, out);
            }
        }
        10 => {
            let len = rng.usize(0..3);
            out.push(0x80 | len as u8);
            for _ in 0..2 * len {
                random_value(rng, depth - 1, out);
            }
        }
        _ => {
            // An enum variant with data, or a struct of one field by name.
            out.push(if rng.bool() { 0x81 } else { 0x91 });
            random_value(rng, 0, out);
            random_value(rng, depth - 1, out);
        }
    }
}

#[test]
fn random_values_read_the_same_or_fail_in_both() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0001);
    let mut input = Vec::new();
    for round in 0..6_000 {
        input.clear();
        random_value(&mut rng, 3, &mut input);
        agree_on_every_type(&input);
        // Cut short somewhere, now and then.
        if round % 4 == 0 && !input.is_empty() {
            agree_on_every_type(&input[..rng.usize(..input.len())]);
        }
    }
}

#[test]
fn random_bytes_read_the_same_or_fail_in_both() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0002);
    for _ in 0..6_000 {
        let input: Vec<u8> = (0..rng.usize(0..12)).map(|_| rng.u8(..)).collect();
        agree_on_every_type(&input);
    }
}

#[test]
fn a_byte_string_read_as_an_array_gives_each_byte_as_a_number() {
    let input = [0xc4, 3, 0, 1, 200];
    assert_eq!(ours::<Vec<u8>>(&input), theirs::<Vec<u8>>(&input));
    assert_eq!(ours::<Vec<u8>>(&input), Ok(vec![0, 1, 200]));
    assert_eq!(ours::<Vec<u16>>(&input), Ok(vec![0, 1, 200]));
    // Each byte is read as a MessagePack number, so a type that takes a number among other
    // things takes it here too, where rmp-serde, which offered each byte only as a `u8`,
    // refused: an enum takes it as a variant's index.
    assert_eq!(
        ours::<Vec<Variants>>(&[0xc4, 2, 0, 0]),
        Ok(vec![Variants::A, Variants::A])
    );
    assert!(theirs::<Vec<Variants>>(&[0xc4, 2, 0, 0]).is_err());
}

#[test]
fn nesting_past_the_limit_is_refused_without_recursing_further() {
    for depth in [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, 10_000] {
        let mut input = vec![0x91; depth];
        input.push(0xc0);
        agree::<IgnoredAny>(&input);
    }
    let deep = [0x91; 10_000];
    let err = ours::<IgnoredAny>(&deep).unwrap_err();
    assert!(err.contains("depth limit"), "{err}");
}

#[test]
fn extension_values_are_refused_where_read_and_skipped_where_ignored() {
    let ext = [0xd4, 1, 2];
    assert!(ours::<u32>(&ext).unwrap_err().contains("extension"));
    assert!(ours::<Bytes>(&ext).unwrap_err().contains("extension"));
    // An extension as an element nobody reads (a field a newer peer added) is skipped.
    let array = [0x92, 7, 0xd4, 1, 2];
    assert!(ours::<IgnoredAny>(&array).is_ok());
    assert!(ours::<(u32, IgnoredAny)>(&array).is_ok());
}

#[test]
fn strings_and_byte_strings_borrow_from_the_payload() {
    let input = [0x92, 0xa2, b'h', b'i', 0xc4, 2, 1, 2];
    let (text, bytes): (&str, &[u8]) = ours_borrowed(&input);
    assert_eq!(text, "hi");
    assert_eq!(bytes, [1, 2]);
    assert!(std::ptr::eq(text.as_ptr(), input[2..].as_ptr()));
    assert!(std::ptr::eq(bytes.as_ptr(), input[6..].as_ptr()));
}

fn ours_borrowed<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> T {
    T::deserialize(&mut Reader::new(bytes, MAX_DEPTH)).unwrap()
}
