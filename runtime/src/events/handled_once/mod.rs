//! Handled once: an opt-in window of the event ids a subscription has handled, so that a
//! redelivered event whose id is in it is acknowledged without running the handler again.
//!
//! Delivery stays at least once; the window only turns the redeliveries it sees into no-ops.
//! An id is recorded once its handler succeeded, just before the acknowledgement is sent (so
//! an acknowledgement lost with the connection is exactly the case it catches); a failed run
//! records nothing and is retried as without the window. Two deliveries of one id on one
//! consumer at once do not both run: the second waits for the first and is then skipped if
//! the first succeeded, run if it failed.
//!
//! `window.rs` is the setting ([`HandledOnce`]) and its defaults, `store.rs` the seam
//! ([`HandledIdStore`], for a store shared between processes), `in_memory.rs` the default
//! store, bounded by count and by age, and `gate.rs` one consumer's side: claiming an id
//! while it runs, asking and recording.

mod gate;
mod in_memory;
mod store;
mod window;

pub(crate) use gate::HandledOnceGate;
pub use store::{HandledIdFuture, HandledIdStore, HandledIdStoreError};
pub use window::{HandledOnce, DEFAULT_HANDLED_AGE, DEFAULT_HANDLED_IDS};
