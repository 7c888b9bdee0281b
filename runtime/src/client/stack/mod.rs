//! The client's one call stack: every call of every shape (unary, one-way, server stream,
//! upload, bidirectional), through a direct channel or a balanced one, goes down the same
//! stages, each written once:
//!
//! ```text
//! Channel::call / notify / open_stream / open_upload / call_raw / notify_raw
//!   1. policy        the method's resolved policy (declared, then overridden)   policy/table.rs
//!   2. concurrency   one place under the method's limit (a stream keeps it)     limit.rs
//!   3. deadline      set once: the handle's timeout or the policy's             stack/deadline.rs
//!   4. call layers   a balanced channel's own layers, once per call             layers/next.rs
//!   5. retry loop    attempts, failover, the retry budget                       stack/retry.rs
//!   6. endpoint      the server an attempt goes to (one, or the balancer's)     discovery/balanced/
//!   7. breaker       the method's circuit on that endpoint                      client/endpoint/
//!   8. layers        the channel options' layers, once per attempt              layers/next.rs
//!   9. connection    Request, Notify or Open frame; the reply or the stream     client/endpoint/
//! ```
//!
//! Layout: this module is the stack's state ([`Core`]) and stages 1, 3 and 4 (the handle,
//! `channel.rs`, holds stage 2 around them); `call.rs` the [`Call`](call::Call) every stage
//! reads; `deadline.rs` the one deadline; `retry.rs` the one retry loop; `hop.rs` how a stage
//! hands the call to the next; `endpoints.rs` where the retry loop's attempts go, and
//! `balanced_route.rs` what a channel asks of a balanced channel's endpoints.

pub(crate) mod balanced_route;
pub(crate) mod call;
pub(crate) mod deadline;
pub(crate) mod endpoints;
mod hedge;
pub(crate) mod hop;
pub(crate) mod retry;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::TryFutureExt;
use tower::retry::budget::TpsBudget;

use self::balanced_route::BalancedRoute;
use self::call::{Call, Kind};
use self::deadline::{shorter, Deadline};
use self::endpoints::Endpoints;
use self::hop::Hop;
use super::args::UploadSlot;
use super::args::{CallArgs, SharedArgs};
use super::declared::Method;
use super::endpoint::Endpoint;
use super::request::{Reply, Request};
use crate::codec::Codec;
use crate::error::{Error, Failure};
use crate::layers::next::Next;
use crate::metadata::Metadata;
use crate::policy::table::PolicyTable;

/// What every clone of a channel shares: the policies, the call layers, and where calls go.
pub(crate) struct Core {
    pub(crate) policies: PolicyTable,
    /// Start a trace for calls made outside one.
    pub(crate) trace: bool,
    /// Layers run once per call, around the retry loop (a balanced channel's own).
    pub(crate) layers: Option<Next<Request, Reply>>,
    /// Some layer in the stack takes the call as an owned [`Request`]: the arguments are made
    /// shareable where the call starts (without layers, they stay where they are).
    pub(crate) erases_args: bool,
    pub(crate) route: Route,
}

/// Where a channel's calls go.
pub(crate) enum Route {
    /// One server.
    Direct(Arc<Endpoint>),
    /// The endpoints of a service, balanced.
    Balanced(Arc<dyn BalancedRoute>),
}

/// A call as the handle starts it, before the stack's stages: what the caller gave, and the
/// handle's settings.
pub(crate) struct Start<'a> {
    pub(crate) method: &'a Method,
    pub(crate) kind: Kind,
    pub(crate) args: &'a dyn SharedArgs,
    pub(crate) shared_args: Option<&'a CallArgs>,
    pub(crate) upload: Option<&'a UploadSlot>,
    pub(crate) raw_codec: Option<Codec>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) metadata: Option<&'a Arc<Metadata>>,
    pub(crate) hash_key: Option<u64>,
    pub(crate) uncompressed: bool,
}

impl Core {
    /// Stages 1 and 3: the call, with its method's resolved policy and its deadline (set
    /// once, here).
    pub(crate) fn call<'a>(&'a self, start: Start<'a>) -> Call<'a> {
        let policy = self.policies.state(start.method);
        let timeout = shorter(
            start.timeout,
            policy.as_ref().and_then(|state| state.policy.timeout()),
        );
        Call {
            method: start.method.id(),
            kind: start.kind,
            args: start.args,
            shared_args: start.shared_args,
            upload: start.upload,
            deadline: Deadline::starting(timeout),
            metadata: start.metadata,
            trace: call::trace_of(start.metadata.map(|m| &**m), self.trace),
            idempotent: start.method.is_idempotent(),
            hash_key: call::hash_key_of(start.hash_key),
            uncompressed: start.uncompressed,
            raw_codec: start.raw_codec,
            policy,
        }
    }

    /// Stage 4 on: the call layers, if any, then the retry loop over the route. (Stage 2, the
    /// concurrency limit, is the caller's: a unary call holds its place while this runs, a
    /// stream for as long as it is open.)
    ///
    /// Inlined so that the future is built in its caller's state instead of being returned
    /// and then copied there (twice: 224 bytes each, measured).
    #[inline(always)]
    pub(crate) fn send<'a>(
        &'a self,
        call: &'a Call<'a>,
    ) -> Hop<'a, impl Future<Output = Result<Reply, Error>> + Send + 'a, Result<Reply, Error>> {
        match (&self.layers, &self.route) {
            (None, Route::Direct(endpoint)) => Hop::inline(retry::send(&**endpoint, call)),
            (None, Route::Balanced(route)) => Hop::from_box(route.send(call)),
            (Some(layers), _) => Hop::boxed(
                layers
                    .call_shared(Request::from_call(call))
                    .map_err(Error::from_layer),
            ),
        }
    }
}

/// A direct channel's one server, as the retry loop sees it.
impl Endpoints for Endpoint {
    type Picked = ();

    const MOVES_ON: bool = false;

    fn pick(&self, _call: &Call<'_>, _tried: &[()]) -> Option<()> {
        Some(())
    }

    fn attempt<'a>(
        &'a self,
        _picked: &'a (),
        call: &'a Call<'a>,
        wire: Option<Duration>,
    ) -> impl Future<Output = Result<Reply, Error>> + Send + 'a {
        Endpoint::attempt(self, call, wire)
    }

    fn report(&self, _picked: &(), _failed: Option<(&Error, Failure)>) {}

    fn label(&self, _picked: &(), error: Error, _failure: Failure) -> Error {
        error
    }

    fn budget(&self) -> Option<&TpsBudget> {
        None
    }

    fn none_left(&self) -> Error {
        // `pick` always has the one server.
        Error::Config("a direct channel has no server to call".to_owned())
    }
}
