//! The JSON messages of a call to a method learnt by reflection rather than from its trait.
//!
//! [`Channel::open_stream`](crate::Channel::open_stream) is typed by the messages of the
//! arguments and of one item, as a generated client knows them. A tool that knows the method
//! only from its schema (the CLI, the HTTP gateway) opens the stream with these: the argument
//! object and each item message as a `serde_json::Value`, which the JSON codec reads and
//! writes like any other message.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::codec::WireMessage;
use crate::stream::ItemMessage;

/// A method's arguments: a JSON object keyed by argument name.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonArgs(pub Value);

impl WireMessage for JsonArgs {}

/// One item message as it travels: `{"value": ...}`, or `{"ok": ...}` / `{"err": ...}` for a
/// stream of results (the book's wire chapter, "Streams"). The item is the whole message;
/// the caller reads it with the method's reply schema, as it reads a unary reply.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JsonItem(pub Value);

impl WireMessage for JsonItem {}

impl ItemMessage for JsonItem {
    type Item = Value;

    fn from_item(item: Value) -> (Self, bool) {
        // An application error is a stream's last item.
        let last = item.get("err").is_some_and(|err| !err.is_null());
        (Self(item), last)
    }

    fn into_item(self) -> Result<Value, crate::Error> {
        Ok(self.0)
    }
}
