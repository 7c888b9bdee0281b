//! The surging-style `UserService`, end to end: a server and a client in one process, a tour of
//! every method, then the seed's micro-benchmark (10,000 sequential calls carrying 0, 1, 10
//! and 100 `UserModel`s) for each codec.
//!
//! ```text
//! cargo run --example user                         # tour + benchmark, all codecs
//! cargo run --release --example user -- --calls 50000 --codec msgpack
//! cargo run --example user -- --serve 127.0.0.1:7000     # server only, until Ctrl-C
//! cargo run --example user -- --serve 127.0.0.1:7000 --tls-cert cert.pem --tls-key key.pem
//! cargo run --example user -- --serve 127.0.0.1:7000 --gateway 127.0.0.1:8080  # + HTTP/JSON
//! cargo run --example user -- --connect 127.0.0.1:7000   # client only
//! cargo run --release --example user -- --tls           # the same over TLS, plus the TLS cost
//! cargo run --example user -- --serve 127.0.0.1:7000 --metrics 127.0.0.1:9000
//! ```
//!
//! `--serve` also answers standard gRPC on the same port (feature `grpc`, which the examples
//! are built with): any gRPC client calls `wirecall.services.UserService`, with the messages of
//! `wirecall proto ADDR`, or discovers them through server reflection.
//!
//! With `--metrics ADDR` the server's metrics (calls by method and outcome, latency, calls in
//! flight, connections, bytes, handshake failures) are served as a Prometheus page at
//! `http://ADDR/metrics`.
//!
//! With `--tls` the example makes a throw-away CA and a `localhost` certificate at start-up
//! (rcgen), requires a token generated at start-up (printed once), runs the tour and the
//! benchmark over TLS, then times the same sequential and 64 KiB bulk workloads over plain TCP
//! and TLS in the same run and prints the ratios.
//!
//! This file is the service and the tour; the timing code is in `user/bench.rs`. For the
//! smallest program to copy, see `hello.rs`.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use wirecall::{CallContext, Channel, ChannelBuilder, Codec, Server, ServerTlsConfig, Streaming};

#[path = "user/bench.rs"]
mod bench;

/// A user, as in the surging benchmark.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct UserModel {
    /// The user's id.
    pub user_id: i32,
    /// The user's name.
    pub name: String,
    /// The user's age in years.
    pub age: i32,
}

/// The application error of `find`.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct NotFound {
    /// The id that was looked up.
    pub user_id: i32,
    /// Why nothing was found.
    pub reason: String,
}

/// Users, by id and by name.
#[wirecall::service]
pub trait UserService {
    /// The id of the user called `name`.
    async fn get_user_id(&self, name: String) -> i32;
    /// Echoes a user back (the "1 object" benchmark case).
    async fn get_user(&self, user: UserModel) -> UserModel;
    /// Accepts a list of users (the "10 / 100 objects" cases).
    async fn get(&self, users: Vec<UserModel>) -> bool;
    /// A small dictionary, no arguments (the "0 objects" case).
    async fn get_dictionary(&self) -> HashMap<String, String>;
    /// Finds a user by id; unknown ids are an application error.
    async fn find(&self, user_id: i32) -> Result<UserModel, NotFound>;
}

/// Users as a stream: the server sends them one by one, as the client reads.
#[wirecall::service]
pub trait UserFeed {
    /// The first `count` users, one item each (a server stream).
    async fn list_users(&self, count: u32) -> Streaming<UserModel>;
    /// Counts the users uploaded (a client stream); a user id of 0 is refused at once,
    /// without waiting for the rest of the upload.
    async fn import_users(&self, users: Streaming<UserModel>) -> Result<u32, NotFound>;
    /// Each uploaded user back, its name prefixed, as it comes (a bidirectional stream).
    async fn rename(&self, prefix: String, users: Streaming<UserModel>) -> Streaming<UserModel>;
}

/// The server-side implementation.
pub struct Users;

impl UserFeed for Users {
    async fn list_users(&self, count: u32) -> Streaming<UserModel> {
        // Sent with the stream's end (protocol version 4): a trailer.
        CallContext::with_current(|call| call.set_trailer("listed", count.to_string()).ok());
        Streaming::from_iter((1..=count as i32).map(|user_id| UserModel {
            user_id,
            name: format!("user{user_id}"),
            age: 18 + user_id % 50,
        }))
    }

    async fn import_users(&self, mut users: Streaming<UserModel>) -> Result<u32, NotFound> {
        let mut imported = 0;
        while let Some(user) = users.next().await {
            if user.user_id == 0 {
                return Err(NotFound {
                    user_id: 0,
                    reason: "user id 0 is reserved".to_owned(),
                });
            }
            imported += 1;
        }
        Ok(imported)
    }

    async fn rename(&self, prefix: String, users: Streaming<UserModel>) -> Streaming<UserModel> {
        Streaming::new(users.map(move |user| UserModel {
            name: format!("{prefix}{}", user.name),
            ..user
        }))
    }
}

impl UserService for Users {
    async fn get_user_id(&self, name: String) -> i32 {
        name.len() as i32
    }

    async fn get_user(&self, user: UserModel) -> UserModel {
        user
    }

    async fn get(&self, users: Vec<UserModel>) -> bool {
        !users.is_empty()
    }

    async fn get_dictionary(&self) -> HashMap<String, String> {
        HashMap::from([("key".to_owned(), "value".to_owned())])
    }

    async fn find(&self, user_id: i32) -> Result<UserModel, NotFound> {
        match user_id {
            1 => Ok(fanly()),
            _ => Err(NotFound {
                user_id,
                reason: "no such user".to_owned(),
            }),
        }
    }
}

fn fanly() -> UserModel {
    UserModel {
        user_id: 1,
        name: "fanly".to_owned(),
        age: 18,
    }
}

/// Runs a UserService server and client in one process, calls every method, then times N
/// sequential calls carrying 0, 1, 10 and 100 UserModel objects for each codec.
#[derive(clap::Parser)]
#[command(
    name = "user",
    override_usage = "cargo run --example user -- [OPTIONS]",
    after_help = "examples:
  cargo run --example user                              # tour + benchmark, all codecs
  cargo run --release --example user -- --calls 50000 --codec msgpack
  cargo run --example user -- --serve 127.0.0.1:7000    # server only, until Ctrl-C
  cargo run --example user -- --serve 127.0.0.1:7000 --tls-cert cert.pem --tls-key key.pem
  cargo run --example user -- --serve 127.0.0.1:7000 --gateway 127.0.0.1:8080
  cargo run --example user -- --connect 127.0.0.1:7000  # client only
  cargo run --release --example user -- --tls           # over TLS, plus the TLS cost
  cargo run --example user -- --serve 127.0.0.1:7000 --metrics 127.0.0.1:9000"
)]
struct Options {
    /// Sequential calls per benchmark case
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    calls: usize,
    /// Only this codec: json, msgpack or protobuf [default: all three]
    #[arg(long, value_name = "NAME")]
    codec: Option<Codec>,
    /// Run only the server on ADDR until Ctrl-C or SIGTERM
    #[arg(long, value_name = "ADDR")]
    serve: Option<String>,
    /// Run only the client, against a server at ADDR
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// With --serve: require this token; with --connect: present it
    #[arg(long, value_name = "SECRET")]
    token: Option<String>,
    /// With --serve: serve TLS with this certificate chain (PEM, leaf first); needs --tls-key
    #[arg(long, value_name = "FILE", requires_all = ["serve", "tls_key"])]
    tls_cert: Option<std::path::PathBuf>,
    /// With --serve: the private key (PEM) of --tls-cert
    #[arg(long, value_name = "FILE", requires_all = ["serve", "tls_cert"])]
    tls_key: Option<std::path::PathBuf>,
    /// With --serve: also serve an HTTP/JSON gateway on ADDR (POST /UserService/get_user,
    /// OpenAPI at /openapi.json, an explorer page at /)
    #[arg(
        long,
        value_name = "ADDR",
        requires = "serve",
        conflicts_with = "tls_cert"
    )]
    gateway: Option<String>,
    /// In-process only: TLS with a certificate made at start-up and a token generated at
    /// start-up, then the TLS cost (plain TCP vs TLS, same run)
    #[arg(long, conflicts_with_all = ["serve", "connect"])]
    tls: bool,
    /// Serve the server's metrics as a Prometheus scrape page at http://ADDR/metrics
    #[arg(long, value_name = "ADDR", conflicts_with = "connect")]
    metrics: Option<std::net::SocketAddr>,
}

impl Options {
    /// The codecs to benchmark, the first one also used for the tour.
    fn codecs(&self) -> Vec<Codec> {
        match self.codec {
            Some(codec) => vec![codec],
            None => vec![Codec::Json, Codec::MessagePack, Codec::Protobuf],
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = <Options as clap::Parser>::parse();

    // Before any server starts: a server registers its metrics when it starts.
    if let Some(addr) = options.metrics {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .install()?;
        println!("metrics on http://{addr}/metrics");
    }

    if options.tls {
        return bench::run_over_tls(&options).await;
    }

    if let Some(addr) = &options.serve {
        let mut builder = Server::builder()
            .serve(UserServiceServer::new(Users))
            .serve(UserFeedServer::new(Users))
            .shutdown_grace_period(Duration::from_secs(5));
        if let Some(token) = &options.token {
            builder = builder.token(token.as_str());
        }
        if let (Some(cert), Some(key)) = (&options.tls_cert, &options.tls_key) {
            let tls = ServerTlsConfig::new(std::fs::read(cert)?, std::fs::read(key)?)?;
            builder = builder.tls(tls);
        }
        let server = builder.bind(addr.as_str()).await?;
        println!(
            "serving UserService and UserFeed on {}, to wirecall and gRPC clients (Ctrl-C to stop)",
            server.local_addr()
        );
        if let Some(gateway_addr) = &options.gateway {
            // The gateway reaches the server like any client: JSON codec, same token.
            let mut channel = Channel::builder().codec(Codec::Json);
            if let Some(token) = &options.token {
                channel = channel.token(token.as_str());
            }
            let channel = channel.connect(server.local_addr()).await?;
            let gateway = wirecall_gateway::Gateway::builder().build(channel).await?;
            let listener = tokio::net::TcpListener::bind(gateway_addr.as_str()).await?;
            println!(
                "serving the HTTP gateway on http://{}",
                listener.local_addr()?
            );
            tokio::spawn(gateway.serve(listener));
        }
        server.run_until_shutdown_signal().await;
        return Ok(());
    }

    // Without --connect, start our own server on a free port.
    let (server, addr) = match &options.connect {
        Some(addr) => (None, addr.clone()),
        None => {
            let server = Server::builder()
                .serve(UserServiceServer::new(Users))
                .serve(UserFeedServer::new(Users))
                .bind("127.0.0.1:0")
                .await?;
            let addr = server.local_addr().to_string();
            (Some(server), addr)
        }
    };

    let client = Channel::builder();
    let client = match &options.token {
        Some(token) => client.token(token.as_str()),
        None => client,
    };
    let codecs = options.codecs();
    tour(&client, &addr, codecs[0]).await?;
    bench::benchmark(&client, &addr, &codecs, options.calls).await?;

    if let Some(server) = server {
        server.shutdown().await;
    }
    Ok(())
}

/// Calls every method once and prints what comes back.
async fn tour(client: &ChannelBuilder, addr: &str, codec: Codec) -> Result<(), wirecall::Error> {
    let channel = client.clone().codec(codec).connect(addr).await?;
    let feed = UserFeedClient::new(channel.clone());
    let client = UserServiceClient::new(channel);
    println!("connected to {addr}, negotiated codec: {}", client.codec());
    println!(
        "get_user_id(\"fanly\") = {}",
        client.get_user_id("fanly".to_owned()).await?
    );
    println!(
        "get_user(fanly)      = {:?}",
        client.get_user(fanly()).await?
    );
    println!(
        "get(10 users)        = {}",
        client.get(vec![fanly(); 10]).await?
    );
    println!(
        "get_dictionary()     = {:?}",
        client.get_dictionary().await?
    );
    println!("find(1)              = {:?}", client.find(1).await?);
    println!("find(42)             = {:?}", client.find(42).await?);
    // A server stream: the users arrive one by one, as this loop reads them.
    let mut users = feed.list_users(3).await?;
    while let Some(user) = users.next().await {
        println!("list_users(3) item   = {:?}", user?);
    }
    let listed = users.trailers().and_then(|trailers| trailers.get("listed"));
    println!(
        "list_users trailer   = listed: {}",
        listed.unwrap_or("none")
    );
    // A client stream: the users go up one by one; one answer comes back.
    let upload = futures::stream::iter([fanly(), fanly()]);
    println!(
        "import_users(2)      = {:?}",
        feed.import_users(upload).await?
    );
    // Both ways at once: each user comes back renamed as it goes up.
    let mut renamed = feed
        .rename("new-".into(), futures::stream::iter([fanly()]))
        .await?;
    while let Some(user) = renamed.next().await {
        println!("rename(1) item       = {:?}", user?);
    }
    Ok(())
}
