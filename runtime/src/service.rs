//! The seam between generated server code and the runtime.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use crate::codec::Codec;
use crate::error::CallError;
use crate::method::{MethodId, ServiceDescriptor};
use crate::stream::{OpenFuture, Upload};
use crate::transport::frame::FrameBuf;

/// The future of one dispatched call: the encoded reply (in a [`FrameBuf`] whose header the
/// connection fills in) or why there is none.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Result<FrameBuf, CallError>> + Send>>;

/// A service the server can route calls to. `#[wirecall::service]` implements it for the
/// generated `{Trait}Server`; implementing it by hand is possible but rarely needed.
pub trait Service: Send + Sync + 'static {
    /// The service's name and methods; the server routes by the method ids listed here.
    fn descriptor(&self) -> &'static ServiceDescriptor;

    /// Starts one call. Decoding the arguments happens before the future is returned, so a
    /// bad payload fails without spawning anything.
    fn call(&self, method: MethodId, codec: Codec, payload: Bytes) -> ReplyFuture;

    /// Opens one stream call (an `Open` frame, protocol version 3) of a method whose
    /// descriptor's shape is a stream; `upload` holds the items the client streams to it (none
    /// for a server stream). As with [`call`](Self::call), the arguments are decoded before the
    /// future is returned. The default has no streaming method.
    fn open(
        &self,
        method: MethodId,
        _codec: Codec,
        _payload: Bytes,
        _upload: Upload,
    ) -> OpenFuture {
        crate::stream::outgoing::unknown_stream(method)
    }

    /// The service's schema, for the reflection service. Generated servers describe every
    /// argument and reply type; the default gives only the descriptor's names and marks the
    /// schema as not [`described`](crate::reflect::ServiceSchema::described).
    fn schema(&self) -> crate::reflect::schema::ServiceSchema {
        crate::reflect::schema::ServiceSchema::from_descriptor(self.descriptor())
    }
}
