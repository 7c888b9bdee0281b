//! The caller-facing [`Error`] (`caller.rs`), the wire [`ErrorCode`]s, the server-side
//! [`CallError`] (`call_error.rs`), and what each error says about its call ([`Outcome`],
//! `classify.rs`). This module only declares and re-exports.

mod call_error;
mod caller;
mod classify;

// Display rule for every error type of the runtime (Rust API guidelines, C-GOOD-ERR): a
// variant that wraps another error shows it in its own message and does not also return it
// from `source()`, so `anyhow`'s `{:#}` or a source-chain walk prints each cause once, and a
// plain `{}` still says why. The wrapped error stays reachable in the variant's field.

pub use call_error::CallError;
pub use caller::BoxError;
pub use caller::Error;
pub(crate) use classify::Failure;
pub use classify::Outcome;
pub use wirecall_wire::ErrorCode;
