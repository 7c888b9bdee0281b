//! Early calls through the public API: a connection to a server that said it understands
//! them sends its first call right behind its hello, and every way the server can refuse
//! that hello ends each call exactly once.
//!
//! The channels reach their servers through [`Relay`], a TCP relay on a fixed address (the
//! address the client remembers servers by) whose upstream the test switches, and which holds
//! each server hello back until the client has sent a frame after its own hello, or a moment
//! has passed: so it sees whether a client sent a call before it had an answer.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wirecall::{Channel, Codec, Error, NegotiationError, Server};
use wirecall_runtime::negotiate::ClientHello;

/// How long the relay holds a server hello back for a client that sent only its hello.
const HOLD: Duration = Duration::from_millis(200);

/// What the relay saw of one connection.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    /// The client sent bytes after its hello before it received anything.
    early_frame: bool,
    /// The client's hello announced early calls.
    announced: bool,
}

#[derive(Clone)]
struct Relay {
    addr: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let relay = Self {
            addr: listener.local_addr().unwrap(),
            upstream: Arc::new(Mutex::new(upstream)),
            seen: Arc::default(),
        };
        let this = relay.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = *this.upstream.lock().unwrap();
                tokio::spawn(this.clone().relay(client, upstream));
            }
        });
        relay
    }

    fn switch_to(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    async fn relay(self, mut client: TcpStream, upstream: SocketAddr) {
        let Ok(mut server) = TcpStream::connect(upstream).await else {
            return;
        };
        client.set_nodelay(true).unwrap();
        server.set_nodelay(true).unwrap();
        let index = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(Seen::default());
            seen.len() - 1
        };
        // Read the client's hello, and within HOLD whatever follows it.
        let mut from_client = Vec::new();
        let mut chunk = [0u8; 4096];
        let hello = loop {
            let n = client.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return;
            }
            from_client.extend_from_slice(&chunk[..n]);
            if let Ok(Some((hello, used))) = ClientHello::parse(&from_client) {
                break (hello, used);
            }
        };
        let (hello, used) = hello;
        if from_client.len() == used {
            if let Ok(Ok(n)) = tokio::time::timeout(HOLD, client.read(&mut chunk)).await {
                from_client.extend_from_slice(&chunk[..n]);
            }
        }
        self.seen.lock().unwrap()[index] = Seen {
            early_frame: from_client.len() > used,
            announced: hello.early_calls,
        };
        if server.write_all(&from_client).await.is_err() {
            return;
        }
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

async fn user_server(codecs: &[Codec]) -> wirecall::RunningServer {
    Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .codecs(codecs.iter().copied())
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

async fn get_user(channel: &Channel) -> Result<UserModel, Error> {
    UserServiceClient::new(channel.clone())
        .get_user(fanly())
        .await
}

#[tokio::test]
async fn the_second_connection_sends_its_first_call_without_waiting() {
    let server = user_server(&[Codec::MessagePack, Codec::Json]).await;
    let relay = Relay::start(server.local_addr()).await;
    // The first connection waits for its answer (opted out, in case an earlier test of this
    // process left this port in the table) and learns from it.
    for early_calls in [false, true] {
        let channel = Channel::builder()
            .codec(Codec::MessagePack)
            .early_calls(early_calls)
            .connect(relay.addr)
            .await
            .unwrap();
        assert_eq!(get_user(&channel).await.unwrap(), fanly());
        assert_eq!(channel.codec(), Codec::MessagePack);
    }
    let seen = relay.seen();
    assert!(!seen[0].early_frame && !seen[0].announced, "{seen:?}");
    // The first hello told the client the server understands early calls.
    assert!(seen[1].early_frame && seen[1].announced, "{seen:?}");

    // Opted out: the hello waits for its answer again.
    let channel = Channel::builder()
        .codec(Codec::MessagePack)
        .early_calls(false)
        .connect(relay.addr)
        .await
        .unwrap();
    assert_eq!(get_user(&channel).await.unwrap(), fanly());
    let seen = relay.seen();
    assert!(!seen[2].early_frame && !seen[2].announced, "{seen:?}");
}

#[tokio::test]
async fn early_calls_keep_the_codec_a_plain_hello_would_get() {
    let server = user_server(&[Codec::MessagePack, Codec::Json]).await;
    let relay = Relay::start(server.local_addr()).await;
    let json_only = Channel::builder()
        .codec(Codec::Json)
        .connect(relay.addr)
        .await
        .unwrap();
    assert_eq!(get_user(&json_only).await.unwrap(), fanly());
    // Another channel preferring MessagePack still gets it, early.
    let channel = Channel::builder()
        .codecs([Codec::MessagePack, Codec::Json])
        .connect(relay.addr)
        .await
        .unwrap();
    assert_eq!(channel.codec(), Codec::MessagePack);
    assert_eq!(get_user(&channel).await.unwrap(), fanly());
    assert!(relay.seen()[1].early_frame);
}

#[tokio::test]
async fn a_server_that_no_longer_allows_the_codec_refuses_and_the_call_is_sent_again() {
    let before = user_server(&[Codec::MessagePack, Codec::Json]).await;
    let relay = Relay::start(before.local_addr()).await;
    let offer = [Codec::MessagePack, Codec::Json];
    let after = user_server(&[Codec::Json]).await;
    for reconnect in [true, false] {
        relay.switch_to(before.local_addr());
        let channel = Channel::builder()
            .codecs(offer)
            .connect(relay.addr)
            .await
            .unwrap();
        assert_eq!(get_user(&channel).await.unwrap(), fanly());

        // Redeployed without MessagePack, at the same address.
        relay.switch_to(after.local_addr());
        let channel = Channel::builder()
            .codecs(offer)
            .reconnect(reconnect)
            .connect(relay.addr)
            .await
            .unwrap();
        // connect did not wait: the channel still assumes MessagePack.
        assert_eq!(channel.codec(), Codec::MessagePack);
        assert_eq!(get_user(&channel).await.unwrap(), fanly());
        assert_eq!(channel.codec(), Codec::Json);
        assert_eq!(get_user(&channel).await.unwrap(), fanly());
        if reconnect {
            let seen = relay.seen();
            assert!(
                seen[1].early_frame,
                "the refused connection sent a call: {seen:?}"
            );
            assert!(!seen[2].announced, "the next one waited: {seen:?}");
        }
    }
}

#[tokio::test]
async fn a_one_way_call_sent_early_to_a_refusing_server_is_sent_again() {
    let (lab, state) = start_server().await;
    let relay = Relay::start(lab.local_addr()).await;
    let channel = Channel::builder()
        .codec(Codec::MessagePack)
        .connect(relay.addr)
        .await
        .unwrap();
    LabClient::new(channel).record(1).await.unwrap();

    let json_only = Server::builder()
        .serve(LabServer::new(Arc::clone(&state)))
        .codecs([Codec::Json])
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    relay.switch_to(json_only.local_addr());
    let channel = Channel::builder()
        .codecs([Codec::MessagePack, Codec::Json])
        .connect(relay.addr)
        .await
        .unwrap();
    let client = LabClient::new(channel);
    client.record(2).await.unwrap();
    // Ordered after the notify on the same connection: it has run once.
    assert_eq!(client.recorded().await.unwrap(), 3);
}

#[tokio::test]
async fn a_wrong_token_fails_the_early_calls_with_the_authentication_error() {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .token("right")
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let relay = Relay::start(server.local_addr()).await;
    let channel = Channel::builder()
        .token("right")
        .connect(relay.addr)
        .await
        .unwrap();
    assert_eq!(get_user(&channel).await.unwrap(), fanly());

    let channel = Channel::builder()
        .token("wrong")
        .connect(relay.addr)
        .await
        .expect("connect returns before the server hello");
    let err = get_user(&channel).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Negotiation(NegotiationError::AuthenticationFailed)
        ),
        "{err:?}"
    );
    assert!(relay.seen()[1].early_frame);
    // The next call dials again, without early calls, and gets the same answer.
    let err = get_user(&channel).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Negotiation(NegotiationError::AuthenticationFailed)
        ),
        "{err:?}"
    );
}

/// A server that reads what it is sent and answers `answer` (then closes, unless `linger`).
async fn hostile_server(answer: &'static [u8], linger: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut peer, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = peer.read(&mut buf).await;
                let _ = peer.write_all(answer).await;
                if linger {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
            });
        }
    });
    addr
}

/// What a hostile server answers, whether it then holds the connection open, and which
/// error the early calls must get.
type HostileCase = (&'static [u8], bool, fn(&NegotiationError) -> bool);

#[tokio::test]
async fn a_hostile_server_hello_fails_the_early_calls_without_a_hang() {
    let server = user_server(&[Codec::MessagePack]).await;
    let relay = Relay::start(server.local_addr()).await;
    // (answer, keep the connection open, what the call must fail with)
    let cases: [HostileCase; 6] = [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", false, |e| {
            matches!(e, NegotiationError::BadMagic(_))
        }),
        // Accepted, but with JSON: not the codec the early calls went out in.
        (b"WCAL\x02\x00\x01\x01\x01\x00\x02\x02\x00", false, |e| {
            matches!(e, NegotiationError::BadServerHello(_))
        }),
        // An unknown status.
        (b"WCAL\x02\x09\x00\x00\x00\x00", false, |e| {
            matches!(e, NegotiationError::BadServerHello(_))
        }),
        // An extension block longer than allowed.
        (b"WCAL\x02\x00\x02\x01\x02\xff\xff", false, |e| {
            matches!(e, NegotiationError::BadExtensions(_))
        }),
        // Cut short, then closed.
        (b"WCAL\x02\x00", false, |e| {
            matches!(e, NegotiationError::Io(_))
        }),
        // Nothing at all, connection held open: the connect timeout.
        (b"", true, |e| matches!(e, NegotiationError::TimedOut)),
    ];
    for (answer, linger, expected) in cases {
        // Known to understand early calls...
        relay.switch_to(server.local_addr());
        let channel = Channel::builder()
            .codec(Codec::MessagePack)
            .connect(relay.addr)
            .await
            .unwrap();
        get_user(&channel).await.unwrap();
        // ... then replaced.
        relay.switch_to(hostile_server(answer, linger).await);
        let channel = Channel::builder()
            .codec(Codec::MessagePack)
            .connect_timeout(Duration::from_millis(500))
            .reconnect(false)
            .connect(relay.addr)
            .await
            .unwrap();
        let call = tokio::time::timeout(Duration::from_secs(5), get_user(&channel)).await;
        let err = call.expect("the call ends").unwrap_err();
        match &err {
            Error::Negotiation(e) if expected(e) => {}
            other => panic!("{answer:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_balanced_channel_sends_a_refused_early_call_again_on_its_endpoint_without_early_calls() {
    use wirecall::discovery::{Balance, Registry, StaticRegistry};

    let offer = [Codec::MessagePack, Codec::Json];
    let before = user_server(&offer).await;
    let relay = Relay::start(before.local_addr()).await;
    let other = user_server(&offer).await;
    // The process learns that the server behind the relay takes early calls...
    let known = Channel::builder()
        .codecs(offer)
        .connect(relay.addr)
        .await
        .unwrap();
    assert_eq!(get_user(&known).await.unwrap(), fanly());
    // ...and then it is redeployed without MessagePack, at the same address.
    let after = user_server(&[Codec::Json]).await;
    relay.switch_to(after.local_addr());

    let registry = Registry::new(
        StaticRegistry::new()
            .endpoint(UserServiceClient::SERVICE_NAME, relay.addr.to_string())
            .endpoint(
                UserServiceClient::SERVICE_NAME,
                other.local_addr().to_string(),
            ),
    );
    let balanced = Channel::balanced()
        .balance(Balance::RoundRobin)
        .channel(Channel::builder().codecs(offer))
        .probe_backoff(Duration::from_millis(20), Duration::from_millis(50))
        .discover(&registry, UserServiceClient::SERVICE_NAME)
        .await
        .unwrap();
    let users = UserServiceClient::new(balanced.clone());
    // The refusal means the call never ran: the endpoint's channel dials again without early
    // calls and sends it once more (as a direct channel does), so no call fails and the
    // endpoint is never ejected.
    for _ in 0..20 {
        assert_eq!(users.get_user(fanly()).await.unwrap(), fanly());
    }
    let relayed = balanced
        .endpoints()
        .into_iter()
        .find(|e| e.address == relay.addr.to_string())
        .unwrap();
    assert!(relayed.calls >= 1, "{:?}", balanced.endpoints());
    assert_eq!(relayed.failures, 0, "{:?}", balanced.endpoints());
    assert!(!relayed.ejected, "{:?}", balanced.endpoints());
    // After the first connection (which learnt that the server takes early calls): one that
    // sent a call early, then one dialled again without.
    let seen = relay.seen();
    let balanced_connections = &seen[1..];
    let early = balanced_connections.iter().position(|s| s.early_frame);
    let again = balanced_connections.iter().rposition(|s| !s.early_frame);
    assert!(
        matches!((early, again), (Some(early), Some(again)) if early < again),
        "expected an early connection, then one without early calls: {seen:?}"
    );
}
