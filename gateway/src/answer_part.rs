//! What a stream's answer is made of after its status, whichever format writes it (NDJSON
//! lines or Server-Sent Events).

use serde_json::Value;

use crate::GatewayError;

/// One part of a stream's answer after its status: an item, or how the stream ended. `End`
/// or `Failed` is the last part of an answer that was not cut off.
#[derive(Debug)]
pub(crate) enum AnswerPart {
    /// One item's value.
    Item(Value),
    /// The stream's trailers (an object of strings), right before its `End` or `Failed`
    /// when the server sent any.
    Trailers(Value),
    /// The stream ended well.
    End,
    /// The stream failed after its first item.
    Failed(GatewayError),
}
