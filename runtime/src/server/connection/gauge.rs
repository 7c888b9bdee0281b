//! The in-flight gauge's share of one running call or stream.

/// Takes a call (or stream) off a gauge when dropped, however its task ends.
pub(super) struct InFlightGauge(pub(super) ::metrics::Gauge);

impl Drop for InFlightGauge {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}
