//! wirecall: the `UserService` fixture of `wirecall-test-support`, a `#[wirecall::service]` trait.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirecall::{Channel, Codec, RunningServer, Server};

use super::{fan_out, BenchResult, Counter, Rpc};
use crate::measure::Latencies;
use crate::model::{big_request_users, fanly, Case, Fixtures, RECORD_LEN};

// The benchmark's service is the shared `UserService` fixture: `get_dictionary`, `get_user`
// and `get` are the 0-, 1-, 10- and 100-object cases, `bulk` is W5, `record`/`recorded` are W6.
pub use wirecall_test_support::UserServiceClient;
use wirecall_test_support::{UserServiceServer, Users};

/// Starts a server on an ephemeral loopback port; every codec is allowed and the client picks.
pub async fn serve(recorded: Counter) -> BenchResult<RunningServer> {
    Ok(Server::builder()
        .serve(UserServiceServer::new(Users::counting_into(recorded)))
        .bind("127.0.0.1:0")
        .await?)
}

/// A wirecall client offering exactly one codec.
#[derive(Clone)]
pub struct WirecallRpc {
    addr: SocketAddr,
    codec: Codec,
    fixtures: Arc<Fixtures>,
}

impl WirecallRpc {
    /// A client of the server at `addr`.
    pub fn new(addr: SocketAddr, codec: Codec, fixtures: Arc<Fixtures>) -> Self {
        Self {
            addr,
            codec,
            fixtures,
        }
    }
}

impl Rpc for WirecallRpc {
    type Conn = UserServiceClient;

    async fn connect(&self) -> BenchResult<UserServiceClient> {
        let channel = Channel::builder()
            .codec(self.codec)
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
                    let mut sent = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        tick.tick().await;
                        conn.get(users.clone()).await?;
                        sent += 1;
                    }
                    Ok(sent)
                })
            })
        });
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
}
