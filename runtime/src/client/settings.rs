//! What every connection of a channel is opened with: one [`ConnectionSettings`] value that
//! the builder fills in and the channel keeps to reconnect, and the client's defaults.

use std::time::Duration;

use crate::auth::Token;
use crate::codec::Codec;
use crate::error::Error;
use crate::negotiate::{check_codec_list, PROTOCOL_VERSION};
use crate::stream::credit_window::WindowSize;
use crate::stream::{
    DEFAULT_CONNECTION_WINDOW_BYTES, DEFAULT_STREAM_WINDOW, DEFAULT_STREAM_WINDOW_BYTES,
};
#[cfg(feature = "tls")]
use crate::tls::ClientTlsConfig;
use crate::transport::frame::DEFAULT_MAX_FRAME_LEN;

/// The default per-call deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default limit for connecting plus the handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default silence after which the client pings the server.
pub const DEFAULT_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// The default wait for any frame after a keepalive ping.
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default cap of the wait between reconnect attempts.
pub const DEFAULT_MAX_RECONNECT_BACKOFF: Duration = Duration::from_secs(5);

/// The first wait after a failed reconnect; it doubles per failure up to the configured cap.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(50);

/// Everything a connection of a channel is opened with: the hello's offer, token and frame
/// limit, the protocol version to offer, TLS, the connect timeout and the keep-alive. The
/// builder fills it in; the channel keeps a copy to reconnect with the same settings.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionSettings {
    /// The codecs to offer, most preferred first.
    pub(crate) codecs: Vec<Codec>,
    /// The largest frame sent or accepted (announced in the hello).
    pub(crate) max_frame_len: u32,
    /// Pings on a silent connection (`None`: never).
    pub(crate) keepalive: Option<Keepalive>,
    /// The limit for connecting plus TLS plus the hello.
    pub(crate) connect_timeout: Duration,
    pub(crate) token: Option<Token>,
    /// The newest protocol version to offer.
    pub(crate) max_protocol_version: u8,
    /// Send the first calls behind the hello to servers known to understand early calls.
    pub(crate) early_calls: bool,
    /// Items a server stream may send ahead of its consumer (its credit window) at first, and
    /// the bytes of items the window then sizes itself towards.
    pub(crate) stream_window: WindowSize,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<ClientTlsConfig>,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            codecs: Codec::available(),
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            keepalive: Some(Keepalive {
                interval: DEFAULT_KEEPALIVE_INTERVAL,
                timeout: DEFAULT_KEEPALIVE_TIMEOUT,
            }),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            token: None,
            max_protocol_version: PROTOCOL_VERSION,
            early_calls: true,
            stream_window: WindowSize {
                items: DEFAULT_STREAM_WINDOW,
                bytes: DEFAULT_STREAM_WINDOW_BYTES,
                connection: DEFAULT_CONNECTION_WINDOW_BYTES,
            },
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// When to probe a silent connection, and how long to wait for any frame after the probe.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keepalive {
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
}

impl ConnectionSettings {
    /// Refuses what a hello could not carry: a token over 255 bytes, a codec listed twice.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if let Some(token) = &self.token {
            token.validate()?;
        }
        check_codec_list(&self.codecs).map_err(Error::Config)
    }
}
