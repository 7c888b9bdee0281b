//! How long registry operations wait before they are tried again.

use std::time::Duration;

/// The first wait before a failed registry operation is tried again; it doubles up to
/// [`MAX_RETRY_DELAY`].
pub(super) const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
/// The longest wait between two tries of a failed registry operation.
pub(super) const MAX_RETRY_DELAY: Duration = Duration::from_secs(2);
