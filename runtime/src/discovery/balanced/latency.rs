//! How long each method's calls take on a balanced channel, and from it the delay after which
//! a slow `#[idempotent]` call is sent to a second endpoint (hedged).
//!
//! The delay is the method's usual latency plus four times its usual deviation (exponential
//! moving averages over about the last 16 calls), never below [`MIN_HEDGE_DELAY`]: about
//! the latency only the slowest percent or so of healthy calls exceed, so a hedge costs few
//! extra calls, and a call stuck on a server that stopped answering is sent elsewhere after
//! about that long rather than after its deadline. Until a method has
//! [`SAMPLES_BEFORE_ADAPTING`] answers, the delay is [`INITIAL_HEDGE_DELAY`].

use std::sync::Mutex;
use std::time::Duration;

use crate::id_hash::IdMap;
use crate::method::MethodId;

/// The shortest hedge delay: below it, a hedge would race healthy calls for nothing.
pub(super) const MIN_HEDGE_DELAY: Duration = Duration::from_millis(2);
/// The delay while a method has too few answers to estimate its latency.
pub(super) const INITIAL_HEDGE_DELAY: Duration = Duration::from_millis(100);
/// Answers needed before the delay follows the method's latency.
const SAMPLES_BEFORE_ADAPTING: u32 = 16;
/// The weight of a new answer in the moving averages.
const WEIGHT: f64 = 1.0 / 16.0;

/// One method's latency, in seconds.
#[derive(Clone, Copy, Debug, Default)]
struct Estimate {
    mean: f64,
    deviation: f64,
    samples: u32,
}

impl Estimate {
    fn observe(&mut self, latency: f64) {
        if self.samples == 0 {
            self.mean = latency;
        } else {
            self.deviation += WEIGHT * ((latency - self.mean).abs() - self.deviation);
            self.mean += WEIGHT * (latency - self.mean);
        }
        self.samples = self.samples.saturating_add(1);
    }

    fn hedge_delay(&self) -> Duration {
        if self.samples < SAMPLES_BEFORE_ADAPTING {
            return INITIAL_HEDGE_DELAY;
        }
        Duration::from_secs_f64(self.mean + 4.0 * self.deviation).max(MIN_HEDGE_DELAY)
    }
}

/// The latency of every method called through one balanced channel.
#[derive(Default)]
pub(super) struct Latencies {
    by_method: Mutex<IdMap<u64, Estimate>>,
}

impl Latencies {
    /// A call of `method` was answered after `latency`.
    pub(super) fn observe(&self, method: MethodId, latency: Duration) {
        self.lock()
            .entry(method.get())
            .or_default()
            .observe(latency.as_secs_f64());
    }

    /// How long a call of `method` may take before it is hedged.
    pub(super) fn hedge_delay(&self, method: MethodId) -> Duration {
        self.lock()
            .get(&method.get())
            .map_or(INITIAL_HEDGE_DELAY, Estimate::hedge_delay)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IdMap<u64, Estimate>> {
        // Every update leaves one estimate consistent, so a poisoned map is usable.
        self.by_method.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METHOD: MethodId = MethodId::new(7);

    #[test]
    fn an_unknown_method_is_hedged_after_the_initial_delay() {
        let latencies = Latencies::default();
        assert_eq!(latencies.hedge_delay(METHOD), INITIAL_HEDGE_DELAY);
        latencies.observe(METHOD, Duration::from_millis(1));
        assert_eq!(latencies.hedge_delay(METHOD), INITIAL_HEDGE_DELAY);
    }

    #[test]
    fn the_delay_follows_the_latency_and_its_spread() {
        let latencies = Latencies::default();
        for i in 0..200 {
            let ms = if i % 2 == 0 { 8 } else { 12 };
            latencies.observe(METHOD, Duration::from_millis(ms));
        }
        let delay = latencies.hedge_delay(METHOD);
        // Mean about 10 ms, deviation about 2 ms: about 18 ms.
        assert!(
            delay > Duration::from_millis(15) && delay < Duration::from_millis(21),
            "{delay:?}"
        );
    }

    #[test]
    fn fast_calls_are_never_hedged_sooner_than_the_floor() {
        let latencies = Latencies::default();
        for _ in 0..100 {
            latencies.observe(METHOD, Duration::from_micros(50));
        }
        assert_eq!(latencies.hedge_delay(METHOD), MIN_HEDGE_DELAY);
    }
}
