//! A method's own hedging policy, against three real servers behind a balanced channel:
//! `#[wirecall(hedge(delay = "20ms", max = 3))]` sends a call that goes unanswered to a second
//! and then a third server, and the first answer wins; a run-time override (the text of
//! `WIRECALL_POLICY` and policy files) lowers the attempts or turns hedging off; the channel's
//! own hedging sends one copy at most.
//!
//! The servers share one backend that leaves the first calls it is given unanswered until
//! they are cancelled, whichever server runs them, so each test says exactly how many copies
//! a call needs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use wirecall::discovery::{Registration, Registry, StaticRegistry};
use wirecall::policy::Policies;
use wirecall::{Channel, Error, RunningServer, Server};
use wirecall_test_support::eventually;

#[wirecall::service]
trait Lookup {
    /// Answers with how many calls the fleet had been given, unless it stalls.
    #[idempotent]
    #[wirecall(timeout = "2s", hedge(delay = "20ms", max = 3))]
    async fn find(&self) -> u64;
    /// The same, with no policy of its own: the channel's hedging applies.
    #[idempotent]
    #[wirecall(timeout = "2s")]
    async fn plain(&self) -> u64;
}

/// The fleet's one backend: the first `stalls` calls wait until they are cancelled.
#[derive(Clone, Default)]
struct Backend {
    stalls: Arc<AtomicU64>,
    started: Arc<AtomicU64>,
    cancelled: Arc<AtomicU64>,
}

/// Counts a stalled call's end: it only ends by being cancelled.
struct CountsCancel(Arc<AtomicU64>);

impl Drop for CountsCancel {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Backend {
    async fn answer(&self) -> u64 {
        let started = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        let stall = self
            .stalls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if stall {
            let _cancelled = CountsCancel(Arc::clone(&self.cancelled));
            std::future::pending::<()>().await;
        }
        started
    }
}

impl Lookup for Backend {
    async fn find(&self) -> u64 {
        self.answer().await
    }

    async fn plain(&self) -> u64 {
        self.answer().await
    }
}

/// Three servers of `backend` and a client over a balanced channel that knows them, with
/// `policies` over the declared ones.
async fn fleet(backend: &Backend, policies: &str) -> (Vec<RunningServer>, LookupClient) {
    let registry = Registry::new(StaticRegistry::new());
    let mut servers = Vec::new();
    for _ in 0..3 {
        let server = Server::builder()
            .serve(LookupServer::new(backend.clone()))
            .register(registry.clone(), Registration::bound_address())
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        servers.push(server);
    }
    let mut builder = Channel::balanced();
    if !policies.is_empty() {
        builder = builder.policies(Policies::parse(policies).unwrap());
    }
    let channel = builder.discover(&registry, "Lookup").await.unwrap();
    eventually("every endpoint to be known", || {
        channel.endpoints().len() == 3
    })
    .await;
    (servers, LookupClient::new(channel))
}

/// The call ended at its deadline (a balanced channel names the endpoint it was waiting on).
fn timed_out(err: &Error) -> bool {
    match err {
        Error::Endpoint { cause, .. } => timed_out(cause),
        err => matches!(err, Error::Timeout { .. }),
    }
}

/// Every attempt the fleet was given has ended (the stalled ones were cancelled); then the
/// client goes and the servers shut down.
async fn settle(
    backend: &Backend,
    servers: Vec<RunningServer>,
    client: LookupClient,
    stalled: u64,
) {
    eventually("the stalled attempts to be cancelled", || {
        backend.cancelled.load(Ordering::SeqCst) == stalled
    })
    .await;
    drop(client);
    futures::future::join_all(servers.into_iter().map(RunningServer::shutdown)).await;
}

#[tokio::test]
async fn a_declared_hedge_sends_up_to_its_max_and_the_first_answer_wins() {
    let backend = Backend::default();
    backend.stalls.store(2, Ordering::SeqCst);
    let (servers, client) = fleet(&backend, "").await;

    // Two servers leave it unanswered; the third copy, 40 ms in, is answered.
    let answered_by = client.find().await.unwrap();
    assert_eq!(answered_by, 3);
    assert_eq!(backend.started.load(Ordering::SeqCst), 3);
    settle(&backend, servers, client, 2).await;
}

#[tokio::test]
async fn a_run_time_override_lowers_the_attempts() {
    let backend = Backend::default();
    backend.stalls.store(2, Ordering::SeqCst);
    let (servers, client) = fleet(&backend, "Lookup.find timeout=300ms hedge.max=2").await;

    // Two attempts, both stalled: the call ends at its deadline, with no third copy.
    let err = client.find().await.unwrap_err();
    assert!(timed_out(&err), "{err}");
    assert_eq!(backend.started.load(Ordering::SeqCst), 2);
    settle(&backend, servers, client, 2).await;
}

#[tokio::test]
async fn a_run_time_override_turns_hedging_off_even_where_the_channel_hedges() {
    let backend = Backend::default();
    backend.stalls.store(1, Ordering::SeqCst);
    let (servers, client) = fleet(
        &backend,
        "Lookup.find timeout=300ms hedge=off; Lookup.plain timeout=300ms hedge=off",
    )
    .await;

    let err = client.find().await.unwrap_err();
    assert!(timed_out(&err), "{err}");
    backend.stalls.store(1, Ordering::SeqCst);
    let err = client.plain().await.unwrap_err();
    assert!(timed_out(&err), "{err}");
    assert_eq!(backend.started.load(Ordering::SeqCst), 2);
    backend.stalls.store(0, Ordering::SeqCst);
    settle(&backend, servers, client, 2).await;
}

#[tokio::test]
async fn without_a_policy_of_its_own_a_method_gets_the_channel_s_one_copy() {
    let backend = Backend::default();
    backend.stalls.store(2, Ordering::SeqCst);
    let (servers, client) = fleet(&backend, "Lookup.plain timeout=500ms").await;

    // The channel's adaptive hedging sends one copy (after 100 ms, before the method has
    // answered enough calls to estimate its latency); both attempts stall.
    let err = client.plain().await.unwrap_err();
    assert!(timed_out(&err), "{err}");
    assert_eq!(backend.started.load(Ordering::SeqCst), 2);
    settle(&backend, servers, client, 2).await;
}
