//! A schema as JSON Schema (draft 2020-12), describing what the JSON codec reads and writes:
//! a method's arguments are an object keyed by argument name, its reply an object with
//! `value` (or `ok` and `err`), and each type has serde's JSON form.

use serde_json::{json, Map, Value};

use super::schema::{
    FieldSchema, MethodSchema, ReplySchema, ServiceSchema, TypeDef, TypeKind, TypeRef, VariantShape,
};

/// The JSON Schemas of one method's arguments and reply.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodJsonSchemas {
    /// The method's name.
    pub method: String,
    /// The request body: an object keyed by argument name. Missing arguments take their
    /// defaults (the codec tolerates them, for schema evolution), so none is `required`.
    pub args: Value,
    /// The reply body.
    pub reply: Value,
}

/// One JSON Schema document for a service: every named type and every method's arguments
/// (`{method}.args`) and reply (`{method}.reply`) under `$defs`.
pub fn json_schema(schema: &ServiceSchema) -> Value {
    let mut defs = type_json_schemas(schema, "#/$defs/");
    for method in method_json_schemas(schema, "#/$defs/") {
        defs.insert(format!("{}.args", method.method), method.args);
        defs.insert(format!("{}.reply", method.method), method.reply);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": schema.name,
        "description": schema.doc,
        "$defs": defs,
    })
}

/// The schema of each named type of `schema`, keyed by name; references to named types
/// are `{ref_prefix}{name}` (`#/$defs/`, or `#/components/schemas/` in OpenAPI).
pub fn type_json_schemas(schema: &ServiceSchema, ref_prefix: &str) -> Map<String, Value> {
    schema
        .types
        .iter()
        .map(|def| (def.name.clone(), type_def(def, ref_prefix)))
        .collect()
}

/// The argument and reply schemas of every method of `schema`, in declaration order.
pub fn method_json_schemas(schema: &ServiceSchema, ref_prefix: &str) -> Vec<MethodJsonSchemas> {
    schema
        .methods
        .iter()
        .map(|method| MethodJsonSchemas {
            method: method.name.clone(),
            args: object(&method.args, ref_prefix, &method.doc),
            reply: reply(method, ref_prefix),
        })
        .collect()
}

/// The schema of one value of type `ty`; named types are `{ref_prefix}{name}` references.
pub fn type_json_schema(ty: &TypeRef, ref_prefix: &str) -> Value {
    type_ref(ty, ref_prefix)
}

fn reply(method: &MethodSchema, prefix: &str) -> Value {
    let optional = |ty: &TypeRef| nullable(type_ref(ty, prefix));
    let properties = match &method.reply {
        ReplySchema::Unit => json!({}),
        ReplySchema::Value(ty) => json!({ "value": type_ref(ty, prefix) }),
        ReplySchema::Result { ok: Some(ok), err } => {
            json!({ "ok": optional(ok), "err": optional(err) })
        }
        ReplySchema::Result { ok: None, err } => json!({ "err": optional(err) }),
    };
    json!({ "type": "object", "properties": properties })
}

fn object(fields: &[FieldSchema], prefix: &str, doc: &str) -> Value {
    let properties: Map<String, Value> = fields
        .iter()
        .map(|field| (field.name.clone(), field_schema(field, prefix)))
        .collect();
    let mut value = json!({ "type": "object", "properties": properties });
    describe(&mut value, doc);
    value
}

/// A field: its type, except `Option<Option<T>>`, which serde writes as `null` or `[value]`
/// so that `Some(None)` survives.
fn field_schema(field: &FieldSchema, prefix: &str) -> Value {
    let mut value = match &field.ty {
        TypeRef::Option(inner) if matches!(**inner, TypeRef::Option(_)) => nullable(json!({
            "type": "array",
            "prefixItems": [type_ref(inner, prefix)],
            "minItems": 1,
            "maxItems": 1,
        })),
        other => type_ref(other, prefix),
    };
    describe(&mut value, &field.doc);
    value
}

fn describe(value: &mut Value, doc: &str) {
    if let (false, Some(object)) = (doc.is_empty(), value.as_object_mut()) {
        object.insert("description".into(), Value::String(doc.to_owned()));
    }
}

fn nullable(value: Value) -> Value {
    json!({ "anyOf": [value, { "type": "null" }] })
}

fn integer(min: i64, max: u64) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max })
}

fn type_ref(ty: &TypeRef, prefix: &str) -> Value {
    match ty {
        TypeRef::Bool => json!({ "type": "boolean" }),
        TypeRef::U8 => integer(0, u8::MAX.into()),
        TypeRef::U16 => integer(0, u16::MAX.into()),
        TypeRef::U32 => integer(0, u32::MAX.into()),
        TypeRef::U64 => integer(0, u64::MAX),
        TypeRef::I8 => integer(i8::MIN.into(), i8::MAX as u64),
        TypeRef::I16 => integer(i16::MIN.into(), i16::MAX as u64),
        TypeRef::I32 => integer(i32::MIN.into(), i32::MAX as u64),
        TypeRef::I64 => integer(i64::MIN, i64::MAX as u64),
        TypeRef::F32 | TypeRef::F64 => json!({ "type": "number" }),
        TypeRef::Char => json!({ "type": "string", "minLength": 1, "maxLength": 1 }),
        TypeRef::String => json!({ "type": "string" }),
        TypeRef::Bytes => json!({ "type": "string", "contentEncoding": "base64" }),
        TypeRef::Duration => json!({
            "type": "object",
            "properties": { "secs": integer(0, u64::MAX), "nanos": integer(0, 999_999_999) },
            "required": ["secs", "nanos"],
        }),
        TypeRef::Timestamp => json!({
            "type": "object",
            "properties": {
                "secs_since_epoch": integer(0, u64::MAX),
                "nanos_since_epoch": integer(0, 999_999_999),
            },
            "required": ["secs_since_epoch", "nanos_since_epoch"],
        }),
        TypeRef::Option(inner) => nullable(type_ref(inner, prefix)),
        TypeRef::List(inner) => json!({ "type": "array", "items": type_ref(inner, prefix) }),
        TypeRef::Set(inner) => json!({
            "type": "array",
            "items": type_ref(inner, prefix),
            "uniqueItems": true,
        }),
        TypeRef::Array { element, len } => json!({
            "type": "array",
            "items": type_ref(element, prefix),
            "minItems": len,
            "maxItems": len,
        }),
        // JSON object keys are strings; serde_json writes number and bool keys as text.
        TypeRef::Map { value, .. } => json!({
            "type": "object",
            "additionalProperties": type_ref(value, prefix),
        }),
        TypeRef::Tuple(elements) => json!({
            "type": "array",
            "prefixItems": elements.iter().map(|e| type_ref(e, prefix)).collect::<Vec<_>>(),
            "minItems": elements.len(),
            "maxItems": elements.len(),
        }),
        TypeRef::Named(name) => json!({ "$ref": format!("{prefix}{name}") }),
        TypeRef::Opaque(rust) => json!({ "description": format!("a Rust `{rust}` (serde)") }),
    }
}

fn type_def(def: &TypeDef, prefix: &str) -> Value {
    let mut value = match &def.kind {
        TypeKind::Struct { fields } => object(fields, prefix, ""),
        TypeKind::Enum { values } => json!({
            "type": "string",
            "enum": values.iter().map(|value| value.name.clone()).collect::<Vec<_>>(),
        }),
        TypeKind::OneOf { variants } => {
            let options: Vec<Value> = variants
                .iter()
                .map(|variant| {
                    let inner = match &variant.shape {
                        VariantShape::Unit => return json!({ "const": variant.name }),
                        VariantShape::Newtype(ty) => type_ref(ty, prefix),
                        VariantShape::Fields {
                            named: true,
                            fields,
                        } => object(fields, prefix, ""),
                        VariantShape::Fields {
                            named: false,
                            fields,
                        } => json!({
                            "type": "array",
                            "prefixItems": fields
                                .iter()
                                .map(|field| type_ref(&field.ty, prefix))
                                .collect::<Vec<_>>(),
                        }),
                    };
                    json!({
                        "type": "object",
                        "properties": { variant.name.clone(): inner },
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
