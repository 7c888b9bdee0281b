//! [`Endpoints`]: where the attempts of a call go, as the retry loop and hedging see them,
//! and [`HedgePlan`], how they say a call is hedged.

use std::future::Future;
use std::time::Duration;

use tower::retry::budget::TpsBudget;

use super::call::Call;
use crate::client::request::Reply;
use crate::error::{Error, Failure};

/// How a call is hedged: after how long without an answer another copy goes out, and how
/// many attempts it may send in all (the first included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HedgePlan {
    pub(crate) delay: Duration,
    pub(crate) attempts: u32,
}

/// Where the attempts of a call go: a direct channel's one server, or the endpoints of a
/// balanced channel.
pub(crate) trait Endpoints: Sync {
    /// The endpoint an attempt goes to.
    type Picked: Clone + Send + Sync;

    /// Whether a failed endpoint is left out for the rest of the call (a balanced channel
    /// moves on to another), rather than tried again after a pause.
    const MOVES_ON: bool;

    /// The endpoint for the next attempt, none of `tried`; `None` when none is left.
    fn pick(&self, call: &Call<'_>, tried: &[Self::Picked]) -> Option<Self::Picked>;

    /// Sends one attempt of `call` to `picked`.
    fn attempt<'a>(
        &'a self,
        picked: &'a Self::Picked,
        call: &'a Call<'a>,
        wire: Option<Duration>,
    ) -> impl Future<Output = Result<Reply, Error>> + Send + 'a;

    /// Records how an attempt on `picked` ended (`None`: it succeeded).
    fn report(&self, picked: &Self::Picked, failed: Option<(&Error, Failure)>);

    /// The error the caller gets for a failed attempt on `picked` (a balanced channel names
    /// the endpoint).
    fn label(&self, picked: &Self::Picked, error: Error, failure: Failure) -> Error;

    /// The budget retries and hedges spend, if the endpoints have one.
    fn budget(&self) -> Option<&TpsBudget>;

    /// How `call` is hedged: how long it may go unanswered before a copy of it is sent to
    /// another endpoint, and how many attempts it may send (`None`: it is not hedged).
    fn hedge(&self, _call: &Call<'_>) -> Option<HedgePlan> {
        None
    }

    /// An attempt of `call` was answered after `latency` (for the hedge delay).
    fn observe(&self, _call: &Call<'_>, _latency: Duration) {}

    /// The attempt on `picked` had not answered when a later copy of it on another endpoint
    /// did.
    fn report_slow(&self, _picked: &Self::Picked) {}

    /// A hedge (another copy of a slow call) goes to `picked`.
    fn report_hedge(&self, _picked: &Self::Picked) {}

    /// The error when no endpoint was left to try at all.
    fn none_left(&self) -> Error;
}
