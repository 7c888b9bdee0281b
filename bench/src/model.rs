//! The benchmark's data: the surging `UserModel`, the calls each workload makes, the items
//! of the stream cells, the chunks of the upload cell, and the payload sizes the raw-TCP
//! floor mirrors.

use bytes::Bytes;
use wirecall::Codec;
use wirecall_runtime::transport::frame::HEADER_LEN;

// The surging `UserModel` and the user every call carries, from the shared fixture that the
// wirecall system serves. `#[wirecall::message]` derives serde (used by tarpc and by
// wirecall's JSON and MessagePack codecs) and prost (wirecall's Protobuf codec and tonic).
pub use wirecall_test_support::{fanly, UserModel};

/// Bytes carried by one `bulk` call (W5).
pub const BULK_LEN: usize = 64 * 1024;
/// Bytes of the arguments of one big request (W7), in the connection's codec.
pub const BIG_REQUEST_LEN: usize = 4 * 1024 * 1024;
/// How often W7 sends a big request.
pub const BIG_REQUEST_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Users enough for `get(users)` arguments of about [`BIG_REQUEST_LEN`] bytes in `codec`: a
/// big request whose decode is real work (many small messages), not one memcpy.
pub fn big_request_users(codec: Codec) -> Vec<UserModel> {
    let mut one = bytes::BytesMut::new();
    codec
        .encode(
            &GetArgs {
                users: vec![fanly()],
            },
            &mut one,
        )
        .expect("the benchmark's own messages always encode");
    // A one-user list costs its user plus a few bytes of list and message framing.
    let per_user = one.len().saturating_sub(2).max(1);
    vec![fanly(); BIG_REQUEST_LEN / per_user]
}

/// Bytes carried by one `record` one-way call (W6).
pub const RECORD_LEN: usize = 10;

/// The body of every item of the stream cells (S1-S3).
pub const ITEM_BODY_LEN: usize = 1024;

/// One item of a server stream (S1-S3), the same struct in every system: tonic's generated
/// code uses it through `extern_path` (`#[wirecall::message]` derives the prost encoding of
/// `StreamItem` in `systems/tonic/user_service.proto`).
#[wirecall::message]
#[derive(Clone)]
pub struct StreamItem {
    /// When the producer made the item: [`wall_clock_ns`] in the server process.
    pub sent_at_ns: u64,
    /// [`ITEM_BODY_LEN`] bytes.
    pub body: Bytes,
}

/// Nanoseconds since the Unix epoch. Server and client are processes on one machine, so they
/// read the same clock: an item's latency is the client's reading when the item arrives less
/// the server's when it was made.
pub fn wall_clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
}

/// The time from `sent_at_ns` (an item's producer timestamp) until now.
pub fn item_latency(sent_at_ns: u64) -> std::time::Duration {
    std::time::Duration::from_nanos(wall_clock_ns().saturating_sub(sent_at_ns))
}

/// The items of one stream, `count` of them (`u64::MAX`: until the caller stops reading),
/// each stamped when the server takes it from the producer: the stream is lazy, and both
/// wirecall's and tonic's servers take an item only when they can send it on.
pub fn stamped_items(count: u64) -> impl Iterator<Item = StreamItem> + Send + 'static {
    let body = Bytes::from(vec![0xA5; ITEM_BODY_LEN]);
    (0..count).map(move |_| StreamItem {
        sent_at_ns: wall_clock_ns(),
        body: body.clone(),
    })
}

/// What follows the 4-byte length prefix of a wirecall MessagePack `Item` frame: the frame
/// header plus the encoded item. The raw-TCP floor's items are this long.
pub fn raw_item_len() -> usize {
    item_frame_len(&StreamItem {
        sent_at_ns: wall_clock_ns(),
        body: Bytes::from(vec![0xA5; ITEM_BODY_LEN]),
    })
}

/// The bytes of every chunk the upload cell (U1) sends.
pub const CHUNK_LEN: usize = 64 * 1024;

/// One chunk of an upload (U1), the same struct in every system: tonic's generated code uses
/// it through `extern_path`, as it does [`StreamItem`]. `Bytes` encodes as MessagePack `bin`
/// (as W5's `bulk` argument does) and as Protobuf `bytes`.
#[wirecall::message]
#[derive(Clone)]
pub struct Chunk {
    /// [`CHUNK_LEN`] bytes.
    pub data: Bytes,
}

/// `count` chunks that share one [`CHUNK_LEN`]-byte buffer, so that making a chunk copies
/// nothing: what an upload costs is the system's own.
pub fn upload_chunks(count: u64) -> impl Iterator<Item = Chunk> + Send + 'static {
    let data = Bytes::from(vec![0xA5; CHUNK_LEN]);
    (0..count).map(move |_| Chunk { data: data.clone() })
}

/// What follows the 4-byte length prefix of a wirecall MessagePack `Item` frame carrying one
/// [`Chunk`]. The raw-TCP floor's chunks are this long.
pub fn raw_chunk_len() -> usize {
    item_frame_len(&Chunk {
        data: Bytes::from(vec![0xA5; CHUNK_LEN]),
    })
}

/// The frame header plus `item` encoded in MessagePack.
fn item_frame_len(item: &impl wirecall::WireMessage) -> usize {
    let mut buf = bytes::BytesMut::new();
    Codec::MessagePack
        .encode(item, &mut buf)
        .expect("the benchmark's own messages always encode");
    HEADER_LEN + buf.len()
}

/// One kind of call, as the workloads name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// `get_dictionary()`: no object.
    Dictionary,
    /// `get_user(user)`: one object, echoed back.
    User,
    /// `get(users)` with 10 objects.
    Users10,
    /// `get(users)` with 100 objects.
    Users100,
    /// `bulk(bytes)` with [`BULK_LEN`] bytes.
    Bulk,
}

/// Arguments built once per client process, so that calls only clone them.
#[derive(Clone)]
pub struct Fixtures {
    /// 10 copies of [`fanly`].
    pub users10: Vec<UserModel>,
    /// 100 copies of [`fanly`].
    pub users100: Vec<UserModel>,
    /// [`BULK_LEN`] bytes.
    pub bulk: Bytes,
}

impl Fixtures {
    /// Builds every argument.
    pub fn new() -> Self {
        Self {
            users10: vec![fanly(); 10],
            users100: vec![fanly(); 100],
            bulk: Bytes::from(vec![0xA5; BULK_LEN]),
        }
    }
}

// Mirrors of the argument messages `#[wirecall::service]` generates for `get_user`, `get` and
// `bulk`. With MessagePack a message is an array of its fields in order, so these encode to
// exactly the bytes of the generated ones.
#[wirecall::message]
struct GetUserArgs {
    user: UserModel,
}

#[wirecall::message]
struct GetArgs {
    users: Vec<UserModel>,
}

#[wirecall::message]
struct BulkArgs {
    data: Bytes,
}

/// What follows the 4-byte length prefix of wirecall's MessagePack request frame for `case`:
/// the frame header plus the encoded arguments. The raw-TCP floor sends payloads of exactly
/// this size, so its bytes on the wire equal wirecall's request.
pub fn raw_request_len(case: Case, fixtures: &Fixtures) -> usize {
    let mut buf = bytes::BytesMut::new();
    let codec = Codec::MessagePack;
    let encoded = match case {
        // A method without arguments sends an empty array: one byte.
        Case::Dictionary => {
            buf.extend_from_slice(&[0x90]);
            Ok(())
        }
        Case::User => codec.encode(&GetUserArgs { user: fanly() }, &mut buf),
        Case::Users10 => codec.encode(
            &GetArgs {
                users: fixtures.users10.clone(),
            },
            &mut buf,
        ),
        Case::Users100 => codec.encode(
            &GetArgs {
                users: fixtures.users100.clone(),
            },
            &mut buf,
        ),
        Case::Bulk => codec.encode(
            &BulkArgs {
                data: fixtures.bulk.clone(),
            },
            &mut buf,
        ),
    };
    encoded.expect("the benchmark's own messages always encode");
    HEADER_LEN + buf.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_sizes_grow_with_the_payload() {
        let fixtures = Fixtures::new();
        let sizes: Vec<usize> = [Case::Dictionary, Case::User, Case::Users10, Case::Users100]
            .into_iter()
            .map(|case| raw_request_len(case, &fixtures))
            .collect();
        assert_eq!(sizes[0], HEADER_LEN + 1);
        assert!(sizes.windows(2).all(|pair| pair[0] < pair[1]), "{sizes:?}");
        assert!(raw_request_len(Case::Bulk, &fixtures) > BULK_LEN + HEADER_LEN);
    }

    #[test]
    fn a_raw_chunk_is_as_long_as_wirecalls_msgpack_item_frame() {
        // A MessagePack `bin 32` (5 bytes of marker and length) in a one-field array (1 byte).
        assert_eq!(raw_chunk_len(), HEADER_LEN + 1 + 5 + CHUNK_LEN);
    }
}
