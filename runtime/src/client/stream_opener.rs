//! A stream call on its way through a channel's tower layers.
//!
//! Layers deal in [`Request`](super::Request)s and [`Reply`](super::Reply)s, which know no
//! item types. So a stream call travels as a request whose opener, built where the types are
//! known, opens the stream once the innermost service has picked the connection; the typed
//! stream comes back inside the reply, type-erased, and the caller takes it out again. Layers
//! see the open (its method, deadline and metadata, and whether it succeeded), not the items.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::args::CallArgs;
use super::connection::Connection;
use super::item_stream::ItemStream;
use super::outgoing::Outgoing;
use crate::error::{Error, ErrorCode};
use crate::metadata::Metadata;
use crate::trace::TraceContext;

/// What the innermost service hands the opener, from the request as the layers left it.
pub(crate) struct OpenParts {
    pub(crate) args: CallArgs,
    pub(crate) timeout: Option<Duration>,
    pub(crate) metadata: Option<Arc<Metadata>>,
    pub(crate) trace: Option<TraceContext>,
}

impl OpenParts {
    /// The arguments, the deadline, and what the Open frame carries besides.
    pub(crate) fn split(self) -> (CallArgs, Option<Duration>, OwnedOutgoing) {
        let outgoing = OwnedOutgoing {
            metadata: self.metadata,
            trace: self.trace,
        };
        (self.args, self.timeout, outgoing)
    }
}

/// What an Open frame carries besides the arguments, owned by the opener's future.
pub(crate) struct OwnedOutgoing {
    metadata: Option<Arc<Metadata>>,
    trace: Option<TraceContext>,
}

impl OwnedOutgoing {
    pub(crate) fn borrowed(&self) -> Outgoing<'_> {
        Outgoing {
            metadata: self.metadata.as_deref(),
            trace: self.trace,
        }
    }
}

/// An opened stream, type-erased: an [`ItemStream`] of the call's item type.
pub(crate) type ErasedStream = Box<dyn Any + Send>;

type OpenFuture = Pin<Box<dyn Future<Output = Result<ErasedStream, Error>> + Send>>;
type Open = Box<dyn FnOnce(Arc<Connection>, OpenParts) -> OpenFuture + Send>;

/// Opens one stream call, once: shared by the request's copies (`Request::attempt`), of
/// which only the first to run opens it.
#[derive(Clone)]
pub(crate) struct StreamOpener(Arc<Mutex<Option<Open>>>);

impl StreamOpener {
    /// An opener that runs `open` with the connection and the request's parts.
    pub(crate) fn new<F, Fut>(open: F) -> Self
    where
        F: FnOnce(Arc<Connection>, OpenParts) -> Fut + Send + 'static,
        Fut: Future<Output = Result<ErasedStream, Error>> + Send + 'static,
    {
        let open: Open = Box::new(move |connection, parts| Box::pin(open(connection, parts)));
        Self(Arc::new(Mutex::new(Some(open))))
    }

    /// Opens the stream on `connection`.
    pub(crate) async fn open(
        &self,
        connection: Arc<Connection>,
        parts: OpenParts,
    ) -> Result<ErasedStream, Error> {
        // Only ever held to take the opener, so a poisoned lock is still consistent.
        let open = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        match open {
            Some(open) => open(connection, parts).await,
            None => Err(layer_error(
                "a layer sent a stream call on twice; a stream is opened once",
            )),
        }
    }
}

/// The typed stream in a reply to a stream call, or the error when a layer answered the call
/// with a reply of its own.
pub(crate) fn typed_stream<T: 'static>(
    stream: Option<ErasedStream>,
) -> Result<ItemStream<T>, Error> {
    match stream.map(|stream| stream.downcast::<ItemStream<T>>()) {
        Some(Ok(stream)) => Ok(*stream),
        _ => Err(layer_error(
            "a layer answered a stream call with a reply that carries no stream",
        )),
    }
}

fn layer_error(message: &str) -> Error {
    Error::Layer {
        code: ErrorCode::LayerFailed,
        cause: message.into(),
    }
}
