//! Whether a JSON value has the form the JSON codec reads for a reflected type: the check
//! each line of an upload passes before it is sent, so that an item of the wrong type is
//! refused with its line number (the server's own refusal could not say which item it was).
//!
//! The check refuses only what the codec certainly refuses, and lets through what it may
//! read: forms the codec also accepts are not all spelt out here (a message as an array of
//! its fields, a `Duration` as `[secs, nanos]`, unknown fields, map keys), and the server's
//! decoding stays the judge of those (`BadRequest`).

use std::fmt;

use serde_json::Value;
use wirecall::reflect::{FieldSchema, TypeDef, TypeKind, TypeRef, VariantShape};

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
    fn inside(mut self, step: String) -> Self {
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

/// Checks `value` against `ty`, whose named types are defined in `types`.
pub(crate) fn check(value: &Value, ty: &TypeRef, types: &[TypeDef]) -> Result<(), ShapeMismatch> {
    let fits = match ty {
        TypeRef::Bool => value.is_boolean(),
        TypeRef::U8 => unsigned_up_to(value, u8::MAX.into()),
        TypeRef::U16 => unsigned_up_to(value, u16::MAX.into()),
        TypeRef::U32 => unsigned_up_to(value, u32::MAX.into()),
        TypeRef::U64 => unsigned_up_to(value, u64::MAX),
        TypeRef::I8 => signed_within(value, i8::MIN.into(), i8::MAX.into()),
        TypeRef::I16 => signed_within(value, i16::MIN.into(), i16::MAX.into()),
        TypeRef::I32 => signed_within(value, i32::MIN.into(), i32::MAX.into()),
        TypeRef::I64 => signed_within(value, i64::MIN, i64::MAX),
        // The codec writes NaN and the infinities as these strings (proto3's JSON mapping).
        TypeRef::F32 | TypeRef::F64 => {
            value.is_number() || matches!(value.as_str(), Some("NaN" | "Infinity" | "-Infinity"))
        }
        TypeRef::Char => value.as_str().is_some_and(|text| text.chars().count() == 1),
        TypeRef::String => value.is_string(),
        TypeRef::Bytes => match value {
            Value::Array(bytes) => return each_element(bytes, &TypeRef::U8, types),
            // `bytes::Bytes` also reads a string as its UTF-8 bytes.
            other => other.is_string(),
        },
        TypeRef::Duration | TypeRef::Timestamp => value.is_object() || value.is_array(),
        TypeRef::Option(inner) => match (value, &**inner) {
            (Value::Null, _) => true,
            // `Some(None)` travels as `[null]` in a field, as the value elsewhere: left to
            // the codec.
            (_, TypeRef::Option(_)) => true,
            (value, inner) => return check(value, inner, types),
        },
        TypeRef::List(element) | TypeRef::Set(element) => match value {
            Value::Array(elements) => return each_element(elements, element, types),
            _ => false,
        },
        TypeRef::Array { element, len } => match value {
            Value::Array(elements) if elements.len() as u64 == *len => {
                return each_element(elements, element, types)
            }
            _ => false,
        },
        TypeRef::Map { value: of, .. } => match value {
            Value::Object(entries) => {
                for (key, entry) in entries {
                    check(entry, of, types).map_err(|error| error.inside(format!(".{key}")))?;
                }
                return Ok(());
            }
            _ => false,
        },
        TypeRef::Tuple(elements) => match value {
            Value::Array(values) if values.len() == elements.len() => {
                for (index, (value, ty)) in values.iter().zip(elements).enumerate() {
                    check(value, ty, types).map_err(|error| error.inside(format!("[{index}]")))?;
                }
                return Ok(());
            }
            _ => false,
        },
        TypeRef::Named(name) => match types.iter().find(|def| &def.name == name) {
            Some(def) => return check_named(value, def, types),
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

fn check_named(value: &Value, def: &TypeDef, types: &[TypeDef]) -> Result<(), ShapeMismatch> {
    let mismatch = || Err(ShapeMismatch::new(def.name.clone(), value));
    match &def.kind {
        TypeKind::Struct { fields } => match value {
            Value::Object(_) => check_fields(value, fields, types),
            Value::Array(_) => Ok(()),
            _ => mismatch(),
        },
        TypeKind::Enum { values } => {
            let known = match value {
                Value::String(name) => values.iter().any(|known| &known.name == name),
                Value::Number(number) => number.as_i64().is_some_and(|number| {
                    values.iter().any(|known| i64::from(known.number) == number)
                }),
                _ => return mismatch(),
            };
            // The catch-all variant takes any name or number.
            if known || values.iter().any(|known| known.other) {
                Ok(())
            } else {
                mismatch()
            }
        }
        TypeKind::OneOf { variants } => {
            let catch_all = variants.iter().any(|variant| variant.other);
            let (name, carried) = match value {
                Value::String(name) => (name, None),
                Value::Object(entries) if entries.len() == 1 => match entries.iter().next() {
                    Some((name, carried)) => (name, Some(carried)),
                    None => return mismatch(),
                },
                _ => return mismatch(),
            };
            let Some(variant) = variants.iter().find(|variant| &variant.name == name) else {
                return if catch_all { Ok(()) } else { mismatch() };
            };
            let Some(carried) = carried else {
                return match variant.shape {
                    VariantShape::Unit => Ok(()),
                    _ => mismatch(),
                };
            };
            let inside = |error: ShapeMismatch| error.inside(format!(".{name}"));
            match &variant.shape {
                VariantShape::Unit if carried.is_null() => Ok(()),
                VariantShape::Unit => mismatch(),
                VariantShape::Newtype(ty) => check(carried, ty, types).map_err(inside),
                VariantShape::Fields {
                    named: true,
                    fields,
                } => match carried {
                    Value::Object(_) => check_fields(carried, fields, types).map_err(inside),
                    Value::Array(_) => Ok(()),
                    _ => Err(inside(ShapeMismatch::new(
                        format!("the fields of {}::{name}", def.name),
                        carried,
                    ))),
                },
                VariantShape::Fields {
                    named: false,
                    fields,
                } => {
                    let tuple =
                        TypeRef::Tuple(fields.iter().map(|field| field.ty.clone()).collect());
                    check(carried, &tuple, types).map_err(inside)
                }
            }
        }
    }
}

/// The fields of an object that the message has: missing ones take their defaults and
/// unknown ones are skipped, as the codec reads a message that gained or lost fields.
fn check_fields(
    object: &Value,
    fields: &[FieldSchema],
    types: &[TypeDef],
) -> Result<(), ShapeMismatch> {
    for field in fields {
        if let Some(value) = object.get(&field.name) {
            check(value, &field.ty, types)
                .map_err(|error| error.inside(format!(".{}", field.name)))?;
        }
    }
    Ok(())
}

fn each_element(elements: &[Value], ty: &TypeRef, types: &[TypeDef]) -> Result<(), ShapeMismatch> {
    for (index, element) in elements.iter().enumerate() {
        check(element, ty, types).map_err(|error| error.inside(format!("[{index}]")))?;
    }
    Ok(())
}

fn unsigned_up_to(value: &Value, max: u64) -> bool {
    value.as_u64().is_some_and(|number| number <= max)
}

fn signed_within(value: &Value, min: i64, max: i64) -> bool {
    value
        .as_i64()
        .is_some_and(|number| (min..=max).contains(&number))
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

    fn types() -> Vec<TypeDef> {
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
                    values: vec![EnumValue {
                        name: "Red".into(),
                        number: 0,
                        doc: String::new(),
                        other: false,
                    }],
                },
            ),
            def(
                "Shape",
                TypeKind::OneOf {
                    variants: vec![
                        VariantSchema {
                            name: "Dot".into(),
                            tag: 1,
                            doc: String::new(),
                            shape: VariantShape::Unit,
                            other: false,
                        },
                        VariantSchema {
                            name: "Circle".into(),
                            tag: 2,
                            doc: String::new(),
                            shape: VariantShape::Newtype(TypeRef::F64),
                            other: false,
                        },
                    ],
                },
            ),
        ]
    }

    fn fits(value: Value, ty: TypeRef) -> Result<(), String> {
        check(&value, &ty, &types()).map_err(|mismatch| mismatch.to_string())
    }

    #[test]
    fn integers_fit_their_range_and_nothing_else() {
        assert!(fits(json!(255), TypeRef::U8).is_ok());
        assert!(fits(json!(-128), TypeRef::I8).is_ok());
        assert_eq!(
            fits(json!(256), TypeRef::U8).unwrap_err(),
            "expected u8, found 256"
        );
        assert!(fits(json!(-1), TypeRef::U64).is_err());
        assert!(fits(json!(1.5), TypeRef::I32).is_err());
        assert_eq!(
            fits(json!("3"), TypeRef::U64).unwrap_err(),
            "expected u64, found a string"
        );
    }

    #[test]
    fn floats_take_numbers_and_the_non_finite_names() {
        assert!(fits(json!(1), TypeRef::F64).is_ok());
        assert!(fits(json!("NaN"), TypeRef::F32).is_ok());
        assert!(fits(json!("lots"), TypeRef::F64).is_err());
    }

    #[test]
    fn a_message_checks_the_fields_it_has_and_names_the_path_to_a_bad_one() {
        let tick = || TypeRef::Named("Tick".into());
        assert!(fits(json!({"n": 1, "tags": ["a"]}), tick()).is_ok());
        assert!(fits(json!({}), tick()).is_ok(), "missing fields default");
        assert!(
            fits(json!({"added_later": 1}), tick()).is_ok(),
            "unknown fields skipped"
        );
        assert_eq!(
            fits(json!({"n": 1, "tags": ["a", 2]}), tick()).unwrap_err(),
            "at `.tags[1]`: expected String, found 2"
        );
        assert_eq!(
            fits(json!(7), tick()).unwrap_err(),
            "expected Tick, found 7"
        );
        assert_eq!(
            fits(json!([{"n": "x"}]), TypeRef::List(Box::new(tick()))).unwrap_err(),
            "at `[0].n`: expected u64, found a string"
        );
    }

    #[test]
    fn enums_take_their_variants_only() {
        assert!(fits(json!("Red"), TypeRef::Named("Colour".into())).is_ok());
        assert!(fits(json!(0), TypeRef::Named("Colour".into())).is_ok());
        assert!(fits(json!("Blue"), TypeRef::Named("Colour".into())).is_err());
        let shape = || TypeRef::Named("Shape".into());
        assert!(fits(json!("Dot"), shape()).is_ok());
        assert!(fits(json!({"Circle": 2.5}), shape()).is_ok());
        assert_eq!(
            fits(json!({"Circle": "big"}), shape()).unwrap_err(),
            "at `.Circle`: expected f64, found a string"
        );
        assert!(
            fits(json!("Circle"), shape()).is_err(),
            "a newtype needs its value"
        );
        assert!(fits(json!({"Square": 1}), shape()).is_err());
    }

    #[test]
    fn options_tuples_arrays_and_maps() {
        let maybe = TypeRef::Option(Box::new(TypeRef::U8));
        assert!(fits(json!(null), maybe.clone()).is_ok());
        assert!(fits(json!(3), maybe.clone()).is_ok());
        assert!(fits(json!("3"), maybe).is_err());
        let pair = TypeRef::Tuple(vec![TypeRef::Bool, TypeRef::String]);
        assert!(fits(json!([true, "x"]), pair.clone()).is_ok());
        assert!(fits(json!([true]), pair).is_err());
        let three = TypeRef::Array {
            element: Box::new(TypeRef::U8),
            len: 3,
        };
        assert!(fits(json!([1, 2, 3]), three.clone()).is_ok());
        assert!(fits(json!([1, 2]), three).is_err());
        let map = TypeRef::Map {
            key: Box::new(TypeRef::String),
            value: Box::new(TypeRef::I64),
        };
        assert!(fits(json!({"a": 1}), map.clone()).is_ok());
        assert_eq!(
            fits(json!({"a": true}), map).unwrap_err(),
            "at `.a`: expected i64, found true"
        );
    }
}
