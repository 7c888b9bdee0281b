//! The seam between generated server code and the runtime: [`Service`].

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use crate::codec::Codec;
use crate::error::CallError;
use crate::method::{MethodId, ServiceDescriptor};
use crate::server::request::Reply;
use crate::server::stream::upload_queue::Upload;

/// The future of one dispatched call, whatever its shape: its [`Reply`] (an encoded reply, or
/// an opened stream's items) or why there is none.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Result<Reply, CallError>> + Send>>;

/// A service the server can route calls to. `#[wirecall::service]` implements it for the
/// generated `{Trait}Server`; implementing it by hand is possible but rarely needed.
pub trait Service: Send + Sync + 'static {
    /// The service's name and methods; the server routes by the method ids listed here, and
    /// checks a call's frame (`Request` or `Open`) against the method's shape before it gets
    /// here.
    fn descriptor(&self) -> &'static ServiceDescriptor;

    /// Starts one call of `method`, of any shape: `payload` holds its encoded arguments in
    /// `codec`, and `upload` the items the client streams to it (none unless the method takes
    /// an upload). The call's [`CallContext`](crate::CallContext) is current while the
    /// returned future is polled. Decoding the arguments happens before the future is
    /// returned when they are small, so a bad payload fails without spawning anything.
    fn call(&self, method: MethodId, codec: Codec, payload: Bytes, upload: Upload) -> ReplyFuture;

    /// The service's schema, for the reflection service. Generated servers describe every
    /// argument and reply type; the default gives only the descriptor's names and marks the
    /// schema as not [`described`](crate::reflect::ServiceSchema::described).
    fn schema(&self) -> crate::reflect::schema::ServiceSchema {
        crate::reflect::schema::ServiceSchema::from_descriptor(self.descriptor())
    }
}
