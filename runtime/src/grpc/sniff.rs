//! Telling a gRPC connection from a wirecall one on a shared port, by its first byte: an
//! HTTP/2 connection opens with its preface (`PRI * HTTP/2.0...`), a wirecall one with its
//! hello (`WCAL...`). The byte is peeked, not read, so whichever side takes the connection
//! reads it from its start.

use tokio::net::TcpStream;
use tokio::time::Instant;

/// The first byte of HTTP/2's connection preface.
const PREFACE_START: u8 = b'P';

/// What a new connection speaks.
pub(crate) enum Protocol {
    Wirecall,
    Grpc,
}

/// Waits (until `deadline`) for the connection's first byte; `None` when it closed or sent
/// nothing in time.
pub(crate) async fn sniff(stream: &TcpStream, deadline: Instant) -> Option<Protocol> {
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == PREFACE_START => Some(Protocol::Grpc),
        Ok(Ok(1)) => Some(Protocol::Wirecall),
        _ => None,
    }
}
