//! The OpenAPI 3.1 document, from the reflected schemas: one `POST` operation per method,
//! its arguments as the request body (a method that takes an upload: `application/x-ndjson`,
//! the arguments and then one item a line, or `application/json`, one array of the arguments
//! and then the items) and its reply as the 200 response (a server stream's:
//! `application/x-ndjson`, each line an item, or `text/event-stream`, each event's data an
//! item); the `#[wirecall::message]` types as components (OpenAPI 3.1 schemas are JSON Schema
//! 2020-12), written by `schema_of.rs` by the rules the gateway checks values with, and named
//! `{Service}.{Type}` when two services define a type of that name differently.

use std::collections::HashSet;

use crate::content_type::JSON;
use crate::event_stream::EVENT_STREAM;
use crate::ndjson::NDJSON;
use crate::schema_of::{self, RefOf};
use serde_json::{json, Map, Value};
use wirecall::reflect::{MethodSchema, ReplySchema, ServiceSchema};

const COMPONENTS: &str = "#/components/schemas/";

/// Marks the operation of a server-streaming method, for tools that read the document
/// (OpenAPI 3.1 has no field for a response that is a sequence).
const SERVER_STREAM_EXTENSION: &str = "x-wirecall-server-stream";

/// Marks the operation of a method that takes an upload, whose request body is a sequence.
const UPLOAD_EXTENSION: &str = "x-wirecall-upload";

pub fn document(schemas: &[ServiceSchema]) -> Value {
    let mut paths = Map::new();
    let mut components = Map::new();
    components.insert(
        "WirecallError".into(),
        json!({
            "type": "object",
            "description": "A failed call: the wirecall error's name, its wire code, and a message",
            "properties": {
                "error": { "type": "string" },
                "code": { "type": "integer" },
                "message": { "type": "string" },
                "value": { "description": "the method's application error (422)" },
            },
            "required": ["error"],
        }),
    );
    let qualified = names_to_qualify(schemas);
    for schema in schemas {
        let component = |name: &str| {
            if qualified.contains(name) {
                format!("{}.{name}", schema.name)
            } else {
                name.to_owned()
            }
        };
        let reference = |name: &str| format!("{COMPONENTS}{}", component(name));
        let ref_of: RefOf<'_> = &reference;
        for def in &schema.types {
            components.insert(component(&def.name), schema_of::definition(def, ref_of));
        }
        for method in &schema.methods {
            let error = json!({
                "description": "a wirecall error (see the status table)",
                "content": { "application/json": { "schema": { "$ref": format!("{COMPONENTS}WirecallError") } } },
            });
            let mut responses = Map::new();
            if method.oneway {
                responses.insert(
                    "202".into(),
                    json!({ "description": "sent; one-way methods have no reply" }),
                );
            } else {
                let item_or_reply = match &method.reply {
                    ReplySchema::Unit => json!({ "type": "null" }),
                    ReplySchema::Value(ty) => schema_of::field_type_schema(ty, ref_of),
                    ReplySchema::Result { ok: Some(ty), .. } => schema_of::type_schema(ty, ref_of),
                    ReplySchema::Result { ok: None, .. } => json!({ "type": "null" }),
                };
                let ok = if method.server_stream {
                    stream_response(item_or_reply)
                } else {
                    json!({ "description": "the reply", "content": { "application/json": { "schema": item_or_reply } } })
                };
                responses.insert("200".into(), ok);
                if let ReplySchema::Result { err, .. } = &method.reply {
                    let description = if method.server_stream {
                        "the method's application error as the stream's first item, in `value`"
                    } else {
                        "the method's application error, in `value`"
                    };
                    responses.insert(
                        "422".into(),
                        json!({
                            "description": description,
                            "content": { "application/json": { "schema": {
                                "type": "object",
                                "properties": {
                                    "error": { "const": "Application" },
                                    "value": schema_of::type_schema(err, ref_of),
                                },
                            } } },
                        }),
                    );
                }
            }
            responses.insert("default".into(), error);
            let summary = method.doc.lines().next().unwrap_or(&method.name).to_owned();
            let mut operation = json!({
                "operationId": format!("{}.{}", schema.name, method.name),
                "tags": [schema.name],
                "summary": summary,
                "description": method.doc,
                "requestBody": request_body(method, ref_of),
                "responses": responses,
            });
            if method.server_stream {
                operation[SERVER_STREAM_EXTENSION] = Value::Bool(true);
            }
            if method.upload.is_some() {
                operation[UPLOAD_EXTENSION] = Value::Bool(true);
            }
            paths.insert(
                format!("/{}/{}", schema.name, method.name),
                json!({ "post": operation }),
            );
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "wirecall gateway",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Every method of the services behind this gateway; arguments are a JSON object keyed by argument name. Request headers `wirecall-meta-{key}` become call metadata.",
        },
        "tags": schemas.iter().map(|schema| json!({ "name": schema.name, "description": schema.doc })).collect::<Vec<_>>(),
        "paths": paths,
        "components": { "schemas": components },
    })
}

/// Names of named types that two services define differently: their components are
/// qualified by service (`Weather.Reading`, `Lab.Reading`), so neither describes the other's.
fn names_to_qualify(schemas: &[ServiceSchema]) -> HashSet<String> {
    let mut qualified = HashSet::new();
    for (at, schema) in schemas.iter().enumerate() {
        for def in &schema.types {
            let differs = schemas[at + 1..].iter().any(|other| {
                other
                    .types
                    .iter()
                    .any(|theirs| theirs.name == def.name && theirs != def)
            });
            if differs {
                qualified.insert(def.name.clone());
            }
        }
    }
    qualified
}

/// The request body: the argument object (no unknown names; missing ones take their
/// defaults), or for a method that takes an upload, the arguments and then the items, as
/// newline-delimited JSON or as one JSON array. (As for a stream's response, the NDJSON
/// media type's `schema` describes one line.) A body is required: an empty one is refused,
/// except as NDJSON, where it is a document of no lines (no arguments, no items).
fn request_body(method: &MethodSchema, ref_of: RefOf<'_>) -> Value {
    let mut args = schema_of::fields_schema(&method.args, true, false, ref_of);
    schema_of::describe(&mut args, &method.doc);
    let Some(item) = &method.upload else {
        return json!({
            "required": true,
            "content": { JSON: { "schema": args } },
        });
    };
    let item = schema_of::field_type_schema(item, ref_of);
    json!({
        "required": true,
        "description": "the arguments, then the items of the upload: newline-delimited JSON \
            (`application/x-ndjson`: the first line is the object of the other arguments, \
            `{}` if none, each following line one item, sent as it is read; blank lines are \
            skipped and counted), or one JSON array (`application/json`: the argument object, \
            then the items; the whole array within the body limit). An empty NDJSON body is \
            no arguments and no items; an empty JSON body is refused. A bad line or element \
            is refused with 400 and its number, from 1, in `line`",
        "content": {
            NDJSON: { "schema": { "anyOf": [args.clone(), item.clone()] } },
            JSON: { "schema": {
                "type": "array",
                "prefixItems": [args],
                "items": item,
                "minItems": 1,
            } },
        },
    })
}

/// The 200 response of a server stream: its items in one of two formats, by the request's
/// `Accept`. Newline-delimited JSON (the default), each line an item (`item`) or the error
/// line that ends a stream failing after its first item; or Server-Sent Events, each event's
/// data an item, the error, or the end's `{}`. (Each media type's `schema` describes one line
/// or one event's data: OpenAPI 3.1 has no schema for a sequence.)
fn stream_response(item: Value) -> Value {
    let error = json!({ "$ref": format!("{COMPONENTS}WirecallError") });
    let error_line = json!({
        "type": "object",
        "description": "the last line of a stream that failed after its first item",
        "properties": { "error": error },
        "required": ["error"],
    });
    let end_data = json!({
        "type": "object",
        "maxProperties": 0,
        "description": "the data of the `end` event",
    });
    let trailers = json!({
        "type": "object",
        "additionalProperties": { "type": "string" },
        "description": "the server's trailers",
    });
    let trailers_line = json!({
        "type": "object",
        "description": "the server's trailers, right before the end or the error line",
        "properties": { "trailers": trailers.clone() },
        "required": ["trailers"],
        "additionalProperties": false,
    });
    json!({
        "description": "the items, each written as it arrives: newline-delimited JSON, or \
            Server-Sent Events when the request's Accept prefers text/event-stream (by \
            q-value; newline-delimited JSON wins ties). A stream that fails after its first \
            item ends with a line {\"error\": {...}}, or an `error` event; an event stream \
            that ends well ends with an `end` event. The server's trailers, if it sent any, \
            come right before: a line {\"trailers\": {...}}, or a `trailers` event. Its \
            reply metadata comes as `wirecall-meta-{key}` headers",
        "content": {
            NDJSON: { "schema": {
                "description": "one line: an item, the error that ends a failed stream, or \
                    the stream's trailers before its end or that error",
                "anyOf": [item.clone(), error_line, trailers_line],
            } },
            EVENT_STREAM: { "schema": {
                "description": "the data of one event: an item (an unnamed event, `message` \
                    to an EventSource), the error of an `error` event, which ends a failed \
                    stream, the `{}` of the `end` event, which ends one that went well, or \
                    the object of the `trailers` event before either; comment lines keep an \
                    idle stream open",
                "anyOf": [item, error, end_data, trailers],
            } },
        },
    })
}
