//! The OpenAPI 3.1 document, from the reflected schemas: one `POST` operation per method,
//! its arguments as the request body and its reply as the 200 response; the
//! `#[wirecall::message]` types as components (OpenAPI 3.1 schemas are JSON Schema 2020-12).

use serde_json::{json, Map, Value};
use wirecall::reflect::{
    method_json_schemas, type_json_schema, type_json_schemas, ReplySchema, ServiceSchema,
};

const COMPONENTS: &str = "#/components/schemas/";

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
                let reply = match &method.reply {
                    ReplySchema::Unit => json!({ "type": "null" }),
                    ReplySchema::Value(ty) => type_json_schema(ty, COMPONENTS),
                    ReplySchema::Result { ok: Some(ty), .. } => type_json_schema(ty, COMPONENTS),
                    ReplySchema::Result { ok: None, .. } => json!({ "type": "null" }),
                };
                responses.insert(
                    "200".into(),
                    json!({ "description": "the reply", "content": { "application/json": { "schema": reply } } }),
                );
                if let ReplySchema::Result { err, .. } = &method.reply {
                    responses.insert(
                        "422".into(),
                        json!({
                            "description": "the method's application error, in `value`",
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
            let operation = json!({
                "operationId": format!("{}.{}", schema.name, method.name),
                "tags": [schema.name],
                "summary": summary,
                "description": method.doc,
                "requestBody": {
                    "required": true,
                    "content": { "application/json": { "schema": bodies.args } },
                },
                "responses": responses,
            });
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
