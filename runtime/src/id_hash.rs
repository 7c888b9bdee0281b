//! A cheap hasher for maps keyed by request ids and method ids.
//!
//! Request ids are small sequential numbers and method ids are already hashes, so SipHash's
//! protection buys nothing here: one multiply spreads sequential ids over the table. A hostile
//! peer choosing colliding request ids can only slow its own connection, whose table is
//! bounded by `max_in_flight_per_connection`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative (Fibonacci) hashing constant: 2^64 / golden ratio, odd.
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Clone, Copy, Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(SPREAD);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = (self.0 ^ id).wrapping_mul(SPREAD);
    }
}

/// A `HashMap` keyed by ids, hashed with [`IdHasher`].
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_spread_over_the_top_bits() {
        let tops: std::collections::HashSet<u64> = (1..=128u64)
            .map(|id| {
                let mut hasher = IdHasher::default();
                hasher.write_u64(id);
                hasher.finish() >> 57
            })
            .collect();
        assert!(
            tops.len() > 64,
            "only {} distinct control bytes",
            tops.len()
        );
    }
}
