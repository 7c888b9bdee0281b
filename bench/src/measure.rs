//! Latency percentiles and the process's peak memory.

use std::time::Duration;

/// Call latencies in nanoseconds, in no particular order.
#[derive(Debug, Default)]
pub struct Latencies(Vec<u64>);

impl Latencies {
    /// Room for `calls` samples, so recording never reallocates while timing.
    pub fn with_capacity(calls: usize) -> Self {
        Self(Vec::with_capacity(calls))
    }

    /// Adds one sample.
    pub fn record(&mut self, latency: Duration) {
        self.0
            .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Samples recorded.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Adds every sample of `other`.
    pub fn extend(&mut self, other: Latencies) {
        self.0.extend(other.0);
    }

    /// The `q` quantile (0.0..=1.0) in microseconds, `None` without samples.
    pub fn quantile_us(&mut self, q: f64) -> Option<f64> {
        if self.0.is_empty() {
            return None;
        }
        self.0.sort_unstable();
        let rank = ((self.0.len() - 1) as f64 * q).round() as usize;
        Some(self.0[rank] as f64 / 1e3)
    }
}

/// The peak resident set size of this process in KiB (`VmHWM` in `/proc/self/status`), or
/// `None` where that file does not exist.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time this process's live threads have used, in nanoseconds (the sum of the first
/// field of `/proc/self/task/*/schedstat`), or `None` where that is not readable. Threads that
/// exited are not counted, so compare readings taken around work done by long-lived threads
/// (a runtime's workers).
pub fn process_cpu_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        // A thread that exits between the listing and the read is skipped.
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// The median of `values` (the mean of the middle two for an even count), `None` if empty.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_pick_ranked_samples() {
        let mut latencies = Latencies::default();
        for us in 1..=100 {
            latencies.record(Duration::from_micros(us));
        }
        assert_eq!(latencies.quantile_us(0.5), Some(51.0));
        assert_eq!(latencies.quantile_us(0.99), Some(99.0));
        assert_eq!(Latencies::default().quantile_us(0.5), None);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn process_cpu_time_counts_this_threads_work() {
        // Other test threads may exit meanwhile (and take their time out of the sum), so
        // compare with this thread's own time rather than with an earlier reading.
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let own: u64 = std::fs::read_to_string("/proc/thread-self/schedstat")
            .expect("schedstat is readable on linux")
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse().ok())
            .expect("a number of nanoseconds");
        assert!(own > 0, "{x}");
        assert!(process_cpu_ns().expect("readable") >= own);
    }

    #[test]
    fn peak_rss_is_readable_on_linux() {
        assert!(peak_rss_kb().is_some_and(|kb| kb > 0));
    }
}
