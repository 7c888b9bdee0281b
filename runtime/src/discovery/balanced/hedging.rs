//! [`Hedging`]: whether a balanced channel sends a slow `#[idempotent]` call to a second
//! endpoint, and after how long.

use std::time::Duration;

use super::latency::Latencies;
use crate::client::stack::call::{Call, Kind};

/// When a balanced channel hedges a unary call of an `#[idempotent]` method: sends a copy to a
/// second endpoint once the first has not answered for a while. The first answer wins and
/// the other attempt is cancelled. Hedges spend the channel's retry budget
/// ([`retry_budget`](crate::discovery::BalancedChannelBuilder::retry_budget)), so a sick fleet
/// is never sent more than that share of extra calls. Streams, one-way calls and methods not
/// declared `#[idempotent]` are never hedged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hedging {
    /// After the method's usual latency plus four times its usual deviation (at least 2 ms;
    /// 100 ms until 16 calls of the method have been answered): the default.
    #[default]
    Adaptive,
    /// After this long, for every idempotent method.
    After(Duration),
    /// Never.
    Off,
}

impl Hedging {
    /// How long an attempt of `call` may take before it is hedged (`None`: it is not), with
    /// the channel's `latencies`.
    pub(super) fn delay(self, call: &Call<'_>, latencies: &Latencies) -> Option<Duration> {
        if !call.idempotent || call.kind != Kind::Unary {
            return None;
        }
        match self {
            Hedging::Adaptive => Some(latencies.hedge_delay(call.method)),
            Hedging::After(delay) => Some(delay),
            Hedging::Off => None,
        }
    }
}
