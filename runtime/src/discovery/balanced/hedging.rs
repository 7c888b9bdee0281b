//! [`Hedging`]: whether a balanced channel sends a slow `#[idempotent]` call to a second
//! endpoint, and after how long; and how a call is hedged once its method's own `hedge`
//! policy is laid over it.

use std::time::Duration;

use super::latency::Latencies;
use crate::client::stack::call::{Call, Kind};
use crate::client::stack::endpoints::HedgePlan;
use crate::policy::{Hedge, DEFAULT_HEDGE_ATTEMPTS};

/// When a balanced channel hedges a unary call of an `#[idempotent]` method: sends a copy to a
/// second endpoint once the first has not answered for a while. The first answer wins and
/// the other attempt is cancelled. Hedges spend the channel's retry budget
/// ([`retry_budget`](crate::discovery::BalancedChannelBuilder::retry_budget)), so a sick fleet
/// is never sent more than that share of extra calls. Streams, one-way calls and methods not
/// declared `#[idempotent]` are never hedged. A method whose policy sets `hedge` (in its
/// trait, `#[wirecall(hedge(delay = "20ms", max = 3))]`, or at run time) is hedged as its
/// policy says instead.
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
    /// How `call` is hedged (`None`: it is not), with the channel's `latencies`: as its
    /// method's policy says when it sets `hedge`, as this setting says otherwise.
    pub(super) fn plan(self, call: &Call<'_>, latencies: &Latencies) -> Option<HedgePlan> {
        if !call.idempotent || call.kind != Kind::Unary {
            return None;
        }
        let (delay, attempts) = match call.hedge() {
            Some(Hedge::Off) => return None,
            Some(Hedge::On(config)) => (config.delay(), config.attempts()),
            None => match self {
                Hedging::Adaptive => (None, DEFAULT_HEDGE_ATTEMPTS),
                Hedging::After(delay) => (Some(delay), DEFAULT_HEDGE_ATTEMPTS),
                Hedging::Off => return None,
            },
        };
        (attempts > 1).then(|| HedgePlan {
            delay: delay.unwrap_or_else(|| latencies.hedge_delay(call.method)),
            attempts,
        })
    }
}
