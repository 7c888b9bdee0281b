//! Whether a JSON value is what the gateway's OpenAPI document says a reflected type is
//! (`schema_of.rs` writes that document from the same [`TypeRef`]s): the check every
//! argument and every uploaded item passes before it is sent, so that a value the document
//! refuses is refused with a 400 naming where it is, and a value the document accepts is one
//! the server's JSON codec reads as the same value.
//!
//! The check is as strict as the document: forms the codec also reads but the document does
//! not list (a message as an array of its fields, a `Duration` as `[secs, nanos]`, bytes as an
//! array of numbers, an enum by number, a unit variant as `{"Name": null}`) are refused. It also makes
//! one value fit the codec: an integer written with a zero fraction (`436.0`, which JSON
//! Schema's `integer` admits and serde refuses) is sent as the integer.

use std::collections::HashSet;
use std::fmt;

use serde_json::{Number, Value};
use wirecall::reflect::{FieldSchema, TypeDef, TypeKind, TypeRef, VariantShape};

use crate::schema_of;

/// Where in a value a check failed, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShapeMismatch {
    /// From the outermost value inwards: `.field` and `[index]` steps.
    path: Vec<String>,
    expected: String,
    found: String,
}

impl ShapeMismatch {
    fn new(expected: String, found: &Value) -> Self {
        Self {
            path: Vec::new(),
            expected,
            found: describe(found),
        }
    }

    /// The same mismatch, one step further from the outermost value.
    pub(crate) fn inside(mut self, step: String) -> Self {
        self.path.insert(0, step);
        self
    }
}

impl fmt::Display for ShapeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "at `{}`: ", self.path.concat())?;
        }
        write!(f, "expected {}, found {}", self.expected, self.found)
    }
}

/// Checks `value` against `ty` in a field (an argument, a struct field or the upload's item
/// message's `value`), where `Option<Option<T>>` is `null` or `[value]`; fits it to the codec.
pub(crate) fn conform_field(
    value: &mut Value,
    ty: &TypeRef,
    types: &[TypeDef],
) -> Result<(), ShapeMismatch> {
    match ty {
        TypeRef::Option(inner) if matches!(**inner, TypeRef::Option(_)) => match value {
            Value::Null => Ok(()),
            Value::Array(elements) if elements.len() == 1 => {
                conform(&mut elements[0], inner, types).map_err(|error| error.inside("[0]".into()))
            }
            _ => Err(ShapeMismatch::new(format!("null or [{inner}]"), value)),
        },
        other => conform(value, other, types),
    }
}

/// Checks `value` against `ty`, whose named types are defined in `types`, and fits it to the
/// codec (integers with a zero fraction become integers).
pub(crate) fn conform(
    value: &mut Value,
    ty: &TypeRef,
    types: &[TypeDef],
) -> Result<(), ShapeMismatch> {
    let fits = match ty {
        TypeRef::Bool => value.is_boolean(),
        TypeRef::U8 => integer_within(value, 0, u8::MAX.into()),
        TypeRef::U16 => integer_within(value, 0, u16::MAX.into()),
        TypeRef::U32 => integer_within(value, 0, u32::MAX.into()),
        TypeRef::U64 => integer_within(value, 0, u64::MAX.into()),
        TypeRef::I8 => integer_within(value, i8::MIN.into(), i8::MAX.into()),
        TypeRef::I16 => integer_within(value, i16::MIN.into(), i16::MAX.into()),
        TypeRef::I32 => integer_within(value, i32::MIN.into(), i32::MAX.into()),
        TypeRef::I64 => integer_within(value, i64::MIN.into(), i64::MAX.into()),
        // The codec writes NaN and the infinities as these strings (the book's JSON codec).
        TypeRef::F64 => value.is_number() || is_non_finite(value),
        // A finite number past f32's range would become an infinity: refused.
        TypeRef::F32 => match &*value {
            Value::Number(number) => number
                .as_f64()
                .is_some_and(|number| number.abs() <= schema_of::F32_LIMIT),
            other => is_non_finite(other),
        },
        TypeRef::Char => value.as_str().is_some_and(|text| text.chars().count() == 1),
        TypeRef::String => value.is_string(),
        TypeRef::Bytes => value.as_str().is_some_and(is_base64),
        TypeRef::Duration => {
            return fixed_object(value, ty, &["secs", "nanos"], types);
        }
        TypeRef::Timestamp => {
            return fixed_object(value, ty, &["secs_since_epoch", "nanos_since_epoch"], types);
        }
        TypeRef::Option(inner) => match value {
            Value::Null => true,
            _ => return conform(value, inner, types),
        },
        TypeRef::List(element) => match value {
            Value::Array(elements) => return each_element(elements, element, types),
            _ => false,
        },
        TypeRef::Set(element) => match value {
            Value::Array(elements) => {
                each_element(elements, element, types)?;
                let mut seen = HashSet::new();
                if elements
                    .iter()
                    .all(|element| seen.insert(element.to_string()))
                {
                    return Ok(());
                }
                return Err(ShapeMismatch::new(
                    format!("{ty} (no element twice)"),
                    value,
                ));
            }
            _ => false,
        },
        TypeRef::Array { element, len } => match value {
            Value::Array(elements) if elements.len() as u64 == *len => {
                return each_element(elements, element, types)
            }
            _ => false,
        },
        TypeRef::Map { key, value: of } => match value {
            Value::Object(entries) => {
                for (name, entry) in entries.iter_mut() {
                    if !schema_of::key_fits(name, key) {
                        return Err(ShapeMismatch {
                            path: Vec::new(),
                            expected: format!("keys of type {key}"),
                            found: format!("the key `{name}`"),
                        });
                    }
                    conform(entry, of, types).map_err(|error| error.inside(format!(".{name}")))?;
                }
                return Ok(());
            }
            _ => false,
        },
        TypeRef::Tuple(elements) => match value {
            Value::Array(values) if values.len() == elements.len() => {
                for (index, (value, ty)) in values.iter_mut().zip(elements).enumerate() {
                    conform(value, ty, types)
                        .map_err(|error| error.inside(format!("[{index}]")))?;
                }
                return Ok(());
            }
            _ => false,
        },
        TypeRef::Named(name) => match types.iter().find(|def| &def.name == name) {
            Some(def) => return conform_named(value, def, types),
            // A schema that names a type it does not define: nothing to check against.
            None => true,
        },
        TypeRef::Opaque(_) => true,
    };
    if fits {
        Ok(())
    } else {
        Err(ShapeMismatch::new(ty.to_string(), value))
    }
}

/// A `Duration` or a `SystemTime`: an object of exactly two integers, the seconds (u64) and
/// the nanoseconds (below one second).
fn fixed_object(
    value: &mut Value,
    ty: &TypeRef,
    names: &[&str; 2],
    types: &[TypeDef],
) -> Result<(), ShapeMismatch> {
    let whole =
        |value: &Value| ShapeMismatch::new(format!("{ty} {{{}, {}}}", names[0], names[1]), value);
    let Value::Object(entries) = value else {
        return Err(whole(value));
    };
    if entries.len() != 2 || !names.iter().all(|name| entries.contains_key(*name)) {
        let found = Value::Object(entries.clone());
        return Err(whole(&found));
    }
    let [secs, nanos] = names;
    if let Some(secs_value) = entries.get_mut(*secs) {
        conform(secs_value, &TypeRef::U64, types)
            .map_err(|error| error.inside(format!(".{secs}")))?;
    }
    if let Some(nanos_value) = entries.get_mut(*nanos) {
        if !integer_within(nanos_value, 0, 999_999_999) {
            return Err(
                ShapeMismatch::new("nanoseconds 0..=999999999".into(), nanos_value)
                    .inside(format!(".{nanos}")),
            );
        }
    }
    Ok(())
}

fn conform_named(value: &mut Value, def: &TypeDef, types: &[TypeDef]) -> Result<(), ShapeMismatch> {
    let mismatch = |value: &Value| Err(ShapeMismatch::new(def.name.clone(), value));
    match &def.kind {
        TypeKind::Struct { fields } => conform_fields(value, fields, false, &def.name, types),
        TypeKind::Enum { values } => match value {
            // Only the names the server knows: the catch-all variant is for values from
            // peers with a newer schema, and the gateway has the server's.
            Value::String(name) if values.iter().any(|known| &known.name == name) => Ok(()),
            other => mismatch(other),
        },
        TypeKind::OneOf { variants } => {
            if let Value::String(name) = value {
                return match variants.iter().find(|variant| &variant.name == name) {
                    Some(variant) if variant.shape == VariantShape::Unit => Ok(()),
                    _ => mismatch(value),
                };
            }
            let Value::Object(entries) = value else {
                return mismatch(value);
            };
            let found = Value::Object(entries.clone());
            let mut iter = entries.iter_mut();
            let (Some((name, carried)), None) = (iter.next(), iter.next()) else {
                return mismatch(&found);
            };
            let Some(variant) = variants.iter().find(|variant| &variant.name == name) else {
                return mismatch(&found);
            };
            let inside = |error: ShapeMismatch| error.inside(format!(".{name}"));
            match &variant.shape {
                VariantShape::Unit => mismatch(&found),
                VariantShape::Newtype(ty) => conform(carried, ty, types).map_err(inside),
                VariantShape::Fields {
                    named: true,
                    fields,
                } => {
                    let what = format!("{}::{name}", def.name);
                    conform_fields(carried, fields, true, &what, types).map_err(inside)
                }
                VariantShape::Fields {
                    named: false,
                    fields,
                } => {
                    let tuple =
                        TypeRef::Tuple(fields.iter().map(|field| field.ty.clone()).collect());
                    conform(carried, &tuple, types).map_err(inside)
                }
            }
        }
    }
}

/// An object of fields: a struct's (missing ones take their defaults, unknown ones are
/// skipped, as the codec reads a message that gained or lost fields) or a struct variant's
/// (`required`: serde's enums need every field).
fn conform_fields(
    object: &mut Value,
    fields: &[FieldSchema],
    required: bool,
    what: &str,
    types: &[TypeDef],
) -> Result<(), ShapeMismatch> {
    let Value::Object(entries) = object else {
        return Err(ShapeMismatch::new(format!("the object {what}"), object));
    };
    for field in fields {
        match entries.get_mut(&field.name) {
            Some(value) => conform_field(value, &field.ty, types)
                .map_err(|error| error.inside(format!(".{}", field.name)))?,
            None if required => {
                return Err(ShapeMismatch {
                    path: Vec::new(),
                    expected: format!("{what} with its field `{}`", field.name),
                    found: "an object without it".into(),
                })
            }
            None => {}
        }
    }
    Ok(())
}

fn each_element(
    elements: &mut [Value],
    ty: &TypeRef,
    types: &[TypeDef],
) -> Result<(), ShapeMismatch> {
    for (index, element) in elements.iter_mut().enumerate() {
        conform(element, ty, types).map_err(|error| error.inside(format!("[{index}]")))?;
    }
    Ok(())
}

fn is_non_finite(value: &Value) -> bool {
    matches!(value.as_str(), Some("NaN" | "Infinity" | "-Infinity"))
}

/// Whether `value` is an integer in `min..=max`; one written with a zero fraction (`436.0`,
/// `4.36e2`) is rewritten as the integer.
fn integer_within(value: &mut Value, min: i128, max: i128) -> bool {
    let Value::Number(number) = value else {
        return false;
    };
    let whole = if let Some(number) = number.as_u64() {
        i128::from(number)
    } else if let Some(number) = number.as_i64() {
        i128::from(number)
    } else {
        match number.as_f64() {
            // Past 2^53 a float is not an exact integer any more: refused.
            Some(float) if float.fract() == 0.0 && float.abs() <= 9_007_199_254_740_992.0 => {
                float as i128
            }
            _ => return false,
        }
    };
    if !(min..=max).contains(&whole) {
        return false;
    }
    if number.is_f64() {
        let rewritten = match u64::try_from(whole) {
            Ok(unsigned) => Number::from(unsigned),
            Err(_) => match i64::try_from(whole) {
                Ok(signed) => Number::from(signed),
                Err(_) => return false,
            },
        };
        *value = Value::Number(rewritten);
    }
    true
}

/// What a value is, for a message: its kind, or the value itself when it is short.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(_) => "a string".to_owned(),
        Value::Array(elements) => format!("an array of {}", elements.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// Whether `text` is base64 as the document's `BASE64_PATTERN` says: the standard alphabet,
/// padded to a multiple of four. (The codec also reads the URL-safe alphabet and text without
/// its padding; the document lists the form the codec writes.)
fn is_base64(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|&&byte| byte == b'=').count();
    padding <= 2
        && bytes[..bytes.len() - padding]
            .iter()
            .all(|&byte| byte.is_ascii_alphanumeric() || byte == b'+' || byte == b'/')
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wirecall::reflect::{EnumValue, VariantSchema};

    use super::*;

    fn field(name: &str, ty: TypeRef) -> FieldSchema {
        FieldSchema {
            name: name.to_owned(),
            ty,
            doc: String::new(),
        }
    }

    fn def(name: &str, kind: TypeKind) -> TypeDef {
        TypeDef {
            name: name.to_owned(),
            rust_path: name.to_owned(),
            doc: String::new(),
            kind,
        }
    }

    fn variant(name: &str, shape: VariantShape) -> VariantSchema {
        VariantSchema {
            name: name.into(),
            tag: 1,
            doc: String::new(),
            shape,
            other: false,
        }
    }

    fn types() -> Vec<TypeDef> {
        let colour = |name: &str, other| EnumValue {
            name: name.into(),
            number: 0,
            doc: String::new(),
            other,
        };
        vec![
            def(
                "Tick",
                TypeKind::Struct {
                    fields: vec![
                        field("n", TypeRef::U64),
                        field("tags", TypeRef::List(Box::new(TypeRef::String))),
                    ],
                },
            ),
            def(
                "Colour",
                TypeKind::Enum {
                    values: vec![colour("Red", false), colour("Unknown", true)],
                },
            ),
            def(
                "Shape",
                TypeKind::OneOf {
                    variants: vec![
                        variant("Dot", VariantShape::Unit),
                        variant("Circle", VariantShape::Newtype(TypeRef::F64)),
                        variant(
                            "Rect",
                            VariantShape::Fields {
                                named: true,
                                fields: vec![field("w", TypeRef::U8), field("h", TypeRef::U8)],
                            },
                        ),
                    ],
                },
            ),
        ]
    }

    fn fits(value: Value, ty: TypeRef) -> Result<Value, String> {
        let mut value = value;
        conform(&mut value, &ty, &types()).map_err(|mismatch| mismatch.to_string())?;
        Ok(value)
    }

    #[test]
    fn integers_fit_their_range_and_a_zero_fraction_becomes_the_integer() {
        assert!(fits(json!(255), TypeRef::U8).is_ok());
        assert!(fits(json!(-128), TypeRef::I8).is_ok());
        assert_eq!(
            fits(json!(256), TypeRef::U8).unwrap_err(),
            "expected u8, found 256"
        );
        assert!(fits(json!(-1), TypeRef::U64).is_err());
        assert!(fits(json!(1.5), TypeRef::I32).is_err());
        assert_eq!(fits(json!(436.0), TypeRef::U16).unwrap().to_string(), "436");
        assert_eq!(fits(json!(-4.0), TypeRef::I64).unwrap().to_string(), "-4");
        assert!(fits(json!(1e30), TypeRef::U64).is_err());
        assert!(fits(json!("3"), TypeRef::U64).is_err());
    }

    #[test]
    fn floats_take_numbers_and_the_non_finite_names_and_f32_its_range() {
        assert!(fits(json!(1), TypeRef::F64).is_ok());
        assert!(fits(json!("NaN"), TypeRef::F32).is_ok());
        assert!(fits(json!("lots"), TypeRef::F64).is_err());
        assert!(fits(json!(1e39), TypeRef::F64).is_ok());
        assert_eq!(
            fits(json!(1e39), TypeRef::F32).unwrap_err(),
            "expected f32, found 1e+39"
        );
        assert!(fits(json!(-3.4e38), TypeRef::F32).is_ok());
    }

    #[test]
    fn a_message_checks_the_fields_it_has_and_names_the_path_to_a_bad_one() {
        let tick = || TypeRef::Named("Tick".into());
        assert!(fits(json!({"n": 1, "tags": ["a"]}), tick()).is_ok());
        assert!(fits(json!({}), tick()).is_ok(), "missing fields default");
        assert!(
            fits(json!({"later": 1}), tick()).is_ok(),
            "unknown fields skipped"
        );
        assert!(
            fits(json!([1, []]), tick()).is_err(),
            "the array form is not listed"
        );
        assert_eq!(
            fits(json!([{"n": "x"}]), TypeRef::List(Box::new(tick()))).unwrap_err(),
            "at `[0].n`: expected u64, found a string"
        );
    }

    #[test]
    fn enums_take_the_names_the_server_knows() {
        let colour = || TypeRef::Named("Colour".into());
        assert!(fits(json!("Red"), colour()).is_ok());
        assert!(
            fits(json!("Blue"), colour()).is_err(),
            "even with a catch-all"
        );
        assert!(fits(json!(0), colour()).is_err(), "names, not numbers");
        let shape = || TypeRef::Named("Shape".into());
        assert!(fits(json!("Dot"), shape()).is_ok());
        assert!(fits(json!({"Dot": null}), shape()).is_err());
        assert!(fits(json!({"Circle": 2.5}), shape()).is_ok());
        assert!(
            fits(json!("Circle"), shape()).is_err(),
            "a newtype needs its value"
        );
        assert!(fits(json!({"Rect": {"w": 1, "h": 2}}), shape()).is_ok());
        assert_eq!(
            fits(json!({"Rect": {"w": 1}}), shape()).unwrap_err(),
            "at `.Rect`: expected Shape::Rect with its field `h`, found an object without it"
        );
    }

    #[test]
    fn options_sets_tuples_arrays_maps_and_durations() {
        let maybe = TypeRef::Option(Box::new(TypeRef::U8));
        assert!(fits(json!(null), maybe.clone()).is_ok());
        assert!(fits(json!("3"), maybe).is_err());
        let set = TypeRef::Set(Box::new(TypeRef::I32));
        assert!(fits(json!([1, 2]), set.clone()).is_ok());
        assert!(fits(json!([1, 1]), set).is_err());
        let pair = TypeRef::Tuple(vec![TypeRef::Bool, TypeRef::String]);
        assert!(fits(json!([true, "x"]), pair.clone()).is_ok());
        assert!(fits(json!([true]), pair).is_err());
        let by_id = TypeRef::Map {
            key: Box::new(TypeRef::U8),
            value: Box::new(TypeRef::Bool),
        };
        assert!(fits(json!({"255": true}), by_id.clone()).is_ok());
        assert!(fits(json!({"256": true}), by_id.clone()).is_err());
        assert!(fits(json!({"x": true}), by_id).is_err());
        assert!(fits(json!({"secs": 1, "nanos": 5}), TypeRef::Duration).is_ok());
        assert!(fits(json!([1, 5]), TypeRef::Duration).is_err());
        assert!(fits(
            json!({"secs": 1, "nanos": 1_000_000_000}),
            TypeRef::Duration
        )
        .is_err());
        assert!(fits(json!({"secs": 1}), TypeRef::Duration).is_err());
        assert!(fits(json!("d2lyZWNhbGw="), TypeRef::Bytes).is_ok());
        assert!(fits(json!("+/8="), TypeRef::Bytes).is_ok());
        assert!(fits(json!("YR=="), TypeRef::Bytes).is_ok());
        assert!(fits(json!(""), TypeRef::Bytes).is_ok());
        // The forms the codec also reads but the document does not list.
        assert!(fits(json!("d2lyZWNhbGw"), TypeRef::Bytes).is_err());
        assert!(fits(json!("-_8="), TypeRef::Bytes).is_err());
        assert!(fits(json!("a"), TypeRef::Bytes).is_err());
        assert!(fits(json!("Y==="), TypeRef::Bytes).is_err());
        assert!(fits(json!("Y=Q="), TypeRef::Bytes).is_err());
        assert!(fits(json!("not base64!"), TypeRef::Bytes).is_err());
        assert!(fits(json!([1, 2]), TypeRef::Bytes).is_err());
    }
}
