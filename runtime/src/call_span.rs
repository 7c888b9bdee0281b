//! The `wirecall.call` span: built here, and only here, for every call on both sides (a
//! client's unary call and stream, a server's call and stream), so that every call carries the
//! same fields whatever its shape.
//!
//! | field | client | server |
//! |---|---|---|
//! | `side` | `client` | `server` |
//! | `stream` | whether the call is a stream | the same |
//! | `service` | - | the service's name |
//! | `method` | the method id | the method's name |
//! | `request_id`, `codec` | the call's | the call's |
//! | `peer` | the server's address | the client's |
//! | `trace_id`, `span_id` | the W3C trace context it carries | the one it continues |
//! | `items` | items a stream yielded | - |
//! | `outcome` | `ok`, `cancelled`, `error` (streams) | how the call ended |
//! | `error` | why a stream failed | - |
//!
//! **Whether a span is worth building at all.** With no subscriber interested in `DEBUG`,
//! the span macro still builds a disabled span value, evaluates its fields for the `log`
//! fallback and drops it again: a hundred or more instructions per call for nothing. So the
//! level check the macro makes first is made before it ([`wanted`]), and such a call builds no
//! span value at all; when it passes, the macro decides per callsite as always. The `log`
//! fallback (tracing's `log` feature, which any dependency may turn on) writes a disabled
//! span's fields as `log` records when `log` is at `DEBUG` or finer: then the span is still
//! built, so those records do not go missing.

use std::fmt;
use std::net::SocketAddr;

use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
use tracing::Level;

use crate::codec::Codec;
use crate::trace::TraceContext;

/// Which side of a call a span is on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Side {
    Client,
    Server,
}

/// What a call's span says of it when it starts.
pub(crate) struct CallSpan<'a> {
    pub(crate) side: Side,
    pub(crate) stream: bool,
    /// The service's name, where it is known (the server).
    pub(crate) service: Option<&'a str>,
    /// The method: its name on the server, its id on the client.
    pub(crate) method: &'a dyn fmt::Display,
    pub(crate) request_id: u64,
    pub(crate) codec: Codec,
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) trace: Option<TraceContext>,
}

impl CallSpan<'_> {
    /// The span, or `None` when nothing would see it (see [`wanted`]).
    pub(crate) fn start(self) -> Option<tracing::Span> {
        if !wanted() {
            return None;
        }
        let side = match self.side {
            Side::Client => "client",
            Side::Server => "server",
        };
        let span = tracing::debug_span!(
            "wirecall.call",
            side,
            stream = self.stream,
            service = self.service,
            method = %self.method,
            request_id = self.request_id,
            codec = %self.codec,
            peer = ?self.peer,
            trace_id = self.trace.map(|t| t.trace_id_hex()),
            span_id = self.trace.map(|t| t.span_id_hex()),
            items = tracing::field::Empty,
            outcome = tracing::field::Empty,
            error = tracing::field::Empty,
        );
        Some(span)
    }
}

/// Whether some subscriber, or the `log` fallback, may want a call's span: `false` means
/// nothing would see it.
#[inline]
pub(crate) fn wanted() -> bool {
    (Level::DEBUG <= STATIC_MAX_LEVEL && Level::DEBUG <= LevelFilter::current())
        || log::max_level() >= log::LevelFilter::Debug
}
