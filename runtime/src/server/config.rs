//! The settings every connection of a server shares, and their defaults: each default is a
//! public `DEFAULT_*` constant here, which the builder's docs link rather than restate.

use std::time::Duration;

use crate::auth::{DEFAULT_FAILURE_WINDOW, DEFAULT_MAX_FAILURES};
use crate::codec::Codec;
use crate::negotiate::{Preference, PROTOCOL_VERSION};
use crate::transport::frame::DEFAULT_MAX_FRAME_LEN;
use crate::transport::liveness::Periods;

/// The default time a new connection has for its handshake (TLS included) and hello.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time a graceful shutdown lets in-flight calls finish before aborting them.
pub const DEFAULT_SHUTDOWN_GRACE_PERIOD: Duration = Duration::from_secs(30);
/// The default wait between deregistering and draining on a graceful shutdown.
pub const DEFAULT_DRAIN_DELAY: Duration = Duration::from_secs(1);
/// The default number of calls running at once on one connection.
pub const DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION: usize = 1024;
/// The default number of streams open at once on one connection.
pub const DEFAULT_MAX_STREAMS_PER_CONNECTION: usize = 1024;
/// The default number of calls running at once on the whole server.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 65_536;
/// The default silence after which the server pings a connection: the idle period of the
/// socket servers wirecall replaces.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The default silence after which the server pings a connection whose calls or streams it is
/// running: a client that vanished (its host cut off, no RST ever coming) is then noticed,
/// and its handlers cancelled, within this plus [`DEFAULT_PING_TIMEOUT`] (15 s).
pub const DEFAULT_KEEPALIVE_WHILE_SERVING: Duration = Duration::from_secs(5);
/// The default time a pinged connection has to send any frame.
pub const DEFAULT_PING_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time writing to a peer may stall before the connection is closed.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The default listen backlog: connections the OS queues before `accept`.
pub const DEFAULT_LISTEN_BACKLOG: u32 = 1024;
/// The default number of failed token checks within [`DEFAULT_AUTH_FAILURE_WINDOW`] after
/// which an IP address is refused without its token being looked at.
pub const DEFAULT_AUTH_MAX_FAILURES: u32 = DEFAULT_MAX_FAILURES;
/// The default time a failed token check counts against its IP address.
pub const DEFAULT_AUTH_FAILURE_WINDOW: Duration = DEFAULT_FAILURE_WINDOW;
/// The default connection limit where the process's open-file limit cannot be read, and the
/// most the limit derived from it ever is.
pub const DEFAULT_MAX_CONNECTIONS_CEILING: usize = 100_000;
/// The fewest descriptors the derived default connection limit leaves for everything else
/// the process opens (listeners, files, clients); it leaves a tenth of the open-file limit
/// when that is more.
pub const DEFAULT_RESERVED_DESCRIPTORS: u64 = 32;

/// Limits and options shared by every connection of a server.
#[derive(Clone, Debug)]
pub(crate) struct ServerConfig {
    pub(crate) codecs: Vec<Codec>,
    pub(crate) preference: Preference,
    pub(crate) max_frame_len: u32,
    /// The compression chosen for clients that offer it.
    pub(crate) compression: crate::compression::Compression,
    pub(crate) handshake_timeout: Duration,
    pub(crate) grace_period: Duration,
    pub(crate) drain_delay: Duration,
    /// `None`: derived from the process's descriptor limit when the server starts.
    pub(crate) max_connections: Option<usize>,
    pub(crate) max_in_flight_per_connection: usize,
    /// Streams open at once on one connection.
    pub(crate) max_streams_per_connection: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) keepalive_while_serving: Duration,
    pub(crate) ping_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) listen_backlog: u32,
    pub(crate) auth_max_failures: u32,
    pub(crate) max_protocol_version: u8,
    pub(crate) auth_failure_window: Duration,
    /// Whether the server answers gRPC on its port too.
    #[cfg(feature = "grpc")]
    pub(crate) grpc: bool,
    /// The protobuf package its services are named in over gRPC.
    #[cfg(feature = "grpc")]
    pub(crate) grpc_package: String,
}

/// The protobuf package of services served over gRPC, unless
/// [`ServerBuilder::grpc_package`](crate::ServerBuilder::grpc_package) says otherwise: the
/// default of `wirecall proto --package`, so that stubs compiled from its export match.
#[cfg(feature = "grpc")]
pub const DEFAULT_GRPC_PACKAGE: &str = "wirecall.services";

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            codecs: Codec::available(),
            preference: Preference::Client,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            compression: crate::compression::Compression::default(),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            grace_period: DEFAULT_SHUTDOWN_GRACE_PERIOD,
            drain_delay: DEFAULT_DRAIN_DELAY,
            max_connections: None,
            max_in_flight_per_connection: DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION,
            max_streams_per_connection: DEFAULT_MAX_STREAMS_PER_CONNECTION,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            keepalive_while_serving: DEFAULT_KEEPALIVE_WHILE_SERVING,
            ping_timeout: DEFAULT_PING_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            listen_backlog: DEFAULT_LISTEN_BACKLOG,
            auth_max_failures: DEFAULT_AUTH_MAX_FAILURES,
            auth_failure_window: DEFAULT_AUTH_FAILURE_WINDOW,
            max_protocol_version: PROTOCOL_VERSION,
            #[cfg(feature = "grpc")]
            grpc: true,
            #[cfg(feature = "grpc")]
            grpc_package: DEFAULT_GRPC_PACKAGE.to_owned(),
        }
    }
}

impl ServerConfig {
    /// How long a client may stay silent, as the connection's read loop applies it.
    pub(crate) fn liveness(&self) -> Periods {
        Periods {
            idle: self.idle_timeout,
            busy: self.keepalive_while_serving,
            answer: self.ping_timeout,
            // The read loop sees every call start, and moves its timer then.
            tick_while_idle: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builder's docs link these constants, so the settings must start from them.
    #[test]
    fn a_fresh_config_holds_the_documented_defaults() {
        let config = ServerConfig::default();
        assert_eq!(config.codecs, Codec::available());
        assert_eq!(config.preference, Preference::Client);
        assert_eq!(config.max_frame_len, DEFAULT_MAX_FRAME_LEN);
        assert_eq!(config.handshake_timeout, DEFAULT_HANDSHAKE_TIMEOUT);
        assert_eq!(config.grace_period, DEFAULT_SHUTDOWN_GRACE_PERIOD);
        assert_eq!(config.drain_delay, DEFAULT_DRAIN_DELAY);
        assert_eq!(config.max_connections, None);
        assert_eq!(
            config.max_in_flight_per_connection,
            DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION
        );
        assert_eq!(config.max_in_flight, DEFAULT_MAX_IN_FLIGHT);
        assert_eq!(config.idle_timeout, DEFAULT_IDLE_TIMEOUT);
        assert_eq!(config.ping_timeout, DEFAULT_PING_TIMEOUT);
        assert_eq!(
            config.keepalive_while_serving,
            DEFAULT_KEEPALIVE_WHILE_SERVING
        );
        assert_eq!(config.write_timeout, DEFAULT_WRITE_TIMEOUT);
        assert_eq!(config.listen_backlog, DEFAULT_LISTEN_BACKLOG);
        assert_eq!(config.auth_max_failures, DEFAULT_AUTH_MAX_FAILURES);
        assert_eq!(config.auth_failure_window, DEFAULT_AUTH_FAILURE_WINDOW);
        assert_eq!(config.max_protocol_version, PROTOCOL_VERSION);
    }
}
