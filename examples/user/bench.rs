//! The timing half of the `user` example: the seed's sequential benchmark per codec and
//! payload size, and with `--tls` the cost of TLS against plain TCP in the same run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use wirecall::{Channel, ChannelBuilder, ClientTlsConfig, Codec, Server, ServerTlsConfig};

use super::{fanly, tour, Options, UserFeedServer, UserServiceClient, UserServiceServer, Users};

/// A debug build is several times slower than a release one: say so beside every table.
fn note_the_build() {
    if cfg!(debug_assertions) {
        println!(
            "(a debug build: these timings are several times slower than a release build's; \
             for release timings run `cargo run --release --example user`)"
        );
    }
}

/// Bulk transfer, for the TLS cost measurement.
#[wirecall::service]
pub trait Bulk {
    /// Accepts a payload and returns its length.
    async fn bulk(&self, data: Bytes) -> u32;
}

impl Bulk for Users {
    async fn bulk(&self, data: Bytes) -> u32 {
        data.len() as u32
    }
}

/// The seed's codec comparison: sequential calls, one at a time, per codec and payload size.
pub(crate) async fn benchmark(
    client: &ChannelBuilder,
    addr: &str,
    codecs: &[Codec],
    calls: usize,
) -> Result<(), wirecall::Error> {
    println!();
    println!("{calls} sequential calls per case (one connection, one call in flight)");
    note_the_build();
    println!("| codec    | case        |   total ms | mean us/call |");
    println!("|----------|-------------|-----------:|-------------:|");
    for &codec in codecs {
        let channel = client.clone().codec(codec).connect(addr).await?;
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

/// `--tls`: a certificate and a token made at start-up, the tour and the benchmark over TLS,
/// then plain TCP and TLS timed side by side.
pub(crate) async fn run_over_tls(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let (server_tls, client_tls) = throwaway_certificates()?;
    let tls_server = Server::builder()
        .serve(UserServiceServer::new(Users))
        .serve(UserFeedServer::new(Users))
        .serve(BulkServer::new(Users))
        .tls(server_tls)
        .generated_token()
        .bind("127.0.0.1:0")
        .await?;
    let token = tls_server.token().unwrap_or_default().to_owned();
    println!(
        "TLS server on {}; its token, generated at start-up: {token}",
        tls_server.local_addr()
    );
    let tls_client = Channel::builder().tls(client_tls).token(token);
    let tls_addr = tls_server.local_addr().to_string();
    let codecs = options.codecs();
    tour(&tls_client, &tls_addr, codecs[0]).await?;
    benchmark(&tls_client, &tls_addr, &codecs, options.calls).await?;

    let plain_server = Server::builder()
        .serve(UserServiceServer::new(Users))
        .serve(BulkServer::new(Users))
        .bind("127.0.0.1:0")
        .await?;
    let plain_addr = plain_server.local_addr().to_string();
    let plain_client = Channel::builder();
    let codec = Codec::MessagePack;
    let calls = options.calls;
    let bulk_calls = (calls / 50).max(1);

    println!();
    println!("TLS cost ({}, same run; ratio = TLS / plain)", codec.name());
    note_the_build();
    println!("| case                                        |   plain TCP |         TLS | ratio |");
    println!("|---------------------------------------------|------------:|------------:|------:|");
    let plain = sequential(&plain_client, &plain_addr, codec, calls).await?;
    let tls = sequential(&tls_client, &tls_addr, codec, calls).await?;
    println!(
        "| {:<43} | {:>8.1} us | {:>8.1} us | {:>5.2} |",
        format!("1 object, {calls} sequential calls (per call)"),
        plain,
        tls,
        tls / plain
    );
    let plain = bulk(&plain_client, &plain_addr, codec, bulk_calls).await?;
    let tls = bulk(&tls_client, &tls_addr, codec, bulk_calls).await?;
    println!(
        "| {:<43} | {:>6.3} GB/s | {:>6.3} GB/s | {:>5.2} |",
        format!("64 KiB, 10 conns x {bulk_calls} calls, 8 in flight"),
        plain,
        tls,
        plain / tls
    );
    println!(
        "(the bulk ratio is plain throughput / TLS throughput, so above 1 means TLS is slower)"
    );

    tls_server.shutdown().await;
    plain_server.shutdown().await;
    Ok(())
}

/// A CA and a `localhost` certificate it signed, made now and never written to disk.
fn throwaway_certificates() -> Result<(ServerTlsConfig, ClientTlsConfig), Box<dyn std::error::Error>>
{
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key)?;
    let key = KeyPair::generate()?;
    let cert =
        CertificateParams::new(vec!["localhost".to_owned()])?.signed_by(&key, &ca, &ca_key)?;
    Ok((
        ServerTlsConfig::new(cert.pem(), key.serialize_pem())?,
        ClientTlsConfig::new(ca.pem(), "localhost")?,
    ))
}

/// Mean microseconds per `get_user` call, one call in flight (the W1 1-object case).
async fn sequential(
    client: &ChannelBuilder,
    addr: &str,
    codec: Codec,
    calls: usize,
) -> Result<f64, wirecall::Error> {
    let users = UserServiceClient::new(client.clone().codec(codec).connect(addr).await?);
    for _ in 0..calls.min(1_000) {
        users.get_user(fanly()).await?;
    }
    let elapsed = time(calls, || users.get_user(fanly())).await?;
    Ok(elapsed.as_secs_f64() * 1e6 / calls.max(1) as f64)
}

/// GB/s of 64 KiB payloads: 10 connections, each with 8 calls in flight, `calls` each.
async fn bulk(
    client: &ChannelBuilder,
    addr: &str,
    codec: Codec,
    calls: usize,
) -> Result<f64, wirecall::Error> {
    const CONNECTIONS: usize = 10;
    const IN_FLIGHT: usize = 8;
    let payload = Bytes::from(vec![7u8; 64 * 1024]);
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        let channel = client.clone().codec(codec).connect(addr).await?;
        let bulk = BulkClient::new(channel);
        bulk.bulk(payload.clone()).await?;
        clients.push(bulk);
    }
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for bulk in clients {
        let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(calls));
        for _ in 0..IN_FLIGHT {
            let (bulk, payload, remaining) =
                (bulk.clone(), payload.clone(), Arc::clone(&remaining));
            tasks.spawn(async move {
                use std::sync::atomic::Ordering;
                while remaining
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                    .is_ok()
                {
                    bulk.bulk(payload.clone()).await?;
                }
                Ok::<_, wirecall::Error>(())
            });
        }
    }
    while let Some(outcome) = tasks.join_next().await {
        outcome.expect("a bulk task panicked")?;
    }
    let bytes = (CONNECTIONS * calls * payload.len()) as f64;
    Ok(bytes / start.elapsed().as_secs_f64() / 1e9)
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
