//! A long link for the L1 cells: a TCP proxy that holds every byte for half the round trip
//! in each direction before passing it on, so a client that connects through it sees the
//! server `rtt` away. The kernel has no `netem` here, so the delay is added in user space.
//!
//! The link's own buffer is deep (up to `LINK_CHUNKS` reads in flight each way, far more
//! than any bandwidth-delay product these cells reach): what limits a stream through it is
//! the stream's flow control and the proxy's copying, never the link. Raw TCP through the
//! same proxy shows what the link carries.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};

use crate::systems::BenchResult;

/// Reads in flight on one direction of one connection.
const LINK_CHUNKS: usize = 16_384;

/// The most one read takes from a socket.
const READ_LEN: usize = 64 * 1024;

/// Listens on loopback, prints the address, and relays every connection to `to` with `rtt`
/// added; stops after `lifetime` (the parent also kills it when its cell ends).
pub async fn run(to: SocketAddr, rtt: Duration, lifetime: Duration) -> BenchResult<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("{}", listener.local_addr()?);
    tokio::select! {
        outcome = relay_all(listener, to, rtt / 2) => outcome,
        () = tokio::time::sleep(lifetime) => Ok(()),
    }
}

/// Relays each connection `listener` accepts to a connection of its own to `to`.
async fn relay_all(listener: TcpListener, to: SocketAddr, one_way: Duration) -> BenchResult<()> {
    loop {
        let (client, _) = listener.accept().await?;
        let server = TcpStream::connect(to).await?;
        client.set_nodelay(true)?;
        server.set_nodelay(true)?;
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        tokio::spawn(relay(client_read, server_write, one_way));
        tokio::spawn(relay(server_read, client_write, one_way));
    }
}

/// One direction: what `from` sends reaches `to` `delay` later; `from`'s end closes `to`'s
/// write side once everything before it has been passed on.
async fn relay(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (chunks, mut due) = mpsc::channel(LINK_CHUNKS);
    let read = async move {
        loop {
            let mut chunk = BytesMut::with_capacity(READ_LEN);
            match from.read_buf(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if chunks.send((Instant::now() + delay, chunk)).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    let write = async move {
        while let Some((at, chunk)) = due.recv().await {
            sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(read, write);
}
