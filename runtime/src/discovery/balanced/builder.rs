//! [`BalancedChannelBuilder`]: the options of a balanced channel, and `discover`, which
//! starts one over a registry.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tower::retry::budget::TpsBudget;
use tower::{Layer, Service};

use super::follow::follow;
use super::health_check::run_health_checks;
use super::hedging::Hedging;
use super::latency::Latencies;
use super::pool::{Pool, State};
use super::route::Balancing;
use crate::client::request::{Reply, Request};
use crate::client::stack::{Core, Route};
use crate::client::{Channel, ChannelBuilder};
use crate::discovery::balance::Balance;
use crate::discovery::registry::Registry;
use crate::error::{BoxError, Error};
use crate::layers::next::{Layers, Next};
use crate::policy::overrides::Policies;
use crate::policy::table::PolicyTable;

/// The first wait before an ejected endpoint is probed; it doubles per failed probe.
pub const DEFAULT_PROBE_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two probes of an ejected endpoint.
pub const DEFAULT_MAX_PROBE_BACKOFF: Duration = Duration::from_secs(5);
/// Retries allowed on top of the calls themselves, as a fraction of recent calls.
pub const DEFAULT_RETRY_RATIO: f32 = 0.2;
/// Retries per second always allowed, however few calls were made.
pub const DEFAULT_MIN_RETRIES_PER_SECOND: u32 = 10;

// The handle's constructor lives with the options it starts from.
impl Channel {
    /// Options for a balanced channel: one over every live endpoint of a service in a
    /// registry ([`BalancedChannelBuilder::discover`]).
    pub fn balanced() -> BalancedChannelBuilder {
        BalancedChannelBuilder::default()
    }
}

/// Options for a balanced channel: a [`Channel`] over every live endpoint of one service.
///
/// It holds one multiplexed connection per endpoint (opened on the first call it gets, or at
/// once with [`eager`](Self::eager)) and follows the registry: endpoints that register are
/// added, endpoints that deregister or whose lease expires are removed (their calls in flight
/// finish). When the registry cannot be reached, the last known endpoints stay.
///
/// **One call path.** Calls of every shape go down the channel's one stack: first the layers
/// added with [`layer`](Self::layer), once per call (a retry or a failover does not run them
/// again; one instance serves the whole channel), then the retry loop, which balances each
/// attempt over the endpoints, then the method's circuit breaker on the endpoint picked, then
/// the layers of the endpoint options ([`channel`](Self::channel) with
/// [`ChannelBuilder::layer`]), once per attempt, with an instance per endpoint connection. A
/// stream goes to one endpoint for its whole life: it fails over only while it opens.
///
/// **Passive health.** An endpoint whose connection fails is ejected at once: it gets no
/// calls until a probe, repeated with a doubling backoff (100 ms to 5 s), connects again and
/// the endpoint's health service (if it serves one) reports the service `Serving`.
///
/// **Active health** ([`health_check`](Self::health_check), off by default): every interval,
/// each endpoint in rotation is asked for the service's status, and one that is `Draining` or
/// `NotServing`, or does not answer, is ejected and probed like a failed one, unless every
/// endpoint in rotation fails the check at once: then all stay.
///
/// **Failover.** A call is sent to another endpoint when the server did not run it
/// ([`Outcome::NotRun`](crate::Outcome::NotRun): the connection could not be made, the server
/// refused it while shutting down or overloaded, an endpoint's own layer shed it, its circuit
/// is open). A call whose connection failed after it was sent may have run: it is sent again
/// only for methods marked `#[idempotent]`; otherwise it fails with [`Error::Endpoint`], which
/// names the endpoint. Every retry stays within the call's deadline (the time already spent
/// counts), within the method's `retries` when its policy sets them, and within a retry
/// budget: at most 20% of recent calls plus 10 per second, so a failing fleet never sees a
/// retry storm.
///
/// ```no_run
/// # async fn run(registry: wirecall_runtime::discovery::Registry) -> Result<(), wirecall_runtime::Error> {
/// use std::time::Duration;
/// use wirecall_runtime::discovery::Balance;
/// use wirecall_runtime::Channel;
///
/// let users = Channel::balanced()
///     .balance(Balance::RoundRobin)
///     .channel(Channel::builder().timeout(Duration::from_secs(2)))
///     .eager(true)
///     .discover(&registry, "User")
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BalancedChannelBuilder {
    balance: Balance,
    options: ChannelBuilder,
    eager: bool,
    subset: Option<usize>,
    subset_seed: Option<u64>,
    probe_backoff: Duration,
    max_probe_backoff: Duration,
    retry_ratio: f32,
    min_retries_per_second: u32,
    hedging: Hedging,
    health_interval: Option<Duration>,
    accept_empty_set: bool,
    /// Run once per call, around balancing and failover.
    layers: Layers<Request, Reply>,
}

impl Default for BalancedChannelBuilder {
    fn default() -> Self {
        Self {
            balance: Balance::default(),
            options: ChannelBuilder::default(),
            eager: false,
            subset: None,
            subset_seed: None,
            probe_backoff: DEFAULT_PROBE_BACKOFF,
            max_probe_backoff: DEFAULT_MAX_PROBE_BACKOFF,
            retry_ratio: DEFAULT_RETRY_RATIO,
            min_retries_per_second: DEFAULT_MIN_RETRIES_PER_SECOND,
            hedging: Hedging::default(),
            health_interval: None,
            accept_empty_set: false,
            layers: Layers::default(),
        }
    }
}

impl BalancedChannelBuilder {
    /// The balancing policy (default [`Balance::PowerOfTwo`]).
    pub fn balance(mut self, balance: Balance) -> Self {
        self.balance = balance;
        self
    }

    /// The options of each endpoint's channel (codecs, deadline, TLS, token, keepalive,
    /// metadata, layers...). Endpoint channels never redial by themselves: the balanced
    /// channel ejects and probes.
    ///
    /// Layers given here ([`ChannelBuilder::layer`]) are **per attempt**: each attempt of a
    /// call, the first and every failover, passes through the layers of the endpoint it goes
    /// to, and each endpoint connection has its own instance of them (a rate limit here limits
    /// each endpoint). Layers that must run once per call go in [`layer`](Self::layer).
    pub fn channel(mut self, options: ChannelBuilder) -> Self {
        self.options = options;
        self
    }

    /// Overrides of the methods' declared policies, for this channel's calls (the same as
    /// [`ChannelBuilder::policies`] on the endpoint options, which it sets). A policy's
    /// deadline, concurrency limit and retries hold per call (its `retries` bound the
    /// failovers of an `#[idempotent]` method); its circuit breaker is per endpoint and method,
    /// and an open one sends the call to another endpoint.
    pub fn policies(mut self, policies: Policies) -> Self {
        self.options = self.options.policies(policies);
        self
    }

    /// Adds a tower layer **per call**, around balancing and failover: it runs once for each
    /// call of every shape (a stream's open included), whatever the number of attempts, and one instance
    /// serves every clone of the channel (a rate limit or a concurrency limit here counts
    /// every call of the channel). The first layer added is the outermost. What a layer sees
    /// and how its errors map are those of [`ChannelBuilder::layer`]; a layer may add
    /// metadata or change the deadline, which then holds for every attempt.
    ///
    /// An authentication interceptor with side effects (a token fetched per call) belongs
    /// here, so a failover does not run it twice; a per-endpoint limit belongs in the
    /// endpoint options' layers ([`channel`](Self::channel)).
    ///
    /// ```no_run
    /// # async fn run(registry: wirecall_runtime::discovery::Registry) -> Result<(), wirecall_runtime::Error> {
    /// use std::time::Duration;
    /// use wirecall_runtime::Channel;
    ///
    /// let users = Channel::balanced()
    ///     .layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(1)))
    ///     .discover(&registry, "User")
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Next<Request, Reply>> + Send + Sync + 'static,
        L::Service: Service<Request, Response = Reply> + Send + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
        <L::Service as Service<Request>>::Error: Into<BoxError>,
    {
        self.layers.push(layer);
        self
    }

    /// Connect to each endpoint as soon as it appears (default: on its first call).
    pub fn eager(mut self, eager: bool) -> Self {
        self.eager = eager;
        self
    }

    /// Deterministic subsetting: use at most `k` of the service's endpoints (default: all),
    /// so that M clients and N servers hold M·k connections rather than M·N. Each channel
    /// picks its `k` by rendezvous hashing of a seed with the endpoint addresses: every
    /// endpoint is in about `k/N` of all subsets, and when one leaves, only the channels that
    /// held it take one other endpoint. The seed is random per channel unless
    /// [`subset_seed`](Self::subset_seed) fixes it.
    pub fn subset(mut self, k: usize) -> Self {
        self.subset = Some(k.max(1));
        self
    }

    /// Fixes the subsetting seed (for example a hash of the host name), so that a restarted
    /// client connects to the same subset.
    pub fn subset_seed(mut self, seed: u64) -> Self {
        self.subset_seed = Some(seed);
        self
    }

    /// The first and the longest wait between probes of an ejected endpoint (default 100 ms
    /// and 5 s).
    pub fn probe_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.probe_backoff = first;
        self.max_probe_backoff = max.max(first);
        self
    }

    /// When a slow unary call of an `#[idempotent]` method is also sent to a second endpoint
    /// (default [`Hedging::Adaptive`]: after about the latency only the slowest percent of the
    /// method's calls exceed). A call stuck on a server that hangs is then answered by another
    /// one within that delay, and the hung server leaves rotation after a few such calls.
    pub fn hedging(mut self, hedging: Hedging) -> Self {
        self.hedging = hedging;
        self
    }

    /// The retry budget: retries and hedges may add `ratio` of the calls of the last 10 s
    /// (default 0.2), plus `min_per_second` per second (default 10).
    pub fn retry_budget(mut self, ratio: f32, min_per_second: u32) -> Self {
        self.retry_ratio = ratio.clamp(0.0, 1000.0);
        self.min_retries_per_second = min_per_second;
        self
    }

    /// Active health checks: every `interval`, ask each endpoint in rotation (with an open
    /// connection) for the service's status through the built-in health service
    /// (`wirecall.Health`), and eject one that reports `Draining` or `NotServing` or does not
    /// answer within `interval`; it is probed and re-added like an endpoint whose connection
    /// failed. Active checks never empty the rotation: when every endpoint in it fails a
    /// check at once, all stay (with a warning), since calling servers that say they are
    /// unfit beats failing every call. `Unknown` and a server without the health service
    /// count as serving. Off by
    /// default: the passive checks eject a failed endpoint at its first failed call, and the
    /// registry removes a draining one; turn this on to stop calling a server that is up but
    /// reports itself not serving.
    pub fn health_check(mut self, interval: Duration) -> Self {
        self.health_interval = Some(interval.max(Duration::from_millis(10)));
        self
    }

    /// Whether an empty endpoint set from the registry replaces the endpoints the channel
    /// has (default `false`). By default a registry that suddenly lists no endpoint at all
    /// (its data lost or restored from an old snapshot, a wrong prefix, every lease expired
    /// during a registry outage) is treated like an unreachable one: the last known endpoints
    /// stay, with a warning, and the next non-empty set replaces them. Endpoints that are
    /// really gone fail their next call, are ejected and probed. Set `true` to follow the
    /// registry to zero, for example when a service is retired and its callers should fail
    /// with [`Error::NoEndpoints`] at once.
    pub fn accept_empty_set(mut self, accept: bool) -> Self {
        self.accept_empty_set = accept;
        self
    }

    /// A channel over the endpoints of `service` in `registry`. Waits until the registry has
    /// answered once (at most the channel options' connect timeout, 10 s by default); the set
    /// may be empty then, and fill later.
    pub async fn discover(self, registry: &Registry, service: &str) -> Result<Channel, Error> {
        let mut endpoints = registry.watch(service);
        let wait = self.options.connect_timeout_value();
        let first = tokio::time::timeout(wait, endpoints.ready())
            .await
            .map_err(|_| Error::NoEndpoints {
                service: service.to_owned(),
                reason: format!(
                    "registry {} did not answer within {wait:?}",
                    registry.describe()
                ),
            })?;
        let policies = PolicyTable::new(self.options.resolved_policies()?);
        let timeout = self.options.default_timeout();
        let metadata = self.options.default_metadata();
        let trace = self.options.trace_value();
        let pool = Arc::new(Pool {
            service: service.to_owned(),
            balance: self.balance,
            options: self.options.endpoint_options()?,
            eager: self.eager,
            subset: self.subset,
            subset_seed: self.subset_seed.unwrap_or_else(|| fastrand::u64(..)),
            probe_backoff: self.probe_backoff,
            max_probe_backoff: self.max_probe_backoff,
            health_interval: self.health_interval,
            accept_empty_set: self.accept_empty_set,
            ignoring_empty_set: AtomicBool::new(false),
            state: RwLock::new(Arc::new(State::default())),
            counter: AtomicUsize::new(0),
            budget: TpsBudget::new(
                Duration::from_secs(10),
                self.min_retries_per_second,
                self.retry_ratio,
            ),
            hedging: self.hedging,
            latencies: Latencies::default(),
            closed: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
        });
        pool.update(&first);
        let mut tasks = vec![tokio::spawn(follow(Arc::downgrade(&pool), endpoints))];
        if let Some(interval) = pool.health_interval {
            tasks.push(tokio::spawn(run_health_checks(
                Arc::downgrade(&pool),
                interval,
            )));
        }
        *pool.tasks.lock().unwrap_or_else(|p| p.into_inner()) = tasks;
        let layers = self.layers.wrap(Balancing {
            pool: Arc::clone(&pool),
        });
        let core = Core {
            policies,
            trace,
            erases_args: layers.is_some() || pool.endpoints_have_layers(),
            layers,
            route: Route::Balanced(pool),
        };
        Ok(Channel {
            core: Arc::new(core),
            timeout,
            metadata,
            hash_key: None,
            uncompressed: false,
        })
    }
}
