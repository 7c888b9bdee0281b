//! The settings every connection of a server shares, and their defaults.

use std::time::Duration;

use super::registration;
use crate::auth::{DEFAULT_FAILURE_WINDOW, DEFAULT_MAX_FAILURES};
use crate::codec::Codec;
use crate::frame::DEFAULT_MAX_FRAME_LEN;
use crate::negotiate::{Preference, PROTOCOL_VERSION};

/// Limits and options shared by every connection of a server.
#[derive(Clone, Debug)]
pub(crate) struct ServerConfig {
    pub(crate) codecs: Vec<Codec>,
    pub(crate) preference: Preference,
    pub(crate) max_frame_len: u32,
    pub(crate) handshake_timeout: Duration,
    pub(crate) grace_period: Duration,
    pub(crate) drain_delay: Duration,
    /// `None`: derived from the process's descriptor limit when the server starts.
    pub(crate) max_connections: Option<usize>,
    pub(crate) max_in_flight_per_connection: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) ping_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) listen_backlog: u32,
    pub(crate) auth_max_failures: u32,
    pub(crate) max_protocol_version: u8,
    pub(crate) auth_failure_window: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            codecs: Codec::available(),
            preference: Preference::Client,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            handshake_timeout: Duration::from_secs(10),
            grace_period: Duration::from_secs(30),
            drain_delay: registration::DEFAULT_DRAIN_DELAY,
            max_connections: None,
            max_in_flight_per_connection: 1024,
            max_in_flight: 65_536,
            idle_timeout: Duration::from_secs(90),
            ping_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            listen_backlog: 1024,
            auth_max_failures: DEFAULT_MAX_FAILURES,
            auth_failure_window: DEFAULT_FAILURE_WINDOW,
            max_protocol_version: PROTOCOL_VERSION,
        }
    }
}
