//! A call's argument object, checked as the OpenAPI document describes it (`schema_of.rs`):
//! a JSON object of known argument names only (missing ones take their defaults), each
//! argument of its type (`json_shape.rs`); and the JSON-array form of an upload's body.

use bytes::Bytes;
use serde_json::Value;
use wirecall::reflect::{MethodSchema, TypeDef};

use crate::json_shape;
use crate::GatewayError;

/// The body of a call that takes no upload as the method's argument object: JSON, an
/// object, only known argument names, each of its type. Returns it as it is sent on (with
/// integers written `436.0` as `436`) and parsed (a stream is opened with the parsed object).
pub(crate) fn check_body(
    method: &MethodSchema,
    types: &[TypeDef],
    body: &[u8],
) -> Result<(Bytes, Value), GatewayError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(GatewayError::BadBody(
            "the body is empty: send the argument object, `{}` for none".to_owned(),
        ));
    }
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|error| GatewayError::BadBody(format!("the body is not JSON: {error}")))?;
    check_arguments(method, types, &mut value).map_err(GatewayError::BadBody)?;
    let sent = serde_json::to_vec(&value)
        .map_err(|error| GatewayError::BadBody(format!("the body is not JSON: {error}")))?;
    Ok((Bytes::from(sent), value))
}

/// Whether `value` is an argument object of `method`: an object with only known argument
/// names (missing ones take their defaults), each of its type; if not, why. Fits the values
/// to the codec on the way (`json_shape::conform`).
pub(crate) fn check_arguments(
    method: &MethodSchema,
    types: &[TypeDef],
    value: &mut Value,
) -> Result<(), String> {
    let Value::Object(object) = value else {
        return Err("the arguments must be a JSON object keyed by argument name".to_owned());
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !method.args.iter().any(|arg| &arg.name == *key))
    {
        let names: Vec<&str> = method.args.iter().map(|arg| arg.name.as_str()).collect();
        return Err(format!(
            "unknown argument `{unknown}`; {} takes: {}",
            method.name,
            names.join(", ")
        ));
    }
    for arg in &method.args {
        if let Some(argument) = object.get_mut(&arg.name) {
            json_shape::conform_field(argument, &arg.ty, types)
                .map_err(|mismatch| format!("argument `{}`: {mismatch}", arg.name))?;
        }
    }
    Ok(())
}

/// An upload sent as one JSON array (`application/json`), `[arguments, item, item, ...]`,
/// as the newline-delimited body it stands for: element `n` (from 1) on line `n`, so an error
/// names the element by its position. The array must be there, as a call's argument object
/// must: `[{}]` for no arguments and no items.
pub(crate) fn upload_array_as_lines(body: &[u8]) -> Result<Bytes, GatewayError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(GatewayError::BadBody(
            "the body is empty: send the array, `[{}]` for no arguments and no items".to_owned(),
        ));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| GatewayError::BadBody(format!("the body is not JSON: {error}")))?;
    let Value::Array(elements) = value else {
        return Err(GatewayError::BadBody(
            "an upload sent as application/json is an array: the argument object, then the items"
                .to_owned(),
        ));
    };
    if elements.is_empty() {
        return Err(GatewayError::BadBody(
            "the array is empty: its first element is the argument object, `{}` for none"
                .to_owned(),
        ));
    }
    let mut lines = Vec::with_capacity(body.len() + elements.len());
    for element in &elements {
        serde_json::to_writer(&mut lines, element)
            .map_err(|error| GatewayError::BadBody(format!("the body is not JSON: {error}")))?;
        lines.push(b'\n');
    }
    Ok(Bytes::from(lines))
}
