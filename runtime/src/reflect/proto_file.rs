//! A schema as a `.proto` file (proto3) that describes the Protobuf payloads wirecall sends,
//! byte for byte, so `protoc --decode` can read them.
//!
//! The rules follow `codec/proto` (see its module docs for the field and value forms):
//!
//! | Rust | field of a message | one value (list element, map value, `Option` inside, variant) |
//! |------|--------------------|----------------------------------------------------------------|
//! | numbers, `bool`, `char`, `String` | `uint32`/`int64`/... (`u8`, `u16`, `char`: `uint32`; `i8`, `i16`: `int32`) | the same |
//! | `Bytes`, `Vec<u8>`, `[u8; N]` | `bytes` | `bytes` |
//! | `Duration`, `SystemTime` | `google.protobuf.Duration`, `google.protobuf.Timestamp` | the same |
//! | `Option<T>` | `optional` T's value | `Option_T { optional T value = 1; }` |
//! | `Vec<T>`, sets | `repeated` T's value | `List_T { repeated T values = 1; }` |
//! | `[T; N]` | `List_T` | `List_T` |
//! | maps | `map<K, V>` (an `Option<T>` value is T) | `Map_K_V { map<K, V> entries = 1; }` |
//! | tuples | `Tuple_A_B { A f0 = 1; B f1 = 2; }` | the same |
//! | `#[message]` struct | a message, fields 1..n | the same |
//! | unit-only enum | an `enum` (values prefixed with the enum's name) | the same |
//! | enum with data | a message with a `oneof` (unit variants are `Empty`) | the same |
//!
//! Each method's arguments are a message `{Service}_{method}_Args` (fields 1..n) and its
//! reply `{Service}_{method}_Reply` (`value = 1`, or `ok = 1` and `err = 2`, or `err = 1`
//! for `Result<(), E>`); a server stream `returns (stream {Service}_{method}_Reply)`.
//!
//! A method that takes an upload (client or bidirectional streaming) reads
//! `stream {Service}_{method}_Upload`, whose `value = 1` is one item, byte for byte what
//! wirecall's frames send for it. When the method also takes arguments, the upload message
//! has a second field `{Service}_{method}_Args args = 2`: over gRPC the first message of the
//! request stream carries the arguments there and no item, and each later message one item;
//! with no arguments every message is an item. The `_Args` message is written for every
//! method, because wirecall's own frames send the arguments in it.
//!
//! The `service` blocks are so a valid gRPC contract, one gRPC service
//! `{package}.{Service}` per wirecall service with its methods under their schema names.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::schema::{ReplySchema, ServiceSchema, TypeDef, TypeKind, TypeRef, VariantShape};

/// Why a set of schemas has no `.proto` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtoFileError {
    /// The package name is not dotted identifiers.
    #[error("`{0}` is not a protobuf package name; use dotted identifiers such as `acme.users`")]
    BadPackage(String),
    /// Two services use different Rust types with one name.
    #[error(
        "two types are named `{name}` (`{first}` and `{second}`); export their services into \
         separate files"
    )]
    NameClash {
        /// The shared name.
        name: String,
        /// One Rust path.
        first: String,
        /// The other.
        second: String,
    },
}

/// Writes the `.proto` file for `schemas` in `package`. Services that do not speak Protobuf
/// (`#[service(codecs(json, msgpack))]`) or do not describe their types are left out, with a
/// comment saying so.
pub fn proto_file(schemas: &[ServiceSchema], package: &str) -> Result<String, ProtoFileError> {
    let valid_package = !package.is_empty()
        && package.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !valid_package {
        return Err(ProtoFileError::BadPackage(package.to_owned()));
    }
    let mut types: BTreeMap<&str, &TypeDef> = BTreeMap::new();
    let mut order: Vec<&TypeDef> = Vec::new();
    let mut skipped = Vec::new();
    let mut exported = Vec::new();
    for schema in schemas {
        if !schema.described || !schema.codecs.iter().any(|codec| codec == "protobuf") {
            skipped.push(schema.name.as_str());
            continue;
        }
        exported.push(schema);
        for def in &schema.types {
            match types.get(def.name.as_str()) {
                Some(known) if known.rust_path != def.rust_path => {
                    return Err(ProtoFileError::NameClash {
                        name: def.name.clone(),
                        first: known.rust_path.clone(),
                        second: def.rust_path.clone(),
                    })
                }
                Some(_) => {}
                None => {
                    types.insert(&def.name, def);
                    order.push(def);
                }
            }
        }
    }
    let mut writer = Writer {
        user_names: types.keys().map(|name| (*name).to_owned()).collect(),
        wrappers: BTreeMap::new(),
        wrapper_order: Vec::new(),
        duration: false,
        timestamp: false,
    };
    let mut body = String::new();
    for schema in &exported {
        writer.service(&mut body, schema);
    }
    for def in &order {
        writer.type_def(&mut body, def);
    }
    let mut wrappers = String::new();
    for name in &writer.wrapper_order {
        let fields = &writer.wrappers[name];
        let _ = writeln!(wrappers, "message {name} {{");
        for line in fields {
            let _ = writeln!(wrappers, "  {line}");
        }
        wrappers.push_str("}\n\n");
    }

    let mut out = String::new();
    out.push_str("// Generated by wirecall from the services' reflection schemas.\n");
    out.push_str("// Calls travel in wirecall frames (see the wire protocol), not gRPC.\n");
    for name in &skipped {
        let _ = writeln!(
            out,
            "// Left out: service `{name}` does not use Protobuf or does not describe its types."
        );
    }
    out.push_str("syntax = \"proto3\";\n\n");
    let _ = writeln!(out, "package {package};\n");
    if writer.duration {
        out.push_str("import \"google/protobuf/duration.proto\";\n");
    }
    if writer.timestamp {
        out.push_str("import \"google/protobuf/timestamp.proto\";\n");
    }
    if writer.duration || writer.timestamp {
        out.push('\n');
    }
    out.push_str(&body);
    out.push_str(&wrappers);
    Ok(out.trim_end().to_owned() + "\n")
}

/// How an upload travels over gRPC, written above the `_Upload` message of a method that
/// also takes arguments.
const UPLOAD_WITH_ARGS: &str = "\
Over gRPC, the first message of the request stream carries the arguments in `args` and no
item; each later message carries one item in `value`. wirecall's own frames send the
arguments as the `_Args` message and each item as this message with `value` alone.";

/// The same, for a method whose only input is the upload.
const UPLOAD_WITHOUT_ARGS: &str = "Over gRPC, every message of the request stream is one item.";

struct Writer {
    user_names: Vec<String>,
    /// Wrapper message name -> its field lines.
    wrappers: BTreeMap<String, Vec<String>>,
    wrapper_order: Vec<String>,
    duration: bool,
    timestamp: bool,
}

impl Writer {
    fn service(&mut self, out: &mut String, schema: &ServiceSchema) {
        let service = identifier(&schema.name);
        comment(out, "", &schema.doc);
        let _ = writeln!(out, "service {service} {{");
        for method in &schema.methods {
            comment(out, "  ", &method.doc);
            let mut marks = Vec::new();
            if method.oneway {
                marks.push("one-way: no reply is sent");
            }
            if method.idempotent {
                marks.push("idempotent");
            }
            if !marks.is_empty() {
                let _ = writeln!(out, "  // ({})", marks.join(", "));
            }
            let stream = if method.server_stream { "stream " } else { "" };
            let request = if method.upload.is_some() {
                format!("stream {service}_{}_Upload", method.name)
            } else {
                format!("{service}_{}_Args", method.name)
            };
            let _ = writeln!(
                out,
                "  rpc {name}({request}) returns ({stream}{service}_{name}_Reply);",
                name = method.name
            );
        }
        out.push_str("}\n\n");
        for method in &schema.methods {
            let _ = writeln!(out, "message {service}_{}_Args {{", method.name);
            for (index, arg) in method.args.iter().enumerate() {
                comment(out, "  ", &arg.doc);
                let line = self.field(&arg.ty, &arg.name, index + 1);
                let _ = writeln!(out, "  {line}");
            }
            out.push_str("}\n\n");
            let _ = writeln!(out, "message {service}_{}_Reply {{", method.name);
            let lines = match &method.reply {
                ReplySchema::Unit => Vec::new(),
                ReplySchema::Value(ty) => vec![self.field(ty, "value", 1)],
                ReplySchema::Result { ok: Some(ok), err } => vec![
                    self.field(&TypeRef::Option(Box::new(ok.clone())), "ok", 1),
                    self.field(&TypeRef::Option(Box::new(err.clone())), "err", 2),
                ],
                ReplySchema::Result { ok: None, err } => {
                    vec![self.field(&TypeRef::Option(Box::new(err.clone())), "err", 1)]
                }
            };
            for line in lines {
                let _ = writeln!(out, "  {line}");
            }
            out.push_str("}\n\n");
            if let Some(item) = &method.upload {
                if method.args.is_empty() {
                    comment(out, "", UPLOAD_WITHOUT_ARGS);
                } else {
                    comment(out, "", UPLOAD_WITH_ARGS);
                }
                let _ = writeln!(out, "message {service}_{}_Upload {{", method.name);
                let line = self.field(item, "value", 1);
                let _ = writeln!(out, "  {line}");
                if !method.args.is_empty() {
                    let _ = writeln!(out, "  {service}_{}_Args args = 2;", method.name);
                }
                out.push_str("}\n\n");
            }
        }
    }

    fn type_def(&mut self, out: &mut String, def: &TypeDef) {
        comment(out, "", &def.doc);
        match &def.kind {
            TypeKind::Struct { fields } => {
                let _ = writeln!(out, "message {} {{", def.name);
                for (index, field) in fields.iter().enumerate() {
                    comment(out, "  ", &field.doc);
                    let line = self.field(&field.ty, &field.name, index + 1);
                    let _ = writeln!(out, "  {line}");
                }
            }
            TypeKind::Enum { values } => {
                let _ = writeln!(out, "enum {} {{", def.name);
                let prefix = upper_snake(&def.name);
                // proto3 wants the zero value first.
                let mut sorted: Vec<_> = values.iter().collect();
                sorted.sort_by_key(|value| value.number != 0);
                for value in sorted {
                    comment(out, "  ", &value.doc);
                    let _ = writeln!(
                        out,
                        "  {prefix}_{} = {};",
                        upper_snake(&value.name),
                        value.number
                    );
                }
            }
            TypeKind::OneOf { variants } => {
                let _ = writeln!(out, "message {} {{", def.name);
                let mut members = Vec::new();
                for variant in variants {
                    let field = snake(&variant.name);
                    let ty = match &variant.shape {
                        VariantShape::Unit => self.wrapper("Empty", Vec::new()),
                        VariantShape::Newtype(ty) => self.value(ty),
                        VariantShape::Fields { fields, .. } => {
                            let _ = writeln!(out, "  message {} {{", variant.name);
                            for (index, inner) in fields.iter().enumerate() {
                                let name = if inner.name.starts_with(|c: char| c.is_ascii_digit()) {
                                    format!("f{}", inner.name)
                                } else {
                                    inner.name.clone()
                                };
                                let line = self.field(&inner.ty, &name, index + 1);
                                let _ = writeln!(out, "    {line}");
                            }
                            out.push_str("  }\n");
                            variant.name.clone()
                        }
                    };
                    members.push((variant, format!("{ty} {field} = {};", variant.tag)));
                }
                let _ = writeln!(out, "  oneof {}_variant {{", snake(&def.name));
                for (variant, line) in members {
                    comment(out, "    ", &variant.doc);
                    let _ = writeln!(out, "    {line}");
                }
                out.push_str("  }\n");
            }
        }
        out.push_str("}\n\n");
    }

    /// The declaration of a message field of type `ty`.
    fn field(&mut self, ty: &TypeRef, name: &str, tag: usize) -> String {
        match ty {
            TypeRef::Option(inner) => format!("optional {} {name} = {tag};", self.value(inner)),
            TypeRef::List(inner) | TypeRef::Set(inner) if **inner == TypeRef::U8 => {
                format!("bytes {name} = {tag};")
            }
            TypeRef::List(inner) | TypeRef::Set(inner) => {
                format!("repeated {} {name} = {tag};", self.value(inner))
            }
            TypeRef::Map { key, value } => {
                format!(
                    "map<{}, {}> {name} = {tag};",
                    self.value(key),
                    self.map_value(value)
                )
            }
            other => format!("{} {name} = {tag};", self.value(other)),
        }
    }

    /// A map's value type: what a field of it holds, as a single value.
    fn map_value(&mut self, ty: &TypeRef) -> String {
        match ty {
            TypeRef::Option(inner) => self.value(inner),
            other => self.value(other),
        }
    }

    /// The type of one always-present value of `ty`.
    fn value(&mut self, ty: &TypeRef) -> String {
        match ty {
            TypeRef::Bool => "bool".into(),
            TypeRef::U8 | TypeRef::U16 | TypeRef::U32 | TypeRef::Char => "uint32".into(),
            TypeRef::U64 => "uint64".into(),
            TypeRef::I8 | TypeRef::I16 | TypeRef::I32 => "int32".into(),
            TypeRef::I64 => "int64".into(),
            TypeRef::F32 => "float".into(),
            TypeRef::F64 => "double".into(),
            TypeRef::String => "string".into(),
            TypeRef::Bytes => "bytes".into(),
            TypeRef::Duration => {
                self.duration = true;
                "google.protobuf.Duration".into()
            }
            TypeRef::Timestamp => {
                self.timestamp = true;
                "google.protobuf.Timestamp".into()
            }
            TypeRef::Named(name) => name.clone(),
            // Services with opaque types are not exported; keep the file valid regardless.
            TypeRef::Opaque(_) => "bytes".into(),
            TypeRef::Option(inner) => {
                let line = self.field(ty, "value", 1);
                self.wrapper(&format!("Option_{}", mangle(inner)), vec![line])
            }
            TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. }
                if **inner == TypeRef::U8 =>
            {
                "bytes".into()
            }
            TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. } => {
                let line = format!("repeated {} values = 1;", self.value(inner));
                self.wrapper(&format!("List_{}", mangle(inner)), vec![line])
            }
            TypeRef::Map { key, value } => {
                let line = self.field(ty, "entries", 1);
                self.wrapper(
                    &format!("Map_{}_{}", mangle(key), mangle(value)),
                    vec![line],
                )
            }
            TypeRef::Tuple(elements) => {
                let lines = elements
                    .iter()
                    .enumerate()
                    .map(|(index, element)| self.field(element, &format!("f{index}"), index + 1))
                    .collect();
                let names: Vec<String> = elements.iter().map(mangle).collect();
                self.wrapper(&format!("Tuple_{}", names.join("_")), lines)
            }
        }
    }

    /// Declares a wrapper message (once) and returns its name; a name a user type already
    /// has, or a different wrapper, gets `_` appended.
    fn wrapper(&mut self, name: &str, lines: Vec<String>) -> String {
        let mut name = name.to_owned();
        loop {
            if self.user_names.contains(&name) {
                name.push('_');
                continue;
            }
            match self.wrappers.get(&name) {
                Some(existing) if *existing == lines => return name,
                Some(_) => name.push('_'),
                None => {
                    self.wrappers.insert(name.clone(), lines);
                    self.wrapper_order.push(name.clone());
                    return name;
                }
            }
        }
    }
}

/// A name fragment for a wrapper: the Protobuf type of scalars, the name of named types.
fn mangle(ty: &TypeRef) -> String {
    match ty {
        TypeRef::Bool => "bool".into(),
        TypeRef::U8 | TypeRef::U16 | TypeRef::U32 | TypeRef::Char => "uint32".into(),
        TypeRef::U64 => "uint64".into(),
        TypeRef::I8 | TypeRef::I16 | TypeRef::I32 => "int32".into(),
        TypeRef::I64 => "int64".into(),
        TypeRef::F32 => "float".into(),
        TypeRef::F64 => "double".into(),
        TypeRef::String => "string".into(),
        TypeRef::Bytes => "bytes".into(),
        TypeRef::Duration => "Duration".into(),
        TypeRef::Timestamp => "Timestamp".into(),
        TypeRef::Named(name) => name.clone(),
        TypeRef::Opaque(_) => "bytes".into(),
        TypeRef::Option(inner) => format!("Option_{}", mangle(inner)),
        TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. }
            if **inner == TypeRef::U8 =>
        {
            "bytes".into()
        }
        TypeRef::List(inner) | TypeRef::Set(inner) | TypeRef::Array { element: inner, .. } => {
            format!("List_{}", mangle(inner))
        }
        TypeRef::Map { key, value } => format!("Map_{}_{}", mangle(key), mangle(value)),
        TypeRef::Tuple(elements) => {
            let names: Vec<String> = elements.iter().map(mangle).collect();
            format!("Tuple_{}", names.join("_"))
        }
    }
}

fn comment(out: &mut String, indent: &str, doc: &str) {
    for line in doc.lines() {
        if line.is_empty() {
            let _ = writeln!(out, "{indent}//");
        } else {
            let _ = writeln!(out, "{indent}// {line}");
        }
    }
}

/// A service name as a protobuf identifier: `pkg.Users` -> `pkg_Users`.
fn identifier(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `UserModel` -> `user_model`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (index, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if index > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `UserModel` -> `USER_MODEL`.
fn upper_snake(name: &str) -> String {
    snake(name).to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::proto_file;
    use crate::Service as _;

    /// A sensor hub: uploads with and without arguments, one of them answering with a stream.
    #[wirecall_macros::service(name = "Hub")]
    trait Hub {
        async fn ingest(&self, readings: crate::Streaming<f64>) -> u64;
        async fn tagged(&self, tag: String, readings: crate::Streaming<u32>) -> u64;
        async fn echo(
            &self,
            prefix: String,
            lines: crate::Streaming<String>,
        ) -> crate::Streaming<String>;
    }

    struct Nothing;

    impl Hub for Nothing {
        async fn ingest(&self, _readings: crate::Streaming<f64>) -> u64 {
            0
        }
        async fn tagged(&self, _tag: String, _readings: crate::Streaming<u32>) -> u64 {
            0
        }
        async fn echo(
            &self,
            _prefix: String,
            lines: crate::Streaming<String>,
        ) -> crate::Streaming<String> {
            lines
        }
    }

    fn hub_proto() -> String {
        let schema = HubServer::new(Nothing).schema();
        proto_file(&[schema], "acme.hub").expect("exports")
    }

    #[test]
    fn an_upload_is_a_client_stream_of_its_upload_message() {
        let text = hub_proto();
        assert!(
            text.contains("  rpc ingest(stream Hub_ingest_Upload) returns (Hub_ingest_Reply);\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "// Over gRPC, every message of the request stream is one item.\n\
                 message Hub_ingest_Upload {\n  double value = 1;\n}\n"
            ),
            "{text}"
        );
        // The arguments message stays: wirecall's own frames use it.
        assert!(text.contains("message Hub_ingest_Args {\n}\n"), "{text}");
    }

    #[test]
    fn an_upload_with_arguments_carries_them_in_its_first_message() {
        let text = hub_proto();
        assert!(
            text.contains("  rpc tagged(stream Hub_tagged_Upload) returns (Hub_tagged_Reply);\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "message Hub_tagged_Upload {\n  uint32 value = 1;\n  Hub_tagged_Args args = 2;\n}\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("// Over gRPC, the first message of the request stream carries"),
            "{text}"
        );
        assert!(
            text.contains("message Hub_tagged_Args {\n  string tag = 1;\n}\n"),
            "{text}"
        );
    }

    #[test]
    fn a_bidirectional_stream_streams_both_ways() {
        let text = hub_proto();
        assert!(
            text.contains("  rpc echo(stream Hub_echo_Upload) returns (stream Hub_echo_Reply);\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "message Hub_echo_Upload {\n  string value = 1;\n  Hub_echo_Args args = 2;\n}\n"
            ),
            "{text}"
        );
    }
}
