//! What the HTTP door costs: the gateway's calls/s, p50 and p99 against a direct wirecall
//! call on the JSON codec (the same payloads), from the medians of one run.

use std::fmt::Write as _;

use crate::cell::{Target, Workload};
use crate::measure::median;
use crate::report::CellResult;

/// The direct call the gateway is compared with: the same server, the same JSON bodies.
const DIRECT: Target = Target::Wirecall(wirecall::Codec::Json);

/// A markdown table of the gateway against [`DIRECT`], one row per unary cell both ran;
/// empty unless the run has both.
pub fn gateway_summary(results: &[CellResult], workloads: &[Workload]) -> String {
    let mut rows = String::new();
    for &workload in workloads {
        if !Target::Gateway.supports(workload) {
            continue;
        }
        let id = workload.id();
        let of = |target: Target, value: fn(&CellResult) -> Option<f64>| {
            let mut values: Vec<f64> = results
                .iter()
                .filter(|r| {
                    r.workload == id && r.system == target.system() && r.codec == target.codec()
                })
                .filter_map(value)
                .collect();
            median(&mut values)
        };
        let calls_per_s = |r: &CellResult| Some(r.calls_per_s);
        let p50 = |r: &CellResult| r.p50_us;
        let p99 = |r: &CellResult| r.p99_us;
        let (Some(gateway), Some(direct)) =
            (of(Target::Gateway, calls_per_s), of(DIRECT, calls_per_s))
        else {
            continue;
        };
        let ratio = |value: fn(&CellResult) -> Option<f64>| match (
            of(Target::Gateway, value),
            of(DIRECT, value),
        ) {
            (Some(g), Some(d)) if d > 0.0 => {
                format!("{} / {} = {:.2}", fmt(g), fmt(d), g / d)
            }
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            rows,
            "| {id} | {} / {} = {:.2} | {} | {} |",
            fmt(gateway),
            fmt(direct),
            gateway / direct.max(f64::MIN_POSITIVE),
            ratio(p50),
            ratio(p99),
        );
    }
    if rows.is_empty() {
        return rows;
    }
    format!(
        "the gateway (HTTP/1.1 keep-alive, JSON) against a direct wirecall call (JSON), \
         gateway / direct:\n\n| cell | calls/s | p50 us | p99 us |\n|---|---:|---:|---:|\n{rows}"
    )
}

fn fmt(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(system: &str, calls_per_s: f64, p99_us: f64) -> CellResult {
        serde_json::from_value(serde_json::json!({
            "system": system, "codec": "json", "workload": "W1-1obj", "calls": 10,
            "secs": 1.0, "calls_per_s": calls_per_s, "p50_us": 10.0, "p99_us": p99_us,
            "rss_server_kb": null, "rss_client_kb": null,
        }))
        .expect("a result")
    }

    #[test]
    fn the_gateway_is_divided_by_the_direct_call() {
        let results = [
            result("gateway", 5000.0, 400.0),
            result("wirecall", 20000.0, 100.0),
        ];
        let table = gateway_summary(&results, &Workload::ALL);
        assert!(
            table.contains(
                "| W1-1obj | 5000 / 20000 = 0.25 | 10.0 / 10.0 = 1.00 | 400 / 100 = 4.00 |"
            ),
            "{table}"
        );
        assert!(gateway_summary(&results[..1], &Workload::ALL).is_empty());
    }
}
