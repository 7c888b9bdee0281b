//! Whether a call's `tracing` span is worth building at all.
//!
//! Both sides make a `wirecall.call` span per call. With no subscriber interested in
//! `DEBUG`, the span macro still builds a disabled span value, evaluates its fields for the
//! `log` fallback and drops it again: a hundred or more instructions per call for nothing.
//! This is the same level check the macro makes first, made before it, so that such a call
//! builds no span value at all; when it passes, the macro decides per callsite as always.
//!
//! The `log` fallback (tracing's `log` feature, which any dependency may turn on) writes a
//! disabled span's fields as `log` records when `log` is at `DEBUG` or finer: then the span
//! is still built, as before, so those records do not go missing.

use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
use tracing::Level;

/// Whether some subscriber, or the `log` fallback, may want a call's span: `false` means
/// nothing would see it.
#[inline]
pub(crate) fn wanted() -> bool {
    (Level::DEBUG <= STATIC_MAX_LEVEL && Level::DEBUG <= LevelFilter::current())
        || log::max_level() >= log::LevelFilter::Debug
}
