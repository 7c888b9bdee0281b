//! The floor of the upload cell (U1): a client stream of chunks over plain tokio TCP, each
//! frame a 4-byte big-endian length and a body, with the flow control wirecall's uploads have
//! and nothing else. A chunk is as long as wirecall's MessagePack `Item` frame for the same
//! [`Chunk`](crate::model::Chunk), its last [`CHUNK_LEN`] bytes the chunk's data.
//!
//! Bodies, by their first byte:
//!
//! | from | byte | then |
//! |---|---|---|
//! | client | `OPEN` | nothing (wirecall's `upload` takes no other argument) |
//! | client | `CHUNK` | filler up to the chunk length |
//! | client | `END` | nothing |
//! | server | `CREDIT` | chunks granted (u32) |
//! | server | `RECEIVED` | bytes of chunk data received (u64) |
//!
//! Credit works as wirecall's upload credit does: the server grants [`UPLOAD_RAW_WINDOW`]
//! chunks when the upload opens and half of it again each time it has taken half, and the
//! client sends a chunk only with credit for it. The server's connection is one task that
//! reads a chunk, counts it and writes any grant it earned at once; the client is one task
//! that sends chunks while it holds credit and, out of credit, waits for a grant. (`Framed`
//! copies each chunk into its write buffer and, that being past its 8 KiB back-pressure
//! boundary, writes it out before it takes the next: about one `write` per chunk.)

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::{SinkExt, StreamExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use super::raw_streams::RawConn;
use super::BenchResult;
use crate::cell::UPLOAD_RAW_WINDOW;
use crate::model::{raw_chunk_len, CHUNK_LEN};

const OPEN: u8 = 1;
const CHUNK: u8 = 2;
const END: u8 = 3;
const CREDIT: u8 = 1;
const RECEIVED: u8 = 2;

/// Starts the upload server on an ephemeral loopback port.
pub async fn serve() -> BenchResult<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(serve_connection(stream));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    });
    Ok(addr)
}

/// The bytes of a chunk frame's body before the chunk's data: the kind byte and wirecall's
/// frame header and MessagePack markers, as filler.
fn chunk_overhead() -> usize {
    raw_chunk_len() - CHUNK_LEN
}

/// One upload on the server: what it received and what credit it owes.
struct Receiving {
    received: u64,
    /// Granted and not yet used by a chunk.
    outstanding: u32,
    /// Chunks taken since the last grant.
    taken: u32,
}

/// Serves uploads one after another until the client closes or breaks the protocol (a chunk
/// without credit or outside an upload, an unknown frame).
async fn serve_connection(stream: TcpStream) {
    let mut frames = Framed::new(stream, LengthDelimitedCodec::new());
    // What precedes a chunk's data once its kind byte is read.
    let filler = chunk_overhead() - 1;
    let half = (UPLOAD_RAW_WINDOW / 2).max(1);
    let mut upload: Option<Receiving> = None;
    while let Some(Ok(mut body)) = frames.next().await {
        let kind = if body.is_empty() { 0 } else { body.get_u8() };
        let reply = match (kind, upload.as_mut()) {
            (OPEN, None) => {
                upload = Some(Receiving {
                    received: 0,
                    outstanding: UPLOAD_RAW_WINDOW,
                    taken: 0,
                });
                credit_frame(UPLOAD_RAW_WINDOW)
            }
            (CHUNK, Some(receiving)) if receiving.outstanding > 0 => {
                receiving.outstanding -= 1;
                receiving.received += body.len().saturating_sub(filler) as u64;
                receiving.taken += 1;
                if receiving.taken < half {
                    continue;
                }
                receiving.taken = 0;
                receiving.outstanding += half;
                credit_frame(half)
            }
            (END, Some(receiving)) => {
                let mut received = BytesMut::with_capacity(9);
                received.put_u8(RECEIVED);
                received.put_u64(receiving.received);
                upload = None;
                received.freeze()
            }
            _ => return,
        };
        if frames.send(reply).await.is_err() {
            return;
        }
    }
}

fn credit_frame(granted: u32) -> Bytes {
    let mut credit = BytesMut::with_capacity(5);
    credit.put_u8(CREDIT);
    credit.put_u32(granted);
    credit.freeze()
}

/// A frame from the server, parsed.
enum Answer {
    Credit(u32),
    Received(u64),
}

async fn next_answer(conn: &mut RawConn) -> BenchResult<Answer> {
    let mut body = conn
        .next()
        .await
        .ok_or("the server closed the connection")??;
    let kind = if body.is_empty() { 0 } else { body.get_u8() };
    match (kind, body.len()) {
        (CREDIT, 4) => Ok(Answer::Credit(body.get_u32())),
        (RECEIVED, 8) => Ok(Answer::Received(body.get_u64())),
        (kind, len) => Err(format!("unexpected frame: kind {kind}, {len} bytes").into()),
    }
}

/// U1: uploads `chunks` chunks as the server's credit allows, then the end; returns the
/// bytes of chunk data the server says it received.
pub async fn upload(conn: &mut RawConn, chunks: u64) -> BenchResult<u64> {
    let mut chunk = BytesMut::with_capacity(raw_chunk_len());
    chunk.put_u8(CHUNK);
    chunk.put_bytes(0x5A, chunk_overhead() - 1);
    chunk.put_bytes(0xA5, CHUNK_LEN);
    let chunk = chunk.freeze();

    conn.send(Bytes::from_static(&[OPEN])).await?;
    let mut credit = 0u64;
    let mut sent = 0u64;
    while sent < chunks {
        if credit == 0 {
            // Out of credit: put the queued chunks on the wire, then wait for a grant.
            SinkExt::<Bytes>::flush(conn).await?;
            match next_answer(conn).await? {
                Answer::Credit(granted) => credit += u64::from(granted),
                Answer::Received(_) => return Err("an answer before the upload's end".into()),
            }
            continue;
        }
        conn.feed(chunk.clone()).await?;
        credit -= 1;
        sent += 1;
    }
    conn.send(Bytes::from_static(&[END])).await?;
    loop {
        match next_answer(conn).await? {
            // Grants for chunks the upload no longer needs.
            Answer::Credit(_) => {}
            Answer::Received(received) => return Ok(received),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn connect(addr: SocketAddr) -> RawConn {
        let stream = TcpStream::connect(addr).await.expect("the server listens");
        Framed::new(stream, LengthDelimitedCodec::new())
    }

    #[tokio::test]
    async fn uploads_longer_than_the_window_count_every_chunk() {
        let addr = serve().await.expect("bound");
        let mut conn = connect(addr).await;
        let chunks = u64::from(UPLOAD_RAW_WINDOW) * 3 + 5;
        let received = upload(&mut conn, chunks).await.expect("uploaded");
        assert_eq!(received, chunks * CHUNK_LEN as u64);
        // The same connection uploads again, and an empty upload counts nothing.
        assert_eq!(
            upload(&mut conn, 3).await.expect("again"),
            3 * CHUNK_LEN as u64
        );
        assert_eq!(upload(&mut conn, 0).await.expect("empty"), 0);
    }
}
