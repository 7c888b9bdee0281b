//! tarpc 0.38: the same service as a `#[tarpc::service]` trait over tarpc's serde TCP
//! transport, served as tarpc's README does (`BaseChannel::with_defaults`, `execute`, one
//! spawned task per response).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use futures::{future, StreamExt};
use tarpc::server::{BaseChannel, Channel};
use tarpc::{client, context, serde_transport};
use tokio_serde::formats::{Bincode, MessagePack};

use super::{fan_out, BenchResult, Counter, Rpc};
use crate::cell::TarpcFormat;
use crate::measure::Latencies;
use crate::model::{fanly, Case, Fixtures, UserModel, RECORD_LEN};

/// The benchmark's service, method for method as in `super::wirecall`. tarpc has no one-way
/// call: `record` waits for its (empty) reply, and W6 is not run for tarpc.
#[tarpc::service]
pub trait UserService {
    /// A small dictionary, no arguments (the 0-object case).
    async fn get_dictionary() -> HashMap<String, String>;
    /// Echoes a user back (the 1-object case).
    async fn get_user(user: UserModel) -> UserModel;
    /// Accepts a list of users (the 10- and 100-object cases).
    async fn get(users: Vec<UserModel>) -> bool;
    /// Returns the length of a bulk payload (W5).
    async fn bulk(data: Bytes) -> u32;
    /// Counts a message.
    async fn record(entry: Vec<u8>);
    /// The messages counted so far.
    async fn recorded() -> u64;
}

#[derive(Clone)]
struct Users {
    recorded: Counter,
}

impl UserService for Users {
    async fn get_dictionary(self, _: context::Context) -> HashMap<String, String> {
        HashMap::from([("key".to_owned(), "value".to_owned())])
    }

    async fn get_user(self, _: context::Context, user: UserModel) -> UserModel {
        user
    }

    async fn get(self, _: context::Context, users: Vec<UserModel>) -> bool {
        !users.is_empty()
    }

    async fn bulk(self, _: context::Context, data: Bytes) -> u32 {
        data.len() as u32
    }

    async fn record(self, _: context::Context, _entry: Vec<u8>) {
        self.recorded.fetch_add(1, Ordering::Relaxed);
    }

    async fn recorded(self, _: context::Context) -> u64 {
        self.recorded.load(Ordering::Relaxed)
    }
}

// The listener's item types differ per format, so the serving loop is written once here and
// instantiated for each. Unlike the README, connections are not limited per IP (every client
// here is 127.0.0.1) and each is served on its own task instead of `buffer_unordered(10)`.
// TCP_NODELAY is set as wirecall and the raw floor set it.
macro_rules! serve_with {
    ($format:expr, $recorded:expr) => {{
        let incoming = serde_transport::tcp::listen("127.0.0.1:0", $format).await?;
        let addr = incoming.local_addr();
        let users = Users {
            recorded: $recorded,
        };
        tokio::spawn(
            incoming
                .filter_map(|accepted| future::ready(accepted.ok()))
                .for_each(move |transport| {
                    let _ = transport.get_ref().set_nodelay(true);
                    let channel = BaseChannel::with_defaults(transport);
                    tokio::spawn(channel.execute(users.clone().serve()).for_each(
                        |response| async move {
                            tokio::spawn(response);
                        },
                    ));
                    future::ready(())
                }),
        );
        addr
    }};
}

/// Starts a server on an ephemeral loopback port with the transport format `format`.
pub async fn serve(format: TarpcFormat, recorded: Counter) -> BenchResult<SocketAddr> {
    Ok(match format {
        TarpcFormat::Bincode => serve_with!(Bincode::default, recorded),
        TarpcFormat::MessagePack => serve_with!(MessagePack::default, recorded),
    })
}

/// A tarpc client with one transport format.
#[derive(Clone)]
pub struct TarpcRpc {
    addr: SocketAddr,
    format: TarpcFormat,
    fixtures: Arc<Fixtures>,
}

impl TarpcRpc {
    /// A client of the server at `addr`.
    pub fn new(addr: SocketAddr, format: TarpcFormat, fixtures: Arc<Fixtures>) -> Self {
        Self {
            addr,
            format,
            fixtures,
        }
    }
}

impl Rpc for TarpcRpc {
    type Conn = UserServiceClient;

    async fn connect(&self) -> BenchResult<UserServiceClient> {
        let config = client::Config::default();
        Ok(match self.format {
            TarpcFormat::Bincode => {
                let transport = serde_transport::tcp::connect(self.addr, Bincode::default).await?;
                transport.get_ref().set_nodelay(true)?;
                UserServiceClient::new(config, transport).spawn()
            }
            TarpcFormat::MessagePack => {
                let transport =
                    serde_transport::tcp::connect(self.addr, MessagePack::default).await?;
                transport.get_ref().set_nodelay(true)?;
                UserServiceClient::new(config, transport).spawn()
            }
        })
    }

    async fn call(&self, conn: &mut UserServiceClient, case: Case) -> BenchResult<()> {
        let ctx = context::current();
        match case {
            Case::Dictionary => {
                conn.get_dictionary(ctx).await?;
            }
            Case::User => {
                conn.get_user(ctx, fanly()).await?;
            }
            Case::Users10 => {
                conn.get(ctx, self.fixtures.users10.clone()).await?;
            }
            Case::Users100 => {
                conn.get(ctx, self.fixtures.users100.clone()).await?;
            }
            Case::Bulk => {
                conn.bulk(ctx, self.fixtures.bulk.clone()).await?;
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
            conn.record(context::current(), vec![0; RECORD_LEN]).await?;
        }
        Ok(())
    }

    async fn server_count(&self, conn: &mut UserServiceClient) -> BenchResult<u64> {
        Ok(conn.recorded(context::current()).await?)
    }
}
