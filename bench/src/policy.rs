//! The policy cell: what a per-method policy costs a call. One wirecall server process; in
//! this process, the fixture's client over a plain channel (no policy: the path every method
//! without one takes) and over a channel whose run-time policies give every method of the
//! service a deadline, a concurrency limit it never reaches and a circuit breaker (the whole
//! policy path: the limiter, the deadline, the breaker's admission and record per call), in
//! the same run. Two shapes: W1's (one call at a time) and W2's (256 in flight on one
//! connection). Each client runs three rounds per shape, alternating; the median is kept.

use serde::Serialize;
use wirecall::policy::Policies;
use wirecall::{Channel, Codec};

use crate::load::{load, spawn_server, Round};
use crate::systems::wirecall::UserServiceClient;
use crate::systems::BenchResult;

/// The policies of the measured channel: every setting that does work per call.
const POLICIES: &str = "UserService.* timeout=30s concurrency=1000000 breaker=on";

/// One shape, both clients.
#[derive(Debug, Serialize)]
pub struct ShapeResult {
    /// `W1-1obj` or `W2-1x256`.
    pub shape: &'static str,
    /// Calls per round.
    pub calls: usize,
    /// Without a policy: calls/s.
    pub plain_calls_per_s: f64,
    /// With the policy: calls/s.
    pub policy_calls_per_s: f64,
    /// policy / plain calls/s.
    pub ratio: f64,
    /// Without a policy: p99 in microseconds.
    pub plain_p99_us: f64,
    /// With the policy: p99 in microseconds.
    pub policy_p99_us: f64,
    /// Client CPU per call without a policy, in microseconds.
    pub plain_cpu_us_per_call: f64,
    /// Client CPU per call with the policy, in microseconds.
    pub policy_cpu_us_per_call: f64,
}

/// Runs the cell and prints one JSON line per shape and a summary line.
pub async fn run(calls: usize) -> BenchResult<()> {
    let (_server, addr) = spawn_server().await?;
    let plain = UserServiceClient::new(
        Channel::builder()
            .codec(Codec::MessagePack)
            .connect(addr.as_str())
            .await?,
    );
    let with_policy = UserServiceClient::new(
        Channel::builder()
            .codec(Codec::MessagePack)
            .policies(Policies::parse(POLICIES)?)
            .connect(addr.as_str())
            .await?,
    );
    for (shape, in_flight, calls) in [("W1-1obj", 1, calls / 10), ("W2-1x256", 256, calls)] {
        let calls = calls.max(in_flight);
        load(&plain, calls / 10 + 1, in_flight).await?;
        load(&with_policy, calls / 10 + 1, in_flight).await?;
        let mut rounds: [Vec<Round>; 2] = Default::default();
        for _ in 0..3 {
            rounds[0].push(load(&plain, calls, in_flight).await?);
            rounds[1].push(load(&with_policy, calls, in_flight).await?);
        }
        let [mut plain_round, mut policy_round] = rounds.map(|mut runs| {
            runs.sort_by(|a, b| a.calls_per_s.total_cmp(&b.calls_per_s));
            runs.swap_remove(1)
        });
        let result = ShapeResult {
            shape,
            calls,
            plain_calls_per_s: plain_round.calls_per_s,
            policy_calls_per_s: policy_round.calls_per_s,
            ratio: policy_round.calls_per_s / plain_round.calls_per_s,
            plain_p99_us: plain_round.latencies.quantile_us(0.99).unwrap_or_default(),
            policy_p99_us: policy_round.latencies.quantile_us(0.99).unwrap_or_default(),
            plain_cpu_us_per_call: plain_round.cpu_us_per_call,
            policy_cpu_us_per_call: policy_round.cpu_us_per_call,
        };
        println!("{}", serde_json::to_string(&result)?);
        println!(
            "{shape}: with a policy / without: {:.0} / {:.0} calls/s = {:.3}; p99 {:.0} us vs \
             {:.0} us; client CPU per call {:.2} us vs {:.2} us",
            result.policy_calls_per_s,
            result.plain_calls_per_s,
            result.ratio,
            result.policy_p99_us,
            result.plain_p99_us,
            result.policy_cpu_us_per_call,
            result.plain_cpu_us_per_call,
        );
    }
    Ok(())
}
