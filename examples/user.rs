//! The surging-style `UserService`, end to end: a server and a client in one process, a tour of
//! every method, then the seed's micro-benchmark (10,000 sequential calls carrying 0, 1, 10
//! and 100 `UserModel`s) for each codec.
//!
//! ```text
//! cargo run --example user                         # tour + benchmark, all codecs
//! cargo run --release --example user -- --calls 50000 --codec msgpack
//! cargo run --example user -- --serve 127.0.0.1:7000     # server only, until Ctrl-C
//! cargo run --example user -- --connect 127.0.0.1:7000   # client only
//! ```

use std::collections::HashMap;
use std::time::{Duration, Instant};

use wirecall::{Channel, Codec, Server};

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

/// The server-side implementation.
struct Users;

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

const HELP: &str = "\
usage: cargo run --example user -- [OPTIONS]

Runs a UserService server and client in one process, calls every method, then times
N sequential calls carrying 0, 1, 10 and 100 UserModel objects for each codec.

options:
  --calls N          sequential calls per benchmark case (default 10000)
  --codec NAME       only this codec: json, msgpack or protobuf (default: all three)
  --serve ADDR       run only the server on ADDR until Ctrl-C or SIGTERM
  --connect ADDR     run only the client, against a server at ADDR
  -h, --help         print this help
";

struct Options {
    calls: usize,
    codecs: Vec<Codec>,
    serve: Option<String>,
    connect: Option<String>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        calls: 10_000,
        codecs: vec![Codec::Json, Codec::MessagePack, Codec::Protobuf],
        serve: None,
        connect: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => {
                print!("{HELP}");
                std::process::exit(0);
            }
            "--calls" => {
                options.calls = value("--calls")?
                    .parse()
                    .map_err(|e| format!("--calls: {e}"))?
            }
            "--codec" => {
                let codec = value("--codec")?.parse().map_err(|e| format!("{e}"))?;
                options.codecs = vec![codec];
            }
            "--serve" => options.serve = Some(value("--serve")?),
            "--connect" => options.connect = Some(value("--connect")?),
            other => return Err(format!("unknown option {other:?}; see --help")),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message}\n\n{HELP}");
            std::process::exit(2);
        }
    };

    if let Some(addr) = &options.serve {
        let server = Server::builder()
            .serve(UserServiceServer::new(Users))
            .bind(addr.as_str())
            .await?;
        println!(
            "serving UserService on {} (Ctrl-C to stop)",
            server.local_addr()
        );
        wait_for_termination().await;
        server.shutdown_within(Duration::from_secs(5)).await;
        return Ok(());
    }

    // Without --connect, start our own server on a free port.
    let (server, addr) = match &options.connect {
        Some(addr) => (None, addr.clone()),
        None => {
            let server = Server::builder()
                .serve(UserServiceServer::new(Users))
                .bind("127.0.0.1:0")
                .await?;
            let addr = server.local_addr().to_string();
            (Some(server), addr)
        }
    };

    tour(&addr, options.codecs[0]).await?;
    benchmark(&addr, &options.codecs, options.calls).await?;

    if let Some(server) = server {
        server.shutdown().await;
    }
    Ok(())
}

/// Calls every method once and prints what comes back.
async fn tour(addr: &str, codec: Codec) -> Result<(), wirecall::Error> {
    let channel = Channel::builder().codec(codec).connect(addr).await?;
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
    Ok(())
}

/// The seed's codec comparison: sequential calls, one at a time, per codec and payload size.
async fn benchmark(addr: &str, codecs: &[Codec], calls: usize) -> Result<(), wirecall::Error> {
    println!();
    println!("{calls} sequential calls per case (one connection, one call in flight)");
    println!("| codec    | case        |   total ms | mean us/call |");
    println!("|----------|-------------|-----------:|-------------:|");
    for &codec in codecs {
        let channel = Channel::builder().codec(codec).connect(addr).await?;
        let client = UserServiceClient::new(channel);
        // Warm up the connection, allocator and caches before timing.
        for _ in 0..calls.min(1_000) {
            client.get_user(fanly()).await?;
        }
        let ten = vec![fanly(); 10];
        let hundred = vec![fanly(); 100];
        let cases: [(&str, Duration); 4] = [
            ("0 objects", time(calls, || client.get_dictionary()).await?),
            ("1 object", time(calls, || client.get_user(fanly())).await?),
            ("10 objects", time(calls, || client.get(ten.clone())).await?),
            (
                "100 objects",
                time(calls, || client.get(hundred.clone())).await?,
            ),
        ];
        for (case, elapsed) in cases {
            println!(
                "| {:<8} | {:<11} | {:>10.1} | {:>12.1} |",
                codec.name(),
                case,
                elapsed.as_secs_f64() * 1e3,
                elapsed.as_secs_f64() * 1e6 / calls.max(1) as f64
            );
        }
    }
    Ok(())
}

async fn time<F, Fut, T>(calls: usize, mut call: F) -> Result<Duration, wirecall::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, wirecall::Error>>,
{
    let start = Instant::now();
    for _ in 0..calls {
        call().await?;
    }
    Ok(start.elapsed())
}

async fn wait_for_termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
