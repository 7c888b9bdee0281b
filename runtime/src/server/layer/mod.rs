//! The server's built-in layers, which the builder's shorthands add
//! ([`ServerBuilder::authorize`](super::ServerBuilder::authorize),
//! [`ServerBuilder::max_in_flight`](super::ServerBuilder::max_in_flight)), and the innermost
//! service that runs the handlers. They are tower layers like any other, composed without
//! boxing: a server without layers of its own pays nothing for the seam.

mod authorize;
mod dispatch;
mod max_in_flight;

pub(crate) use authorize::AuthorizeLayer;
pub(crate) use dispatch::{Core, Dispatch};
pub(crate) use max_in_flight::{CallBudget, InFlightLimitLayer};

/// The service every call goes through: authorisation, the in-flight limit, then the user's
/// layers (if any) around the dispatcher. Each piece is always ready, so the server calls it
/// without waiting for readiness; the user's layers are awaited inside [`Core`].
pub(crate) type Pipeline = authorize::Authorize<max_in_flight::InFlightLimit<Core>>;
