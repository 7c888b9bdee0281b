//! The handshake that opens every connection and picks its codec.
//!
//! ```text
//! client hello:  "WCAL"  version:u8  count:u8 (1..=16)  codec ids:[u8; count]  (preference order)
//!                token_len:u8 (0 = no token)  token:[u8; token_len]
//!                (version >= 2) extensions_len:u16  extensions (the client's frame limit,
//!                early calls)
//! server hello:  "WCAL"  version:u8  status:u8  chosen codec id:u8  count:u8  server codec ids:[u8; count]
//!                (version >= 2) extensions_len:u16  extensions (the server's frame limit,
//!                early calls)
//! ```
//!
//! Layout: `hello.rs` turns hellos into bytes and back without I/O; `choice.rs` picks the
//! codec (whose preference wins, which codec two lists share, whether a configured list fits
//! a hello), also without I/O; `client_side.rs` and `server_side.rs` are the two async
//! drivers, which read through `read_hello.rs` exactly the bytes the parser asks for;
//! `negotiated.rs` is what a handshake settled, `error.rs` what can go wrong, and
//! `codec_list.rs` the list of codec ids that errors print.
//!
//! The server answers every hello it can parse, even a
//! refusal, so that the client can say precisely why it was refused; after a refusal it
//! closes the connection. A server that requires a token checks it before it chooses a codec,
//! and answers a wrong or missing one with [`HelloStatus::AuthenticationFailed`], listing no
//! codecs.
//!
//! Early calls (book: "Early calls"): a client hello with the early-calls extension is
//! followed by frames encoded in the first codec it lists, sent before the server's answer.
//! The server then chooses that codec whatever its own preference, or refuses with
//! [`HelloStatus::EarlyCallsRefused`]; after any refusal it reads no frame. A server announces
//! in its `Accepted` hellos that it understands early calls, and a client sends them only to
//! a server that said so.

mod choice;
mod client_side;
mod codec_list;
mod error;
mod hello;
mod negotiated;
mod read_hello;
mod server_side;

pub(crate) use choice::check_codec_list;
pub use choice::{negotiate_codec, Preference};
pub(crate) use client_side::{client_handshake_listed, read_verdict};
pub(crate) use codec_list::CodecList;
pub use error::NegotiationError;
pub use hello::{ClientHello, ServerHello};
pub(crate) use negotiated::Negotiated;
pub(crate) use server_side::{refuse, server_handshake, ServerHandshake};
pub use wirecall_wire::{
    HelloStatus, MAGIC, MAX_CODECS, MAX_TOKEN_LEN, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION,
};
