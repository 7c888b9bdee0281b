//! The gateway's time limit on one HTTP call ([`GatewayBuilder::time_limit`]), counted from
//! the call's start: the steps of a call (reading an upload's arguments, opening the stream,
//! waiting for the first item) share it rather than each getting a fresh one.
//!
//! [`GatewayBuilder::time_limit`]: crate::GatewayBuilder::time_limit

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::GatewayError;

/// The time left to one call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallTimeLimit {
    limit: Duration,
    /// `None` for a limit too far away to be a point in time.
    deadline: Option<Instant>,
}

impl CallTimeLimit {
    /// A call that starts now and may take `limit`.
    pub(crate) fn starting_now(limit: Duration) -> Self {
        Self {
            limit,
            deadline: Instant::now().checked_add(limit),
        }
    }

    /// The limit.
    pub(crate) fn limit(self) -> Duration {
        self.limit
    }

    /// Runs `step` of the call, failing with [`GatewayError::TimeLimit`] at the deadline.
    pub(crate) async fn bound<F: Future>(self, step: F) -> Result<F::Output, GatewayError> {
        match self.deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, step)
                .await
                .map_err(|_| GatewayError::TimeLimit(self.limit)),
            None => Ok(step.await),
        }
    }
}
