//! How `bench` prints what it measured: one header line, then indented figures, each label
//! padded to one column so that runs can be compared line by line.

use std::time::Duration;

use crate::error::CliError;
use crate::output::out;

/// Prints `label` and its figures in the report's column (`  throughput  ...`).
pub fn line(label: &str, figures: &str) -> Result<(), CliError> {
    out!("  {label:<11} {figures}")
}

/// Prints the run's wall time.
pub fn total(elapsed: Duration) -> Result<(), CliError> {
    line("total", &format!("{:.3} s", elapsed.as_secs_f64()))
}

/// `count` things per second of `elapsed`, rounded: `23348 calls/s`.
pub fn rate(count: u64, elapsed: Duration, unit: &str) -> String {
    format!("{:.0} {unit}/s", count as f64 / elapsed.as_secs_f64())
}

/// Prints the percentiles of `latencies` under `label` (nothing when there are none):
/// `min .. p50 .. p90 .. p99 .. p99.9 .. max`, each the smallest sample at or above that
/// share of the samples.
pub fn percentiles(label: &str, latencies: &mut [Duration]) -> Result<(), CliError> {
    if latencies.is_empty() {
        return Ok(());
    }
    latencies.sort_unstable();
    let at = |share: f64| {
        let rank = (latencies.len() as f64 * share).ceil() as usize;
        millis(latencies[rank.clamp(1, latencies.len()) - 1])
    };
    line(
        label,
        &format!(
            "min {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            millis(latencies[0]),
            at(0.50),
            at(0.90),
            at(0.99),
            at(0.999),
            millis(latencies[latencies.len() - 1])
        ),
    )
}

fn millis(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_per_second_of_the_elapsed_time() {
        assert_eq!(
            rate(300, Duration::from_millis(1500), "items"),
            "200 items/s"
        );
    }

    #[test]
    fn millis_keep_microseconds() {
        assert_eq!(millis(Duration::from_micros(1_234)), "1.234 ms");
    }
}
