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
use crate::transport::liveness::Periods;

/// The default per-call deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default limit for connecting plus the handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default limit for the handshake (TLS and the hello) once TCP is connected: a server
/// process that hangs still has its kernel accept connections, and only this limit notices.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// The default silence after which the client pings a server it has no call waiting on.
pub const DEFAULT_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// The default silence after which the client pings a server while calls or streams wait on
/// it.
pub const DEFAULT_KEEPALIVE_WHILE_WAITING: Duration = Duration::from_secs(1);
/// The default wait for any sign of life after a keepalive ping.
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(1);
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
    /// The compression offered in the hello, and how frames are compressed when the server
    /// chooses it.
    pub(crate) compression: crate::compression::Compression,
    /// Pings on a silent connection (`None`: never).
    pub(crate) keepalive: Option<Periods>,
    /// The limit for connecting plus TLS plus the hello.
    pub(crate) connect_timeout: Duration,
    /// The limit for TLS plus the hello, once connected.
    pub(crate) handshake_timeout: Duration,
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
            compression: crate::compression::Compression::default(),
            keepalive: Some(DEFAULT_KEEPALIVE),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
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

/// When the client pings a silent server, and how long it waits for an answer. The reader
/// sees replies, not calls starting, so its timer ticks every `busy` to notice them.
pub(crate) const DEFAULT_KEEPALIVE: Periods = Periods {
    idle: DEFAULT_KEEPALIVE_INTERVAL,
    busy: DEFAULT_KEEPALIVE_WHILE_WAITING,
    answer: DEFAULT_KEEPALIVE_TIMEOUT,
    tick_while_idle: true,
};

impl ConnectionSettings {
    /// Refuses what a hello could not carry: a token over 255 bytes, a codec listed twice.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if let Some(token) = &self.token {
            token.validate()?;
        }
        check_codec_list(&self.codecs).map_err(Error::Config)
    }
}
