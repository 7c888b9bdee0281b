//! Which endpoint a call goes to.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::method::fnv1a;

/// How a balanced [`Channel`](crate::Channel) spreads calls over its endpoints.
///
/// Every policy skips endpoints that are ejected (their connection failed and a probe has not
/// reconnected yet) and endpoints this call already failed on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Balance {
    /// Each endpoint in turn.
    RoundRobin,
    /// In turn, each endpoint as often as its registered weight, relative to the others.
    Weighted,
    /// Two endpoints at random, the one with fewer calls in flight (the default): adapts to
    /// slow or overloaded endpoints without any coordination between clients.
    #[default]
    PowerOfTwo,
    /// The endpoint owning the caller's key on a hash ring (64 points per unit of weight), so
    /// one key keeps going to one endpoint while the set is stable; when an endpoint leaves,
    /// only its keys move. Set the key with
    /// [`Channel::with_hash_key`](crate::Channel::with_hash_key); calls without
    /// a key go round-robin.
    ConsistentHash,
}

/// Ring points per unit of weight.
const POINTS_PER_WEIGHT: u32 = 64;
/// A cap on any endpoint's points, so a huge weight cannot make the ring huge.
const MAX_POINTS: u32 = 64 * 100;

/// What the picker needs to know about each endpoint.
pub(crate) trait Candidate {
    fn weight(&self) -> u32;
    fn in_flight(&self) -> usize;
}

/// The hash ring of a set of endpoints: `(point, index)` sorted by point.
#[derive(Debug, Default)]
pub(crate) struct Ring(Vec<(u64, usize)>);

impl Ring {
    pub(crate) fn build(addresses: &[(&str, u32)]) -> Self {
        let mut points = Vec::new();
        for (index, (address, weight)) in addresses.iter().enumerate() {
            let count = weight
                .max(&1)
                .saturating_mul(POINTS_PER_WEIGHT)
                .min(MAX_POINTS);
            for replica in 0..count {
                points.push((mix(fnv1a(format!("{address}#{replica}").as_bytes())), index));
            }
        }
        points.sort_unstable();
        Self(points)
    }
}

/// The hash of a caller's key on the ring.
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    mix(fnv1a(key))
}

/// splitmix64's finaliser: FNV-1a of similar short strings lands close together, this
/// spreads them over the ring.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Deterministic subsetting by rendezvous hashing: the `k` addresses with the highest
/// `hash(seed, address)`. Each client (seed) gets its own subset, every endpoint is in about
/// `k / n` of all subsets, and when an endpoint leaves only the clients that held it pick one
/// replacement. Returns indices into `addresses`, in their order.
pub(crate) fn subset(seed: u64, addresses: &[&str], k: usize) -> Vec<usize> {
    if addresses.len() <= k {
        return (0..addresses.len()).collect();
    }
    let mut scored: Vec<(u64, usize)> = addresses
        .iter()
        .enumerate()
        .map(|(index, address)| (mix(seed ^ fnv1a(address.as_bytes())), index))
        .collect();
    scored.sort_unstable_by(|a, b| b.cmp(a));
    let mut chosen: Vec<usize> = scored[..k].iter().map(|(_, index)| *index).collect();
    chosen.sort_unstable();
    chosen
}

impl Balance {
    /// The index of the endpoint to call, among those `usable` allows.
    pub(crate) fn pick<C: Candidate>(
        self,
        endpoints: &[C],
        ring: &Ring,
        counter: &AtomicUsize,
        key: Option<u64>,
        usable: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let n = endpoints.len();
        if n == 0 {
            return None;
        }
        match (self, key) {
            (Self::RoundRobin, _) | (Self::ConsistentHash, None) => {
                round_robin(n, counter, &usable)
            }
            (Self::Weighted, _) => {
                let total: u64 = (0..n)
                    .filter(|&i| usable(i))
                    .map(|i| u64::from(endpoints[i].weight().max(1)))
                    .sum();
                if total == 0 {
                    return None;
                }
                let mut target = counter.fetch_add(1, Ordering::Relaxed) as u64 % total;
                for i in (0..n).filter(|&i| usable(i)) {
                    let weight = u64::from(endpoints[i].weight().max(1));
                    if target < weight {
                        return Some(i);
                    }
                    target -= weight;
                }
                None
            }
            (Self::PowerOfTwo, _) => {
                if n == 1 {
                    return usable(0).then_some(0);
                }
                let a = fastrand::usize(..n);
                let mut b = fastrand::usize(..n - 1);
                if b >= a {
                    b += 1;
                }
                match (usable(a), usable(b)) {
                    (true, true) => Some(if endpoints[b].in_flight() < endpoints[a].in_flight() {
                        b
                    } else {
                        a
                    }),
                    (true, false) => Some(a),
                    (false, true) => Some(b),
                    (false, false) => round_robin(n, counter, &usable),
                }
            }
            (Self::ConsistentHash, Some(key)) => {
                let points = &ring.0;
                if points.is_empty() {
                    return None;
                }
                let start = points.partition_point(|(point, _)| *point < key);
                (0..points.len())
                    .map(|step| points[(start + step) % points.len()].1)
                    .find(|&i| i < n && usable(i))
            }
        }
    }
}

fn round_robin(n: usize, counter: &AtomicUsize, usable: &impl Fn(usize) -> bool) -> Option<usize> {
    let start = counter.fetch_add(1, Ordering::Relaxed);
    (0..n).map(|step| (start + step) % n).find(|&i| usable(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        weight: u32,
        in_flight: usize,
    }

    impl Candidate for Fake {
        fn weight(&self) -> u32 {
            self.weight
        }
        fn in_flight(&self) -> usize {
            self.in_flight
        }
    }

    fn fakes(weights: &[u32]) -> Vec<Fake> {
        weights
            .iter()
            .map(|&weight| Fake {
                weight,
                in_flight: 0,
            })
            .collect()
    }

    fn shares(balance: Balance, endpoints: &[Fake], calls: usize) -> Vec<usize> {
        let counter = AtomicUsize::new(0);
        let ring = Ring::default();
        let mut shares = vec![0; endpoints.len()];
        for _ in 0..calls {
            let i = balance
                .pick(endpoints, &ring, &counter, None, |_| true)
                .unwrap();
            shares[i] += 1;
        }
        shares
    }

    #[test]
    fn round_robin_gives_each_endpoint_the_same_share() {
        assert_eq!(
            shares(Balance::RoundRobin, &fakes(&[1, 1, 1]), 300),
            [100; 3]
        );
    }

    #[test]
    fn weighted_follows_the_weights() {
        assert_eq!(
            shares(Balance::Weighted, &fakes(&[1, 2, 7]), 1000),
            [100, 200, 700]
        );
    }

    #[test]
    fn power_of_two_avoids_the_busiest_endpoint() {
        let mut endpoints = fakes(&[1, 1, 1]);
        endpoints[0].in_flight = 50;
        let picks = shares(Balance::PowerOfTwo, &endpoints, 3000);
        // Endpoint 0 only wins a pair it is not in... never: it loses every comparison.
        assert_eq!(picks[0], 0, "{picks:?}");
        assert!(picks[1] > 1000 && picks[2] > 1000, "{picks:?}");
    }

    #[test]
    fn policies_skip_unusable_endpoints() {
        let endpoints = fakes(&[1, 1, 1]);
        let counter = AtomicUsize::new(0);
        let ring = Ring::build(&[("a:1", 1), ("b:1", 1), ("c:1", 1)]);
        for balance in [
            Balance::RoundRobin,
            Balance::Weighted,
            Balance::PowerOfTwo,
            Balance::ConsistentHash,
        ] {
            for key in 0..50u64 {
                let pick = balance.pick(
                    &endpoints,
                    &ring,
                    &counter,
                    Some(key_hash(&key.to_le_bytes())),
                    |i| i == 1,
                );
                assert_eq!(pick, Some(1), "{balance:?}");
            }
            assert_eq!(
                balance.pick(&endpoints, &ring, &counter, None, |_| false),
                None
            );
        }
    }

    #[test]
    fn subsets_spread_clients_evenly_and_move_little_when_an_endpoint_leaves() {
        let addresses: Vec<String> = (0..100)
            .map(|i| format!("10.0.{}.{}:7000", i / 10, i))
            .collect();
        let all: Vec<&str> = addresses.iter().map(String::as_str).collect();
        let clients = 1000u64;
        let mut per_endpoint = vec![0usize; all.len()];
        let mut moved = 0;
        for client in 0..clients {
            let seed = mix(client);
            let chosen = subset(seed, &all, 10);
            assert_eq!(chosen.len(), 10);
            for &i in &chosen {
                per_endpoint[i] += 1;
            }
            // Endpoint 0 leaves: a client that did not hold it keeps its subset exactly.
            let without: Vec<&str> = all[1..].to_vec();
            let after: Vec<&str> = subset(seed, &without, 10)
                .iter()
                .map(|&i| without[i])
                .collect();
            let before: Vec<&str> = chosen.iter().map(|&i| all[i]).collect();
            if before.contains(&all[0]) {
                moved += 1;
                assert_eq!(after.iter().filter(|a| !before.contains(a)).count(), 1);
            } else {
                assert_eq!(before, after);
            }
        }
        // 1000 clients x 10 = 10,000 connections over 100 endpoints: 100 each on average.
        let (min, max) = (
            per_endpoint.iter().min().unwrap(),
            per_endpoint.iter().max().unwrap(),
        );
        assert!(*min >= 60 && *max <= 140, "min {min}, max {max}");
        assert_eq!(moved, per_endpoint[0]);
    }

    #[test]
    fn consistent_hash_moves_only_the_keys_of_a_removed_endpoint() {
        let all = Ring::build(&[("a:1", 1), ("b:1", 1), ("c:1", 1)]);
        let endpoints = fakes(&[1, 1, 1]);
        let counter = AtomicUsize::new(0);
        let mut per_endpoint = [0usize; 3];
        let mut moved = 0;
        for key in 0..3000u32 {
            let hash = key_hash(format!("user-{key}").as_bytes());
            let before = Balance::ConsistentHash
                .pick(&endpoints, &all, &counter, Some(hash), |_| true)
                .unwrap();
            per_endpoint[before] += 1;
            // The same key, with endpoint 2 gone.
            let after = Balance::ConsistentHash
                .pick(&endpoints, &all, &counter, Some(hash), |i| i != 2)
                .unwrap();
            if before != 2 {
                assert_eq!(
                    before, after,
                    "key {key} moved although its endpoint stayed"
                );
            } else {
                moved += 1;
            }
        }
        // 64 points per endpoint spread 3000 keys within a few percent of a third each.
        for share in per_endpoint {
            assert!((700..=1300).contains(&share), "{per_endpoint:?}");
        }
        assert_eq!(moved, per_endpoint[2]);
    }
}
