//! Service discovery and load balancing: servers register in a [`Registry`], clients call a
//! service by name over every live endpoint.
//!
//! - [`Registration`]: the JSON record a server publishes (services, address, codecs, weight,
//!   version, metadata), under a lease that it renews in the background.
//! - [`Registry`]: a handle on a back-end ([`StaticRegistry`] in memory, `Etcd` with the
//!   `etcd` feature, `ZooKeeper` with the `zookeeper` feature, or your own [`Backend`]); one
//!   shared, coalescing watch per service name.
//! - [`BalancedChannelBuilder`] (from [`Channel::balanced`](crate::Channel::balanced)): a
//!   [`Channel`](crate::Channel) with one multiplexed connection per endpoint, a [`Balance`]
//!   policy, passive and active health checks and failover.

pub(crate) mod backend;
mod backoff;
pub(crate) mod balance;
pub(crate) mod balanced;
#[cfg(feature = "etcd")]
#[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
mod etcd;
pub(crate) mod record;
pub(crate) mod registered;
pub(crate) mod registry;
mod static_registry;
pub(crate) mod watch;
#[cfg(feature = "zookeeper")]
#[cfg_attr(docsrs, doc(cfg(feature = "zookeeper")))]
mod zookeeper;

pub use backend::{Backend, RegistryError, WatchEvent};
pub use balance::Balance;
pub use balanced::{
    BalancedChannelBuilder, EndpointStats, Hedging, DEFAULT_MAX_PROBE_BACKOFF,
    DEFAULT_MIN_RETRIES_PER_SECOND, DEFAULT_PROBE_BACKOFF, DEFAULT_RETRY_RATIO,
};
#[cfg(feature = "etcd")]
#[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
pub use etcd::{Etcd, DEFAULT_PREFIX};
pub use record::{RecordError, Registration, DEFAULT_TTL, DEFAULT_WEIGHT, MAX_RECORD_BYTES};
pub use registered::Registered;
pub use registry::{Registry, DEFAULT_COALESCE};
pub use static_registry::StaticRegistry;
pub use watch::{Endpoint, EndpointSet, Endpoints};
#[cfg(feature = "zookeeper")]
#[cfg_attr(docsrs, doc(cfg(feature = "zookeeper")))]
pub use zookeeper::{ZooKeeper, DEFAULT_ROOT, DEFAULT_SESSION_TIMEOUT};
