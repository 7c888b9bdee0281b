//! The OpenAPI 3.1 document, from the reflected schemas: one `POST` operation per method,
//! its arguments as the request body (a method that takes an upload: `application/x-ndjson`,
//! the arguments and then one item a line) and its reply as the 200 response (a server
//! stream's: `application/x-ndjson`, each line an item, or `text/event-stream`, each event's
//! data an item); the `#[wirecall::message]` types as components (OpenAPI 3.1 schemas are
//! JSON Schema 2020-12).

use crate::event_stream::EVENT_STREAM;
use crate::ndjson::NDJSON;
use serde_json::{json, Map, Value};
use wirecall::reflect::{
    method_json_schemas, type_json_schema, type_json_schemas, MethodSchema, ReplySchema,
    ServiceSchema,
};

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
    for schema in schemas {
        for (name, definition) in type_json_schemas(schema, COMPONENTS) {
            components.entry(name).or_insert(definition);
        }
        let bodies = method_json_schemas(schema, COMPONENTS);
        for (method, bodies) in schema.methods.iter().zip(bodies) {
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
                    ReplySchema::Value(ty) => type_json_schema(ty, COMPONENTS),
                    ReplySchema::Result { ok: Some(ty), .. } => type_json_schema(ty, COMPONENTS),
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
                                    "value": type_json_schema(err, COMPONENTS),
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
                "requestBody": request_body(method, bodies.args),
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

/// The request body: the argument object (`args`), or for a method that takes an upload,
/// newline-delimited JSON of the argument object and then the items. (As for a stream's
/// response, the media type's `schema` describes one line.)
fn request_body(method: &MethodSchema, args: Value) -> Value {
    let Some(item) = &method.upload else {
        return json!({
            "required": true,
            "content": { "application/json": { "schema": args } },
        });
    };
    json!({
        "required": true,
        "description": "newline-delimited JSON: the first line is the object of the other \
            arguments ({} if none), each following line one item of the upload, sent as it \
            is read; the end of the body ends the upload. Blank lines are skipped and counted: \
            a bad line is refused with 400 and its number in `line`",
        "content": { NDJSON: { "schema": { "anyOf": [args, type_json_schema(item, COMPONENTS)] } } },
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
    json!({
        "description": "the items, each written as it arrives: newline-delimited JSON, or \
            Server-Sent Events when the request's Accept prefers text/event-stream (by \
            q-value; newline-delimited JSON wins ties). A stream that fails after its first \
            item ends with a line {\"error\": {...}}, or an `error` event; an event stream \
            that ends well ends with an `end` event",
        "content": {
            NDJSON: { "schema": {
                "description": "one line: an item, or the error that ends a failed stream",
                "anyOf": [item.clone(), error_line],
            } },
            EVENT_STREAM: { "schema": {
                "description": "the data of one event: an item (an unnamed event, `message` \
                    to an EventSource), the error of an `error` event, which ends a failed \
                    stream, or the `{}` of the `end` event, which ends one that went well; \
                    comment lines keep an idle stream open",
                "anyOf": [item, error, end_data],
            } },
        },
    })
}
