//! Where wirecall's JSON follows the proto3 JSON mapping rather than serde_json's defaults.
//!
//! - **NaN and the infinities** are the strings `"NaN"`, `"Infinity"` and `"-Infinity"`. JSON
//!   numbers cannot say them, and serde_json writes such a float as `null`, which does not
//!   read back as a float (or reads back as `None` for an `Option<f64>`).
//! - **Byte strings** are base64 text from protocol version 6 on (see `byte_strings.rs`).
//!
//! A float or a byte string is serialised by the impl of whatever type contains it
//! (`Vec<f64>`, a map value, a field of a message), so neither rule can live in those impls.
//! serde_json hands every byte string to its [`Formatter`](serde_json::ser::Formatter), so
//! [`JsonFormatter`] writes them. A non-finite float it writes as `null` before a formatter
//! sees it, so that rule lives in the serializer and the deserializer instead: [`Ser`] and
//! [`De`] wrap serde_json's and pass every call through unchanged, except floats (and, in
//! `De`, byte strings, read in either form).
//!
//! Both adapters wrap every value, element, key and variant they hand on, so the rules hold at
//! any depth. Everything is generic and inlines away: JSON encoding and decoding of other
//! values costs what it did without the adapter.
//!
//! Layout: `names.rs` is the three names; `byte_strings.rs` the base64 of byte strings and the
//! formatter; `ser.rs` the serializer adapter, `de.rs` the deserializer adapter.

mod byte_strings;
mod de;
mod names;
mod ser;

pub(crate) use byte_strings::{BytesAs, JsonFormatter};
pub(super) use de::De;
pub(super) use ser::Ser;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::{BytesAs, De, JsonFormatter, Ser};

    fn to_json<T: Serialize>(value: &T) -> String {
        to_json_as(value, BytesAs::Base64)
    }

    fn to_json_as<T: Serialize>(value: &T, bytes: BytesAs) -> String {
        let mut out = Vec::new();
        value
            .serialize(Ser(&mut serde_json::Serializer::with_formatter(
                &mut out,
                JsonFormatter(bytes),
            )))
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn from_json<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = T::deserialize(De(&mut de))?;
        de.end()?;
        Ok(value)
    }

    #[derive(Debug, Serialize, Deserialize)]
    enum Shape {
        Circle(f64),
        Rect { w: f32, h: f32 },
        Pair(f64, f64),
    }

    #[test]
    fn non_finite_floats_are_strings_at_any_depth() {
        assert_eq!(to_json(&f64::NAN), r#""NaN""#);
        assert_eq!(to_json(&f32::INFINITY), r#""Infinity""#);
        assert_eq!(to_json(&f64::NEG_INFINITY), r#""-Infinity""#);
        assert_eq!(to_json(&Some(f64::NAN)), r#""NaN""#);
        assert_eq!(to_json(&vec![1.5, f64::INFINITY]), r#"[1.5,"Infinity"]"#);
        let map = BTreeMap::from([("x".to_owned(), f32::NEG_INFINITY)]);
        assert_eq!(to_json(&map), r#"{"x":"-Infinity"}"#);
        assert_eq!(to_json(&Shape::Circle(f64::NAN)), r#"{"Circle":"NaN"}"#);
        assert_eq!(
            to_json(&Shape::Rect {
                w: f32::INFINITY,
                h: 2.0
            }),
            r#"{"Rect":{"w":"Infinity","h":2.0}}"#
        );
        assert_eq!(
            to_json(&Shape::Pair(f64::NEG_INFINITY, 0.5)),
            r#"{"Pair":["-Infinity",0.5]}"#
        );
        // Finite values and strings are untouched.
        assert_eq!(to_json(&(-0.0f64, "NaN")), r#"[-0.0,"NaN"]"#);
    }

    #[test]
    fn the_names_read_back_where_a_float_is_expected() {
        assert!(from_json::<f64>(r#""NaN""#).unwrap().is_nan());
        assert_eq!(from_json::<f32>(r#""Infinity""#).unwrap(), f32::INFINITY);
        assert_eq!(
            from_json::<Vec<f64>>(r#"[1, -2, 0.25, "-Infinity"]"#).unwrap(),
            [1.0, -2.0, 0.25, f64::NEG_INFINITY]
        );
        assert!(from_json::<Option<f64>>(r#""NaN""#)
            .unwrap()
            .unwrap()
            .is_nan());
        assert_eq!(from_json::<Option<f64>>("null").unwrap(), None);
        match from_json::<Shape>(r#"{"Rect":{"w":"Infinity","h":"-Infinity"}}"#).unwrap() {
            Shape::Rect { w, h } => assert_eq!((w, h), (f32::INFINITY, f32::NEG_INFINITY)),
            other => panic!("decoded {other:?}"),
        }
        let map: BTreeMap<String, f64> = from_json(r#"{"a":"NaN"}"#).unwrap();
        assert!(map["a"].is_nan());
        // A string field named like a float keeps its text.
        assert_eq!(from_json::<String>(r#""NaN""#).unwrap(), "NaN");
        // Finite values keep every bit.
        assert_eq!(
            from_json::<f64>("-0.0").unwrap().to_bits(),
            (-0.0f64).to_bits()
        );
        assert_eq!(from_json::<f64>("0.1").unwrap(), 0.1);
    }

    #[test]
    fn other_strings_and_null_are_not_floats() {
        for text in [r#""nan""#, r#""inf""#, r#""1.5""#, "null", "true", "[]"] {
            let err = from_json::<f64>(text).unwrap_err();
            assert!(err.is_data(), "{text}: {err}");
        }
        let err = from_json::<f64>(r#""infinity""#).unwrap_err().to_string();
        assert!(err.contains(r#""NaN", "Infinity", "-Infinity""#), "{err}");
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Blob {
        data: bytes::Bytes,
        maybe: Option<bytes::Bytes>,
        many: Vec<bytes::Bytes>,
        raw: Vec<u8>,
    }

    fn blob() -> Blob {
        Blob {
            data: bytes::Bytes::from_static(b"wirecall"),
            maybe: Some(bytes::Bytes::from_static(&[0xfb, 0xff])),
            many: vec![bytes::Bytes::new(), bytes::Bytes::from_static(b"a")],
            raw: vec![1, 2],
        }
    }

    #[test]
    fn byte_strings_are_base64_at_any_depth_and_vec_u8_stays_an_array() {
        assert_eq!(
            to_json(&blob()),
            r#"{"data":"d2lyZWNhbGw=","maybe":"+/8=","many":["","YQ=="],"raw":[1,2]}"#
        );
        assert_eq!(
            to_json_as(&blob(), BytesAs::Numbers),
            r#"{"data":[119,105,114,101,99,97,108,108],"maybe":[251,255],"many":[[],[97]],"raw":[1,2]}"#
        );
    }

    #[test]
    fn byte_strings_read_back_from_either_form() {
        for bytes in [BytesAs::Base64, BytesAs::Numbers] {
            assert_eq!(
                from_json::<Blob>(&to_json_as(&blob(), bytes)).unwrap(),
                blob()
            );
        }
        // The URL-safe alphabet, no padding, and an escaped solidus.
        let text = r#"{"data":"d2lyZWNhbGw","maybe":"-_8","many":["","YQ"],"raw":[1,2]}"#;
        assert_eq!(from_json::<Blob>(text).unwrap(), blob());
        let escaped = r#"{"data":"d2lyZWNhbGw=","maybe":"+\/8=","many":[],"raw":[]}"#;
        assert_eq!(
            from_json::<Blob>(escaped).unwrap().maybe.as_deref(),
            Some(&[0xfb, 0xff][..])
        );
    }

    #[test]
    fn a_byte_string_that_is_not_base64_is_a_data_error_that_says_so() {
        let err = from_json::<bytes::Bytes>(r#""not base64!""#).unwrap_err();
        assert!(err.is_data(), "{err}");
        assert!(err.to_string().contains("base64"), "{err}");
        let err = from_json::<bytes::Bytes>("7").unwrap_err();
        assert!(
            err.to_string().contains("base64 text, or an array"),
            "{err}"
        );
        assert!(from_json::<bytes::Bytes>("[256]").is_err());
    }
}
