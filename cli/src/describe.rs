//! `list`, `describe` and `proto`: the reflection service's answers, for people and tools.

use crate::output::out;
use std::fmt::Write as _;

use wirecall::reflect::{
    proto_file, MethodSchema, ReflectionClient, ReplySchema, ServiceSchema, TypeDef, TypeKind,
    VariantShape,
};

use crate::connect::ConnectOptions;
use crate::error::CliError;

async fn reflection(options: &ConnectOptions, addr: &str) -> Result<ReflectionClient, CliError> {
    let channel = options.connect(addr, options.reflection_codec()).await?;
    Ok(ReflectionClient::new(channel))
}

/// A failed reflection call; an unknown method there means reflection is off.
fn reflection_error(error: wirecall::Error) -> CliError {
    if error.code() == Some(wirecall::ErrorCode::UnknownMethod) {
        CliError::Input(
            "the server does not serve reflection (`wirecall.Reflection`); it was started \
             with `ServerBuilder::reflection(false)`"
                .to_owned(),
        )
    } else {
        CliError::Call(error)
    }
}

/// Fetches the schema of `service`.
pub async fn fetch_schema(
    client: &ReflectionClient,
    service: &str,
) -> Result<ServiceSchema, CliError> {
    match client
        .describe(service.to_owned())
        .await
        .map_err(reflection_error)?
    {
        Ok(schema) => Ok(schema),
        Err(error) => {
            let known = client
                .list_services()
                .await
                .map_err(reflection_error)?
                .into_iter()
                .map(|summary| summary.name)
                .collect::<Vec<_>>()
                .join(", ");
            Err(CliError::Input(format!("{error}; it serves: {known}")))
        }
    }
}

/// Fetches the schema of the service of `Service.method`, through `channel`, and finds the
/// method.
pub async fn fetch_method(
    channel: &wirecall::Channel,
    target: &str,
) -> Result<(ServiceSchema, MethodSchema), CliError> {
    let (service, method) = target.rsplit_once('.').ok_or_else(|| {
        CliError::Input(format!(
            "`{target}` does not name a method; write `Service.method`"
        ))
    })?;
    let client = ReflectionClient::new(channel.clone());
    let schema = fetch_schema(&client, service).await?;
    let Some(found) = schema.method(method).cloned() else {
        let names: Vec<&str> = schema.methods.iter().map(|m| m.name.as_str()).collect();
        return Err(CliError::Input(format!(
            "{service} has no method `{method}`; its methods are: {}",
            names.join(", ")
        )));
    };
    Ok((schema, found))
}

pub async fn list(options: &ConnectOptions, addr: &str) -> Result<(), CliError> {
    let client = reflection(options, addr).await?;
    for summary in client.list_services().await.map_err(reflection_error)? {
        let mut line = summary.name.clone();
        if !summary.summary.is_empty() {
            let first_line = summary.summary.lines().next().unwrap_or_default();
            let _ = write!(line, "  -- {first_line}");
        }
        out!("{line}")?;
        for method in &summary.methods {
            out!("  {method}")?;
        }
    }
    Ok(())
}

pub async fn describe(
    options: &ConnectOptions,
    addr: &str,
    service: &str,
    json: bool,
) -> Result<(), CliError> {
    let client = reflection(options, addr).await?;
    let schema = fetch_schema(&client, service).await?;
    if json {
        let text = serde_json::to_string_pretty(&schema)
            .map_err(|error| CliError::Input(format!("cannot print the schema: {error}")))?;
        out!("{text}")?;
    } else {
        out!("{}", render_schema(&schema).trim_end_matches('\n'))?;
    }
    Ok(())
}

pub async fn proto(options: &ConnectOptions, addr: &str, package: &str) -> Result<(), CliError> {
    let client = reflection(options, addr).await?;
    let mut schemas = Vec::new();
    for summary in client.list_services().await.map_err(reflection_error)? {
        schemas.push(fetch_schema(&client, &summary.name).await?);
    }
    let file = proto_file(&schemas, package).map_err(|error| CliError::Input(error.to_string()))?;
    out!("{}", file.trim_end_matches('\n'))?;
    Ok(())
}

/// A schema as text: Rust-like signatures and type definitions, doc comments as `//`.
pub fn render_schema(schema: &ServiceSchema) -> String {
    let mut out = String::new();
    doc(&mut out, "", &schema.doc);
    let _ = writeln!(
        out,
        "service {} (codecs: {})",
        schema.name,
        schema.codecs.join(", ")
    );
    if !schema.described {
        out.push_str("  (argument and reply types not described by this service)\n");
    }
    for method in &schema.methods {
        out.push('\n');
        doc(&mut out, "  ", &method.doc);
        let args: Vec<String> = method
            .args
            .iter()
            .map(|arg| format!("{}: {}", arg.name, arg.ty))
            .collect();
        let reply = match (reply_type(&method.reply), method.server_stream) {
            // A stream always has items, even of `()`.
            (item, true) => format!(" -> stream {}", item.as_deref().unwrap_or("()")),
            (Some(reply), false) => format!(" -> {reply}"),
            (None, false) => String::new(),
        };
        let mut marks = String::new();
        // Beside the arguments, not among them: the upload is not a key of the arguments'
        // JSON object, and `call` reads it from its own input.
        if let Some(item) = &method.upload {
            let _ = write!(marks, "  [upload: stream {item}]");
        }
        if method.oneway {
            marks.push_str("  [one-way]");
        }
        if method.idempotent {
            marks.push_str("  [idempotent]");
        }
        if !method.policy.is_empty() {
            let _ = write!(marks, "  [policy: {}]", method.policy);
        }
        let _ = writeln!(out, "  {}({}){reply}{marks}", method.name, args.join(", "));
    }
    for def in &schema.types {
        out.push('\n');
        render_type(&mut out, def);
    }
    out
}

/// What a method returns (for a stream, one item), as Rust spells it; `None` for `()`.
fn reply_type(reply: &ReplySchema) -> Option<String> {
    match reply {
        ReplySchema::Unit => None,
        ReplySchema::Value(ty) => Some(ty.to_string()),
        ReplySchema::Result { ok, err } => Some(format!(
            "Result<{}, {}>",
            ok.as_ref()
                .map_or_else(|| "()".to_owned(), ToString::to_string),
            err
        )),
    }
}

fn render_type(out: &mut String, def: &TypeDef) {
    doc(out, "", &def.doc);
    match &def.kind {
        TypeKind::Struct { fields } => {
            let _ = writeln!(out, "struct {} {{", def.name);
            for field in fields {
                doc(out, "  ", &field.doc);
                let _ = writeln!(out, "  {}: {},", field.name, field.ty);
            }
        }
        TypeKind::Enum { values } => {
            let _ = writeln!(out, "enum {} {{", def.name);
            for value in values {
                doc(out, "  ", &value.doc);
                let other = if value.other {
                    "  (unknown values)"
                } else {
                    ""
                };
                let _ = writeln!(out, "  {} = {},{other}", value.name, value.number);
            }
        }
        TypeKind::OneOf { variants } => {
            let _ = writeln!(out, "enum {} {{", def.name);
            for variant in variants {
                doc(out, "  ", &variant.doc);
                let body = match &variant.shape {
                    VariantShape::Unit => String::new(),
                    VariantShape::Newtype(ty) => format!("({ty})"),
                    VariantShape::Fields {
                        named: false,
                        fields,
                    } => {
                        let types: Vec<String> =
                            fields.iter().map(|field| field.ty.to_string()).collect();
                        format!("({})", types.join(", "))
                    }
                    VariantShape::Fields {
                        named: true,
                        fields,
                    } => {
                        let fields: Vec<String> = fields
                            .iter()
                            .map(|field| format!("{}: {}", field.name, field.ty))
                            .collect();
                        format!(" {{ {} }}", fields.join(", "))
                    }
                };
                let _ = writeln!(out, "  {}{body},", variant.name);
            }
        }
    }
    out.push_str("}\n");
}

fn doc(out: &mut String, indent: &str, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "{indent}// {line}");
    }
}

#[cfg(test)]
mod tests {
    use wirecall::reflect::{FieldSchema, MethodSchema, ReplySchema, ServiceSchema, TypeRef};

    use super::render_schema;

    #[test]
    fn a_declared_policy_is_printed_after_the_signature() {
        let method = |name: &str, policy: &str| MethodSchema {
            name: name.to_owned(),
            id: 1,
            doc: String::new(),
            args: Vec::new(),
            reply: ReplySchema::Value(TypeRef::U64),
            oneway: false,
            idempotent: true,
            policy: policy.to_owned(),
            server_stream: false,
            upload: None,
        };
        let schema = ServiceSchema {
            name: "Users".to_owned(),
            doc: String::new(),
            codecs: vec!["msgpack".to_owned()],
            methods: vec![
                method("count", "timeout=300ms retries=2"),
                method("total", ""),
            ],
            types: Vec::new(),
            described: true,
        };
        let text = render_schema(&schema);
        assert!(
            text.contains("  count() -> u64  [idempotent]  [policy: timeout=300ms retries=2]\n"),
            "{text}"
        );
        assert!(text.contains("  total() -> u64  [idempotent]\n"), "{text}");
    }

    #[test]
    fn a_server_stream_is_marked_with_its_item_type() {
        let method = |name: &str, reply: ReplySchema| MethodSchema {
            name: name.to_owned(),
            id: 1,
            doc: String::new(),
            args: Vec::new(),
            reply,
            oneway: false,
            idempotent: false,
            policy: String::new(),
            server_stream: true,
            upload: None,
        };
        let schema = ServiceSchema {
            name: "Feed".to_owned(),
            doc: String::new(),
            codecs: vec!["json".to_owned()],
            methods: vec![
                method("numbers", ReplySchema::Value(TypeRef::U64)),
                method(
                    "ticks",
                    ReplySchema::Result {
                        ok: Some(TypeRef::Named("Tick".to_owned())),
                        err: TypeRef::Named("Refused".to_owned()),
                    },
                ),
                method("beats", ReplySchema::Unit),
            ],
            types: Vec::new(),
            described: true,
        };
        let text = render_schema(&schema);
        for line in [
            "  numbers() -> stream u64\n",
            "  ticks() -> stream Result<Tick, Refused>\n",
            "  beats() -> stream ()\n",
        ] {
            assert!(text.contains(line), "`{line}` missing from:\n{text}");
        }
    }

    #[test]
    fn an_upload_is_marked_with_its_item_type_beside_the_arguments() {
        let method = |name: &str, server_stream: bool, upload: TypeRef| MethodSchema {
            name: name.to_owned(),
            id: 1,
            doc: String::new(),
            args: vec![FieldSchema {
                name: "limit".to_owned(),
                ty: TypeRef::U64,
                doc: String::new(),
            }],
            reply: ReplySchema::Value(TypeRef::U64),
            oneway: false,
            idempotent: false,
            policy: String::new(),
            server_stream,
            upload: Some(upload),
        };
        let schema = ServiceSchema {
            name: "Meter".to_owned(),
            doc: String::new(),
            codecs: vec!["json".to_owned()],
            methods: vec![
                method("total", false, TypeRef::U64),
                method("doubled", true, TypeRef::Named("Reading".to_owned())),
            ],
            types: Vec::new(),
            described: true,
        };
        let text = render_schema(&schema);
        for line in [
            "  total(limit: u64) -> u64  [upload: stream u64]\n",
            "  doubled(limit: u64) -> stream u64  [upload: stream Reading]\n",
        ] {
            assert!(text.contains(line), "`{line}` missing from:\n{text}");
        }
    }
}
