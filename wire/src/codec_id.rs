//! Codec ids, as listed in the hellos (book: "Client hello", codec id table).

/// JSON (serde_json): arguments as an object keyed by argument name.
pub const CODEC_JSON: u8 = 1;
/// MessagePack (rmp-serde): arguments as an array in declaration order.
pub const CODEC_MSGPACK: u8 = 2;
/// Protobuf (prost): arguments as a message with fields 1..n.
pub const CODEC_PROTOBUF: u8 = 3;
