//! The gateway: wirecall's HTTP/JSON gateway (`wirecall-gateway`, at its defaults) in front of
//! the wirecall server, both in the server process, the gateway reaching the server over
//! loopback TCP on the JSON codec as a gateway deployed beside a server does. The client is
//! hyper's HTTP/1.1 client: keep-alive connections, each call a `POST /UserService/{method}`
//! with a JSON body of named arguments and `content-type: application/json`.
//!
//! HTTP/1.1 carries one call at a time on a connection, so W2's `in_flight` calls on "one
//! connection" are `in_flight` keep-alive connections, one call outstanding on each, as an
//! HTTP client's connection pool would open them (opened before the timed calls, as W4's
//! connections are).

use std::net::SocketAddr;
use std::sync::Arc;

use ::wirecall::{Channel, Codec, RunningServer};
use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use wirecall_gateway::Gateway;

use super::{wirecall, BenchResult, BoxError, Counter, Rpc};
use crate::measure::Latencies;
use crate::model::{fanly, Case, Fixtures};

/// Starts the wirecall server and the gateway in front of it, both on ephemeral loopback
/// ports; returns the server (which stops when dropped) and the gateway's address. The
/// gateway runs on a task of its own for as long as the runtime does.
pub async fn serve(recorded: Counter) -> BenchResult<(RunningServer, SocketAddr)> {
    let server = wirecall::serve(recorded, false, wirecall::GrpcDoor::Closed).await?;
    let channel = Channel::builder()
        .codec(Codec::Json)
        .connect(server.local_addr())
        .await?;
    let gateway = Gateway::builder().build(channel).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(err) = gateway.serve(listener).await {
            eprintln!("error: the gateway stopped: {err}");
        }
    });
    Ok((server, addr))
}

/// The JSON body of one call of each case.
#[derive(Debug)]
struct Calls {
    dictionary: Bytes,
    user: Bytes,
    users10: Bytes,
    users100: Bytes,
}

/// An HTTP/1.1 client of the gateway at `addr`.
#[derive(Clone, Debug)]
pub struct GatewayRpc {
    addr: SocketAddr,
    calls: Arc<Calls>,
}

/// One keep-alive HTTP/1.1 connection to the gateway, and for W2 a pool of `in_flight` more,
/// opened and warmed before the calls are timed.
pub struct GatewayConn {
    sender: SendRequest<Full<Bytes>>,
    pool: Vec<GatewayConn>,
}

impl GatewayRpc {
    /// A client of the gateway at `addr`, its bodies encoded once here.
    pub fn new(addr: SocketAddr, fixtures: &Fixtures) -> BenchResult<Self> {
        let body =
            |value: serde_json::Value| Ok::<_, serde_json::Error>(Bytes::from(value.to_string()));
        let calls = Calls {
            dictionary: body(serde_json::json!({}))?,
            user: body(serde_json::json!({ "user": fanly() }))?,
            users10: body(serde_json::json!({ "users": fixtures.users10 }))?,
            users100: body(serde_json::json!({ "users": fixtures.users100 }))?,
        };
        Ok(Self {
            addr,
            calls: Arc::new(calls),
        })
    }

    fn request(&self, case: Case) -> BenchResult<Request<Full<Bytes>>> {
        let (method, body) = match case {
            Case::Dictionary => ("get_dictionary", &self.calls.dictionary),
            Case::User => ("get_user", &self.calls.user),
            Case::Users10 => ("get", &self.calls.users10),
            Case::Users100 => ("get", &self.calls.users100),
            Case::Bulk => return Err("the gateway system does not run W5".into()),
        };
        post(self.addr, method, body.clone())
    }
}

/// `POST /UserService/{method}` with a JSON body, as any HTTP client sends it.
pub fn post(addr: SocketAddr, method: &str, body: Bytes) -> BenchResult<Request<Full<Bytes>>> {
    Ok(Request::builder()
        .method(Method::POST)
        .uri(format!("/UserService/{method}"))
        .header(HOST, addr.to_string())
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(body))?)
}

/// Opens one HTTP/1.1 connection to `addr`; its driver runs on a task until it closes.
pub async fn connect(addr: SocketAddr) -> BenchResult<GatewayConn> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        // A connection that breaks fails its call, which reports it.
        let _ = connection.await;
    });
    Ok(GatewayConn {
        sender,
        pool: Vec::new(),
    })
}

/// Sends `request` on `conn` and reads the whole answer, which must be a 200.
pub async fn send(conn: &mut GatewayConn, request: Request<Full<Bytes>>) -> BenchResult<Bytes> {
    conn.sender.ready().await?;
    let response = conn.sender.send_request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    if status != StatusCode::OK {
        return Err(format!(
            "the gateway answered {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into());
    }
    Ok(body)
}

impl Rpc for GatewayRpc {
    type Conn = GatewayConn;

    async fn connect(&self) -> BenchResult<GatewayConn> {
        connect(self.addr).await
    }

    async fn call(&self, conn: &mut GatewayConn, case: Case) -> BenchResult<()> {
        send(conn, self.request(case)?).await?;
        Ok(())
    }

    async fn open_for_pipelining(
        &self,
        conn: &mut GatewayConn,
        in_flight: usize,
        fan_out: usize,
    ) -> BenchResult<()> {
        let missing = in_flight.saturating_sub(conn.pool.len());
        let opened: Vec<GatewayConn> = futures::stream::iter(0..missing)
            .map(|_| async {
                let mut conn = self.connect().await?;
                self.call(&mut conn, Case::User).await?;
                Ok::<_, BoxError>(conn)
            })
            .buffer_unordered(fan_out.max(1))
            .try_collect()
            .await?;
        conn.pool.extend(opened);
        Ok(())
    }

    async fn pipelined(
        &self,
        conn: &mut GatewayConn,
        case: Case,
        in_flight: usize,
        calls: usize,
    ) -> BenchResult<Latencies> {
        // One call outstanding on each connection of the pool (`conn` itself stays idle).
        let workers = in_flight.clamp(1, calls.max(1));
        let mut tasks = JoinSet::new();
        for worker in 0..workers {
            let share = calls / workers + usize::from(worker < calls % workers);
            let rpc = self.clone();
            let mut worker_conn = match conn.pool.pop() {
                Some(pooled) => pooled,
                None => self.connect().await?,
            };
            tasks.spawn(async move {
                let mut latencies = Latencies::with_capacity(share);
                for _ in 0..share {
                    let start = std::time::Instant::now();
                    rpc.call(&mut worker_conn, case).await?;
                    latencies.record(start.elapsed());
                }
                Ok::<_, BoxError>((latencies, worker_conn))
            });
        }
        let mut all = Latencies::with_capacity(calls);
        while let Some(joined) = tasks.join_next().await {
            let (latencies, worker_conn) = joined??;
            all.extend(latencies);
            conn.pool.push(worker_conn);
        }
        Ok(all)
    }

    async fn send_one_way(&self, _: &mut GatewayConn, _: usize) -> BenchResult<()> {
        Err("the gateway system does not run W6".into())
    }

    async fn server_count(&self, _: &mut GatewayConn) -> BenchResult<u64> {
        Err("the gateway system does not run W6".into())
    }
}
