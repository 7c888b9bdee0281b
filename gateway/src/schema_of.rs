//! The JSON Schema (2020-12, as OpenAPI 3.1 has it) of each reflected type, as the gateway
//! takes and answers it: the same rules `json_shape.rs` checks values against, so the
//! document and the gateway cannot disagree. Named types are references, through `name_of`
//! (component names are chosen per service by `openapi.rs`).

use serde_json::{json, Map, Value};
use wirecall::reflect::{FieldSchema, TypeDef, TypeKind, TypeRef, VariantShape};

/// How a named type of the service being described is referred to.
pub(crate) type RefOf<'a> = &'a dyn Fn(&str) -> String;

/// The largest `f32` as the codec writes it (`3.4028235e38`, its shortest decimal, a little
/// above `f32::MAX` as an `f64`): the bound of an `f32` in the document and in the check. A
/// number within it reads as a finite `f32`; one past it would read as an infinity.
pub(crate) const F32_LIMIT: f64 = 3.4028235e38;

/// A byte string as the codec writes it (wire chapter, "JSON"): base64, standard alphabet,
/// padded. `json_shape.rs` checks the same.
pub(crate) const BASE64_PATTERN: &str =
    "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/// The schema of one value of `ty`.
pub(crate) fn type_schema(ty: &TypeRef, ref_of: RefOf<'_>) -> Value {
    match ty {
        TypeRef::Bool => json!({ "type": "boolean" }),
        TypeRef::U8 => integer(0, u8::MAX.into()),
        TypeRef::U16 => integer(0, u16::MAX.into()),
        TypeRef::U32 => integer(0, u32::MAX.into()),
        TypeRef::U64 => integer(0, u64::MAX.into()),
        TypeRef::I8 => integer(i8::MIN.into(), i8::MAX.into()),
        TypeRef::I16 => integer(i16::MIN.into(), i16::MAX.into()),
        TypeRef::I32 => integer(i32::MIN.into(), i32::MAX.into()),
        TypeRef::I64 => integer(i64::MIN.into(), i64::MAX.into()),
        TypeRef::F64 => float(json!({ "type": "number" })),
        TypeRef::F32 => {
            float(json!({ "type": "number", "minimum": -F32_LIMIT, "maximum": F32_LIMIT }))
        }
        TypeRef::Char => json!({ "type": "string", "minLength": 1, "maxLength": 1 }),
        TypeRef::String => json!({ "type": "string" }),
        TypeRef::Bytes => json!({
            "type": "string",
            "contentEncoding": "base64",
            "pattern": BASE64_PATTERN,
        }),
        TypeRef::Duration => seconds_and_nanos("secs", "nanos"),
        TypeRef::Timestamp => seconds_and_nanos("secs_since_epoch", "nanos_since_epoch"),
        TypeRef::Option(inner) => nullable(type_schema(inner, ref_of)),
        TypeRef::List(inner) => json!({ "type": "array", "items": type_schema(inner, ref_of) }),
        TypeRef::Set(inner) => json!({
            "type": "array",
            "items": type_schema(inner, ref_of),
            "uniqueItems": true,
        }),
        TypeRef::Array { element, len } => json!({
            "type": "array",
            "items": type_schema(element, ref_of),
            "minItems": len,
            "maxItems": len,
        }),
        // JSON object keys are strings; an integer key is its decimal text.
        TypeRef::Map { key, value } => {
            let mut map = json!({
                "type": "object",
                "additionalProperties": type_schema(value, ref_of),
            });
            if let Some(pattern) = key_pattern(key) {
                map["propertyNames"] = json!({ "pattern": pattern });
            }
            map
        }
        TypeRef::Tuple(elements) => tuple(elements.iter(), ref_of),
        TypeRef::Named(name) => json!({ "$ref": ref_of(name) }),
        TypeRef::Opaque(rust) => json!({ "description": format!("a Rust `{rust}` (serde)") }),
    }
}

/// The schema of a field (an argument, a struct field, a reply's `ok`): its type's, except
/// `Option<Option<T>>`, which the codec writes as `null` or `[value]` so that `Some(None)`
/// survives.
pub(crate) fn field_type_schema(ty: &TypeRef, ref_of: RefOf<'_>) -> Value {
    match ty {
        TypeRef::Option(inner) if matches!(**inner, TypeRef::Option(_)) => nullable(json!({
            "type": "array",
            "prefixItems": [type_schema(inner, ref_of)],
            "minItems": 1,
            "maxItems": 1,
        })),
        other => type_schema(other, ref_of),
    }
}

/// An object of fields. `closed`: unknown names are refused (a method's arguments);
/// `required`: every field must be there (a struct variant's). A struct's fields are
/// neither: missing ones take their defaults and unknown ones are skipped.
pub(crate) fn fields_schema(
    fields: &[FieldSchema],
    closed: bool,
    required: bool,
    ref_of: RefOf<'_>,
) -> Value {
    let properties: Map<String, Value> = fields
        .iter()
        .map(|field| {
            let mut schema = field_type_schema(&field.ty, ref_of);
            describe(&mut schema, &field.doc);
            (field.name.clone(), schema)
        })
        .collect();
    let mut object = json!({ "type": "object", "properties": properties });
    if closed {
        object["additionalProperties"] = Value::Bool(false);
    }
    if required {
        object["required"] = fields.iter().map(|field| field.name.clone()).collect();
    }
    object
}

/// The schema of a named type.
pub(crate) fn definition(def: &TypeDef, ref_of: RefOf<'_>) -> Value {
    let mut value = match &def.kind {
        TypeKind::Struct { fields } => fields_schema(fields, false, false, ref_of),
        // The names the server knows, a catch-all's included; an unknown name is refused
        // (the gateway has the server's schema, so it is a mistake, not a newer peer).
        TypeKind::Enum { values } => json!({
            "type": "string",
            "enum": values.iter().map(|value| value.name.clone()).collect::<Vec<_>>(),
        }),
        TypeKind::OneOf { variants } => {
            let options: Vec<Value> = variants
                .iter()
                .map(|variant| {
                    let carried = match &variant.shape {
                        VariantShape::Unit => return json!({ "const": variant.name }),
                        VariantShape::Newtype(ty) => type_schema(ty, ref_of),
                        VariantShape::Fields {
                            named: true,
                            fields,
                        } => fields_schema(fields, false, true, ref_of),
                        VariantShape::Fields {
                            named: false,
                            fields,
                        } => tuple(fields.iter().map(|field| &field.ty), ref_of),
                    };
                    json!({
                        "type": "object",
                        "properties": { variant.name.clone(): carried },
                        "required": [variant.name],
                        "additionalProperties": false,
                    })
                })
                .collect();
            json!({ "oneOf": options })
        }
    };
    describe(&mut value, &def.doc);
    value
}

/// Whether `name` is a JSON object key the codec reads as a key of type `key`.
pub(crate) fn key_fits(name: &str, key: &TypeRef) -> bool {
    let Some((min, max)) = integer_range(key) else {
        return true;
    };
    let canonical = name == "0"
        || name
            .strip_prefix('-')
            .unwrap_or(name)
            .bytes()
            .enumerate()
            .all(|(at, digit)| digit.is_ascii_digit() && (at > 0 || digit != b'0'));
    canonical
        && !name.is_empty()
        && name != "-"
        && name
            .parse::<i128>()
            .is_ok_and(|number| (min..=max).contains(&number))
}

/// The `propertyNames` pattern of a map's keys: for an integer key, its decimal form
/// without leading zeros, within the type's range.
fn key_pattern(key: &TypeRef) -> Option<String> {
    let (min, max) = integer_range(key)?;
    let mut alternatives = vec!["0".to_owned()];
    alternatives.extend(from_one_to(&max.to_string()));
    if min < 0 {
        let below: Vec<String> = from_one_to(&min.unsigned_abs().to_string());
        alternatives.push(format!("-({})", below.join("|")));
    }
    Some(format!("^({})$", alternatives.join("|")))
}

/// Regular expressions that together match the decimals 1..=`max` without leading zeros.
fn from_one_to(max: &str) -> Vec<String> {
    let digits: Vec<u32> = max.chars().filter_map(|digit| digit.to_digit(10)).collect();
    let len = digits.len();
    let mut alternatives = Vec::new();
    // Shorter numbers: any.
    if len > 1 {
        alternatives.push(format!("[1-9][0-9]{{0,{}}}", len - 2));
    }
    // As many digits: a prefix of `max`, one digit below its next, then any.
    for at in 0..len {
        let low = u32::from(at == 0);
        let Some(high) = digits[at].checked_sub(1) else {
            continue;
        };
        if high < low {
            continue;
        }
        let prefix: String = max[..at].to_owned();
        let rest = len - at - 1;
        alternatives.push(format!("{prefix}[{low}-{high}][0-9]{{{rest}}}"));
    }
    alternatives.push(max.to_owned());
    alternatives
}

fn integer_range(ty: &TypeRef) -> Option<(i128, i128)> {
    Some(match ty {
        TypeRef::U8 => (0, u8::MAX.into()),
        TypeRef::U16 => (0, u16::MAX.into()),
        TypeRef::U32 => (0, u32::MAX.into()),
        TypeRef::U64 => (0, u64::MAX.into()),
        TypeRef::I8 => (i8::MIN.into(), i8::MAX.into()),
        TypeRef::I16 => (i16::MIN.into(), i16::MAX.into()),
        TypeRef::I32 => (i32::MIN.into(), i32::MAX.into()),
        TypeRef::I64 => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

fn tuple<'t>(elements: impl ExactSizeIterator<Item = &'t TypeRef>, ref_of: RefOf<'_>) -> Value {
    let len = elements.len();
    json!({
        "type": "array",
        "prefixItems": elements.map(|element| type_schema(element, ref_of)).collect::<Vec<_>>(),
        "items": false,
        "minItems": len,
        "maxItems": len,
    })
}

/// A float: a JSON number, or the codec's names for NaN and the infinities.
fn float(number: Value) -> Value {
    json!({ "oneOf": [number, { "type": "string", "enum": ["NaN", "Infinity", "-Infinity"] }] })
}

fn seconds_and_nanos(secs: &str, nanos: &str) -> Value {
    json!({
        "type": "object",
        "properties": { secs: integer(0, u64::MAX.into()), nanos: integer(0, 999_999_999) },
        "required": [secs, nanos],
        "additionalProperties": false,
    })
}

fn integer(min: i128, max: i128) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max })
}

pub(crate) fn nullable(value: Value) -> Value {
    json!({ "anyOf": [value, { "type": "null" }] })
}

pub(crate) fn describe(value: &mut Value, doc: &str) {
    if let (false, Some(object)) = (doc.is_empty(), value.as_object_mut()) {
        object.insert("description".into(), Value::String(doc.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patterns were checked against every number from -70,000 to 70,000 for the 8- and
    /// 16-bit types (a regular expression engine is not a dependency here): these pin them.
    #[test]
    fn integer_key_patterns_list_the_range() {
        assert_eq!(
            key_pattern(&TypeRef::U8).unwrap(),
            "^(0|[1-9][0-9]{0,1}|[1-1][0-9]{2}|2[0-4][0-9]{1}|25[0-4][0-9]{0}|255)$"
        );
        assert_eq!(
            key_pattern(&TypeRef::I8).unwrap(),
            "^(0|[1-9][0-9]{0,1}|1[0-1][0-9]{1}|12[0-6][0-9]{0}|127|-([1-9][0-9]{0,1}|1[0-1][0-9]{1}|12[0-7][0-9]{0}|128))$"
        );
        assert!(key_pattern(&TypeRef::String).is_none());
    }

    #[test]
    fn keys_fit_in_decimal_within_the_range() {
        assert!(key_fits("255", &TypeRef::U8));
        assert!(key_fits("-128", &TypeRef::I8));
        for refused in ["256", "-1", "007", "+7", "", "-", "-0x", "1.0"] {
            assert!(!key_fits(refused, &TypeRef::U8), "{refused}");
        }
        assert!(key_fits("anything", &TypeRef::String));
    }
}
