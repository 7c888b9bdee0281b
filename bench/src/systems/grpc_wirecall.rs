//! grpc-wirecall: tonic's client calling the wirecall benchmark server through its gRPC door
//! (`ServerBuilder::grpc`, the `grpc` feature), so the same client measures tonic's server and
//! wirecall's door.
//!
//! The client is the tonic system's: the same tonic version, one `Channel` per connection
//! from the same `Endpoint` (`tcp_nodelay`, defaults otherwise), cloned by the tasks that
//! share it. There is no generated code: each call does what tonic-prost-build's generated
//! client does (`ready`, a `GrpcMethod` extension, `Grpc::unary` and its siblings with a
//! `ProstCodec`), with the messages of `wirecall proto`'s export for `UserService` and
//! `ItemFeed` written out below, as a gRPC user would get them from protoc.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::{Stream, StreamExt as _, TryStreamExt as _};
use tonic::client::Grpc;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tonic::{GrpcMethod, Request};
use tonic_prost::ProstCodec;

use super::{
    calls_beside, check_received, fan_out, read_streams, BenchResult, BesideStream, Rpc, Stamps,
};
use crate::measure::Latencies;
use crate::model::{fanly, upload_chunks, Case, Chunk, Fixtures, StreamItem, UserModel};

// The export's messages. Field numbers are the export's: arguments 1..n in declaration order,
// a reply's `value = 1`, an upload message's `value = 1`. `UserModel`, `StreamItem` and
// `Chunk` are the benchmark's own structs, whose prost tags are the export's.

/// `UserService_get_dictionary_Args` and `UserService_recorded_Args`.
#[derive(Clone, PartialEq, prost::Message)]
struct NoArgs {}

/// `UserService_get_dictionary_Reply`.
#[derive(Clone, PartialEq, prost::Message)]
struct DictionaryReply {
    #[prost(map = "string, string", tag = "1")]
    value: HashMap<String, String>,
}

/// `UserService_get_user_Args`.
#[derive(Clone, PartialEq, prost::Message)]
struct GetUserArgs {
    #[prost(message, optional, tag = "1")]
    user: Option<UserModel>,
}

/// `UserService_get_user_Reply`.
#[derive(Clone, PartialEq, prost::Message)]
struct UserReply {
    #[prost(message, optional, tag = "1")]
    value: Option<UserModel>,
}

/// `UserService_get_Args`.
#[derive(Clone, PartialEq, prost::Message)]
struct GetArgs {
    #[prost(message, repeated, tag = "1")]
    users: Vec<UserModel>,
}

/// `UserService_get_Reply`.
#[derive(Clone, PartialEq, prost::Message)]
struct BoolReply {
    #[prost(bool, tag = "1")]
    value: bool,
}

/// `UserService_bulk_Args`: `Bytes`, as tonic's `BulkRequest`, so no call copies its payload
/// before encoding.
#[derive(Clone, PartialEq, prost::Message)]
struct BulkArgs {
    #[prost(bytes = "bytes", tag = "1")]
    data: Bytes,
}

/// `UserService_bulk_Reply`.
#[derive(Clone, PartialEq, prost::Message)]
struct U32Reply {
    #[prost(uint32, tag = "1")]
    value: u32,
}

/// `UserService_recorded_Reply` and `ItemFeed_upload_Reply`.
#[derive(Clone, PartialEq, prost::Message)]
struct U64Reply {
    #[prost(uint64, tag = "1")]
    value: u64,
}

/// `ItemFeed_items_Args`.
#[derive(Clone, PartialEq, prost::Message)]
struct ItemsArgs {
    #[prost(uint64, tag = "1")]
    count: u64,
}

/// `ItemFeed_items_Reply`: one message of the server stream.
#[derive(Clone, prost::Message)]
struct ItemsReply {
    #[prost(message, optional, tag = "1")]
    value: Option<StreamItem>,
}

/// `ItemFeed_upload_Upload`: one message of the upload (the method has no other arguments,
/// so no message carries any).
#[derive(Clone, prost::Message)]
struct UploadMessage {
    #[prost(message, optional, tag = "1")]
    value: Option<Chunk>,
}

/// A method of the door: the names tonic's generated clients put in `GrpcMethod`, and the
/// request path.
struct DoorMethod {
    service: &'static str,
    method: &'static str,
    path: &'static str,
}

/// The door names each service `wirecall.services.{Service}` and each method as in the Rust
/// trait.
macro_rules! door_method {
    ($service:literal, $method:literal) => {
        DoorMethod {
            service: concat!("wirecall.services.", $service),
            method: $method,
            path: concat!("/wirecall.services.", $service, "/", $method),
        }
    };
}

const GET_DICTIONARY: DoorMethod = door_method!("UserService", "get_dictionary");
const GET_USER: DoorMethod = door_method!("UserService", "get_user");
const GET: DoorMethod = door_method!("UserService", "get");
const BULK: DoorMethod = door_method!("UserService", "bulk");
const RECORDED: DoorMethod = door_method!("UserService", "recorded");
const ITEMS: DoorMethod = door_method!("ItemFeed", "items");
const UPLOAD: DoorMethod = door_method!("ItemFeed", "upload");

impl DoorMethod {
    /// `message` as a request of this method, with the extension generated clients add.
    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request
            .extensions_mut()
            .insert(GrpcMethod::new(self.service, self.method));
        request
    }

    fn path(&self) -> PathAndQuery {
        PathAndQuery::from_static(self.path)
    }
}

/// One connection: tonic's gRPC client over one `Channel`, cloned by the tasks that share it.
pub type DoorConn = Grpc<Channel>;

/// Makes one unary call of `method` on `conn`.
async fn unary<Args, Reply>(
    conn: &mut DoorConn,
    method: &DoorMethod,
    args: Args,
) -> BenchResult<Reply>
where
    Args: prost::Message + Send + Sync + 'static,
    Reply: prost::Message + Default + Send + Sync + 'static,
{
    conn.ready().await?;
    let reply = conn
        .unary(method.request(args), method.path(), ProstCodec::default())
        .await?;
    Ok(reply.into_inner())
}

async fn open_stamps(mut conn: DoorConn, count: u64) -> BenchResult<Stamps> {
    conn.ready().await?;
    let items = conn
        .server_streaming(
            ITEMS.request(ItemsArgs { count }),
            ITEMS.path(),
            ProstCodec::<ItemsArgs, ItemsReply>::default(),
        )
        .await?
        .into_inner();
    Ok(items
        .map_err(Into::into)
        .and_then(|reply| async move {
            reply
                .value
                .map(|item| item.sent_at_ns)
                .ok_or_else(|| "a stream message without its item".into())
        })
        .boxed())
}

/// The upload's messages: each chunk in its `ItemFeed_upload_Upload`.
fn upload_messages(chunks: u64) -> impl Stream<Item = UploadMessage> + Send + 'static {
    futures::stream::iter(upload_chunks(chunks).map(|chunk| UploadMessage { value: Some(chunk) }))
}

/// tonic's client of the gRPC door: each connection is one `Channel`.
#[derive(Clone)]
pub struct GrpcWirecallRpc {
    endpoint: Endpoint,
    fixtures: Arc<Fixtures>,
}

impl GrpcWirecallRpc {
    /// A client of the server at `addr`, configured as the tonic system's.
    pub fn new(addr: SocketAddr, fixtures: Arc<Fixtures>) -> BenchResult<Self> {
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))?.tcp_nodelay(true);
        Ok(Self { endpoint, fixtures })
    }
}

impl Rpc for GrpcWirecallRpc {
    type Conn = DoorConn;

    async fn connect(&self) -> BenchResult<DoorConn> {
        // Dialled at once, as the tonic system does, so that W4's connections are open
        // before its timed phase.
        Ok(Grpc::new(self.endpoint.connect().await?))
    }

    async fn call(&self, conn: &mut DoorConn, case: Case) -> BenchResult<()> {
        match case {
            Case::Dictionary => {
                unary::<_, DictionaryReply>(conn, &GET_DICTIONARY, NoArgs {}).await?;
            }
            Case::User => {
                let args = GetUserArgs {
                    user: Some(fanly()),
                };
                unary::<_, UserReply>(conn, &GET_USER, args).await?;
            }
            Case::Users10 => {
                let args = GetArgs {
                    users: self.fixtures.users10.clone(),
                };
                unary::<_, BoolReply>(conn, &GET, args).await?;
            }
            Case::Users100 => {
                let args = GetArgs {
                    users: self.fixtures.users100.clone(),
                };
                unary::<_, BoolReply>(conn, &GET, args).await?;
            }
            Case::Bulk => {
                let args = BulkArgs {
                    data: self.fixtures.bulk.clone(),
                };
                unary::<_, U32Reply>(conn, &BULK, args).await?;
            }
        }
        Ok(())
    }

    async fn pipelined(
        &self,
        conn: &mut DoorConn,
        case: Case,
        in_flight: usize,
        calls: usize,
    ) -> BenchResult<Latencies> {
        fan_out(self, conn, case, in_flight, calls).await
    }

    async fn send_one_way(&self, _: &mut DoorConn, _: usize) -> BenchResult<()> {
        Err("gRPC has no one-way call".into())
    }

    async fn server_count(&self, conn: &mut DoorConn) -> BenchResult<u64> {
        let count: U64Reply = unary(conn, &RECORDED, NoArgs {}).await?;
        Ok(count.value)
    }

    async fn consume_streams(
        &self,
        conn: &mut DoorConn,
        streams: usize,
        items_each: u64,
    ) -> BenchResult<Latencies> {
        read_streams(streams, items_each, || {
            open_stamps(conn.clone(), items_each)
        })
        .await
    }

    async fn calls_beside_stream(
        &self,
        conn: &mut DoorConn,
        calls: usize,
        beside_stream: bool,
    ) -> BenchResult<BesideStream> {
        let stream = if beside_stream {
            Some(open_stamps(conn.clone(), u64::MAX).await?)
        } else {
            None
        };
        calls_beside(self, conn, calls, stream).await
    }

    async fn upload(&self, conn: &mut DoorConn, chunks: u64) -> BenchResult<()> {
        conn.ready().await?;
        let received = conn
            .client_streaming(
                UPLOAD.request(upload_messages(chunks)),
                UPLOAD.path(),
                ProstCodec::<UploadMessage, U64Reply>::default(),
            )
            .await?
            .into_inner()
            .value;
        check_received(received, chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::wirecall::{serve, GrpcDoor};
    use crate::systems::Counter;

    async fn client_of(door: GrpcDoor) -> (wirecall::RunningServer, GrpcWirecallRpc) {
        let server = serve(Counter::default(), true, door).await.expect("bound");
        let rpc = GrpcWirecallRpc::new(server.local_addr(), Arc::new(Fixtures::new()))
            .expect("an endpoint");
        (server, rpc)
    }

    #[tokio::test]
    async fn every_call_of_the_cells_answers_through_the_door() {
        let (_server, rpc) = client_of(GrpcDoor::Open).await;
        let mut conn = rpc.connect().await.expect("connected");
        for case in [
            Case::Dictionary,
            Case::User,
            Case::Users10,
            Case::Users100,
            Case::Bulk,
        ] {
            rpc.call(&mut conn, case).await.expect("answered");
        }
        let user: UserReply = unary(
            &mut conn,
            &GET_USER,
            GetUserArgs {
                user: Some(fanly()),
            },
        )
        .await
        .expect("answered");
        assert_eq!(user.value, Some(fanly()));
        let dictionary: DictionaryReply = unary(&mut conn, &GET_DICTIONARY, NoArgs {})
            .await
            .expect("answered");
        assert_eq!(
            dictionary.value.get("key").map(String::as_str),
            Some("value")
        );
        assert_eq!(rpc.server_count(&mut conn).await.expect("counted"), 0);
        let latencies = rpc
            .pipelined(&mut conn, Case::User, 8, 64)
            .await
            .expect("pipelined");
        assert_eq!(latencies.len(), 64);
    }

    #[tokio::test]
    async fn streams_and_uploads_run_to_their_ends_through_the_door() {
        let (_server, rpc) = client_of(GrpcDoor::Open).await;
        let mut conn = rpc.connect().await.expect("connected");
        let items = rpc
            .consume_streams(&mut conn, 3, 50)
            .await
            .expect("every item");
        assert_eq!(items.len(), 150);
        let beside = rpc
            .calls_beside_stream(&mut conn, 20, true)
            .await
            .expect("calls beside the stream");
        assert_eq!(beside.latencies.len(), 20);
        // 40 chunks of 64 KiB are more than the door's 1 MiB stream window.
        rpc.upload(&mut conn, 40).await.expect("every byte counted");
        rpc.upload(&mut conn, 0).await.expect("an empty upload");
    }

    #[tokio::test]
    async fn the_plain_wirecall_server_keeps_the_door_closed() {
        let (_server, rpc) = client_of(GrpcDoor::Closed).await;
        let called = async {
            let mut conn = rpc.connect().await?;
            rpc.call(&mut conn, Case::User).await
        };
        assert!(called.await.is_err(), "a gRPC call through a closed door");
    }
}
