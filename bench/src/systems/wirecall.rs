//! wirecall: the `UserService` fixture of `wirecall-test-support`, a `#[wirecall::service]`
//! trait, and for the stream and upload cells the benchmark's own `ItemFeed` beside it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use wirecall::{Channel, Codec, RunningServer, Server, Streaming};

use super::{
    calls_beside, check_received, fan_out, read_streams, BenchResult, BesideStream, Counter, Rpc,
    Stamps,
};
use crate::cell::StreamWindow;
use crate::measure::Latencies;
use crate::model::{
    big_request_users, fanly, stamped_items, upload_chunks, Case, Chunk, Fixtures, StreamItem,
    RECORD_LEN,
};

// The benchmark's service is the shared `UserService` fixture: `get_dictionary`, `get_user`
// and `get` are the 0-, 1-, 10- and 100-object cases, `bulk` is W5, `record`/`recorded` are W6.
pub use wirecall_test_support::UserServiceClient;
use wirecall_test_support::{UserServiceServer, Users};

/// The streams of the stream cells and the upload cell, served beside `UserService` on the
/// same connection.
#[wirecall::service]
pub trait ItemFeed {
    /// `count` items with 1 KiB bodies, each stamped as the server takes it; `u64::MAX` goes
    /// on until the caller drops the stream.
    async fn items(&self, count: u64) -> Streaming<StreamItem>;
    /// U1: takes every chunk of the upload and answers, at its end, with the bytes they
    /// carried.
    async fn upload(&self, chunks: Streaming<Chunk>) -> u64;
}

struct Feed;

impl ItemFeed for Feed {
    async fn items(&self, count: u64) -> Streaming<StreamItem> {
        Streaming::from_iter(stamped_items(count))
    }

    async fn upload(&self, chunks: Streaming<Chunk>) -> u64 {
        chunks
            .fold(0, |received, chunk| async move {
                received + chunk.data.len() as u64
            })
            .await
    }
}

/// The deadline of a stream call, longer than any cell: the default (30 s) bounds a whole
/// stream, and JSON's S1 streams for about that long.
const STREAM_TIMEOUT: Duration = Duration::from_secs(600);

/// Whether the server also answers standard gRPC on its port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrpcDoor {
    /// Wirecall's protocol only, as a server built without the `grpc` feature (the default)
    /// serves: the wirecall rows measure what a user gets by default.
    Closed,
    /// The gRPC door on (`ServerBuilder::grpc(true)`), for the grpc-wirecall rows.
    Open,
}

/// Starts a server on an ephemeral loopback port; every codec is allowed and the client picks.
/// With `streams`, it also serves `ItemFeed`.
pub async fn serve(recorded: Counter, streams: bool, door: GrpcDoor) -> BenchResult<RunningServer> {
    // The benchmark builds wirecall with the `grpc` feature, which opens the door by default.
    let mut builder = Server::builder()
        .grpc(door == GrpcDoor::Open)
        .serve(UserServiceServer::new(Users::counting_into(recorded)));
    if streams {
        builder = builder.serve(ItemFeedServer::new(Feed));
    }
    Ok(builder.bind("127.0.0.1:0").await?)
}

/// The feed on `conn`'s connection.
fn feed_on(conn: &UserServiceClient) -> ItemFeedClient {
    ItemFeedClient::new(conn.channel().clone()).with_timeout(STREAM_TIMEOUT)
}

async fn open_stamps(feed: ItemFeedClient, count: u64) -> BenchResult<Stamps> {
    Ok(feed
        .items(count)
        .await?
        .map_ok(|item| item.sent_at_ns)
        .map_err(Into::into)
        .boxed())
}

/// A wirecall client offering exactly one codec.
#[derive(Clone)]
pub struct WirecallRpc {
    addr: SocketAddr,
    codec: Codec,
    fixtures: Arc<Fixtures>,
    stream_window: StreamWindow,
}

impl WirecallRpc {
    /// A client of the server at `addr`.
    pub fn new(addr: SocketAddr, codec: Codec, fixtures: Arc<Fixtures>) -> Self {
        Self {
            addr,
            codec,
            fixtures,
            stream_window: StreamWindow::Sized,
        }
    }

    /// Connections whose server streams size their credit windows so (default: wirecall's).
    pub fn with_stream_window(mut self, window: StreamWindow) -> Self {
        self.stream_window = window;
        self
    }
}

impl Rpc for WirecallRpc {
    type Conn = UserServiceClient;

    async fn connect(&self) -> BenchResult<UserServiceClient> {
        let channel = Channel::builder()
            .codec(self.codec)
            .stream_window(self.stream_window.initial_items())
            .stream_window_bytes(self.stream_window.bytes())
            .connect(self.addr)
            .await?;
        Ok(UserServiceClient::new(channel))
    }

    async fn call(&self, conn: &mut UserServiceClient, case: Case) -> BenchResult<()> {
        match case {
            Case::Dictionary => {
                conn.get_dictionary().await?;
            }
            Case::User => {
                conn.get_user(fanly()).await?;
            }
            Case::Users10 => {
                conn.get(self.fixtures.users10.clone()).await?;
            }
            Case::Users100 => {
                conn.get(self.fixtures.users100.clone()).await?;
            }
            Case::Bulk => {
                conn.bulk(self.fixtures.bulk.clone()).await?;
            }
        }
        Ok(())
    }

    async fn pipelined(
        &self,
        conn: &mut UserServiceClient,
        case: Case,
        in_flight: usize,
        calls: usize,
    ) -> BenchResult<Latencies> {
        fan_out(self, conn, case, in_flight, calls).await
    }

    async fn send_one_way(&self, conn: &mut UserServiceClient, calls: usize) -> BenchResult<()> {
        for _ in 0..calls {
            conn.record(vec![0; RECORD_LEN]).await?;
        }
        Ok(())
    }

    async fn server_count(&self, conn: &mut UserServiceClient) -> BenchResult<u64> {
        Ok(conn.recorded().await?)
    }

    async fn beside_big_requests(
        &self,
        conn: &mut UserServiceClient,
        calls: usize,
        big_every: Option<Duration>,
    ) -> BenchResult<Latencies> {
        let stop = Arc::new(AtomicBool::new(false));
        let (first_sent, first_big) = tokio::sync::oneshot::channel();
        // The big requests are built and encoded on a thread of their own, so that the
        // client's own CPU work (cloning and encoding 4 MiB) does not hold up the small calls'
        // runtime: the cell measures what the server and the connection do to them.
        let big_sender = big_every.map(|every| {
            let users = big_request_users(self.codec);
            let (conn, stop) = (conn.clone(), Arc::clone(&stop));
            std::thread::spawn(move || -> BenchResult<u64> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(async move {
                    let mut tick = tokio::time::interval(every);
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    let mut first_sent = Some(first_sent);
                    let mut sent = 0u64;
                    // The first big request is always sent: the small calls start once it
                    // is on its way, so a short (smoke) cell still has one beside them.
                    loop {
                        tick.tick().await;
                        let request = conn.get(users.clone());
                        if let Some(first) = first_sent.take() {
                            let _ = first.send(());
                        }
                        request.await?;
                        sent += 1;
                        if stop.load(Ordering::Relaxed) {
                            return Ok(sent);
                        }
                    }
                })
            })
        });
        if big_sender.is_some() {
            // An error here means the thread failed before sending: joining it says why.
            let _ = first_big.await;
        }
        let mut latencies = Latencies::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            conn.get_user(fanly()).await?;
            latencies.record(start.elapsed());
        }
        stop.store(true, Ordering::Relaxed);
        if let Some(sender) = big_sender {
            let sent = tokio::task::spawn_blocking(move || sender.join())
                .await?
                .map_err(|_| "the big-request thread panicked")??;
            if sent == 0 {
                return Err("no big request completed during W7-big".into());
            }
        }
        Ok(latencies)
    }

    async fn consume_streams(
        &self,
        conn: &mut UserServiceClient,
        streams: usize,
        items_each: u64,
    ) -> BenchResult<Latencies> {
        let feed = feed_on(conn);
        read_streams(streams, items_each, || {
            open_stamps(feed.clone(), items_each)
        })
        .await
    }

    async fn calls_beside_stream(
        &self,
        conn: &mut UserServiceClient,
        calls: usize,
        beside_stream: bool,
    ) -> BenchResult<BesideStream> {
        let stream = if beside_stream {
            Some(open_stamps(feed_on(conn), u64::MAX).await?)
        } else {
            None
        };
        calls_beside(self, conn, calls, stream).await
    }

    async fn upload(&self, conn: &mut UserServiceClient, chunks: u64) -> BenchResult<()> {
        let upload = futures::stream::iter(upload_chunks(chunks));
        let received = feed_on(conn).upload(upload).await?;
        check_received(received, chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_upload_longer_than_the_window_is_counted_to_the_byte() {
        let server = serve(Counter::default(), true, GrpcDoor::Closed)
            .await
            .expect("bound");
        let fixtures = Arc::new(Fixtures::new());
        for codec in [Codec::MessagePack, Codec::Protobuf] {
            let rpc = WirecallRpc::new(server.local_addr(), codec, Arc::clone(&fixtures));
            let mut conn = rpc.connect().await.expect("connected");
            rpc.upload(&mut conn, 40).await.expect("every byte counted");
            rpc.upload(&mut conn, 0).await.expect("an empty upload");
        }
    }
}
