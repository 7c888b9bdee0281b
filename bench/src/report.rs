//! Results: the JSON line of one cell, and the markdown table of medians and ratios.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::cell::{Target, TarpcFormat, Workload};
use crate::measure::median;

/// One run of one cell, as printed (one JSON line) and appended to the results file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellResult {
    /// `wirecall`, `tarpc` or `raw-tcp`.
    pub system: String,
    /// `json`, `msgpack`, `protobuf`, `bincode` or `none`.
    pub codec: String,
    /// The workload variant id (`W1-1obj`, `W2-1x256`, `W3`, ...).
    pub workload: String,
    /// Calls (W3: connections, W6: one-way messages) in the timed phase.
    pub calls: u64,
    /// Length of the timed phase.
    pub secs: f64,
    /// `calls / secs`.
    pub calls_per_s: f64,
    /// Median call latency (W3: connect + handshake + one call).
    pub p50_us: Option<f64>,
    /// 99th-percentile call latency.
    pub p99_us: Option<f64>,
    /// 99.9th-percentile call latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_us: Option<f64>,
    /// The slowest call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
    /// The server process's peak RSS.
    pub rss_server_kb: Option<u64>,
    /// The client process's peak RSS.
    pub rss_client_kb: Option<u64>,
    /// W5: payload bytes carried per second, in 10^9 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_gb_per_s: Option<f64>,
    /// W4 and W6: time to open every connection (not part of `secs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_secs: Option<f64>,
    /// W3: rounds in `secs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u64>,
    /// One-way messages the server counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_counted: Option<u64>,
    /// W8: the client process's heap allocations per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocs_client_per_call: Option<f64>,
    /// W8: the server process's heap allocations per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocs_server_per_call: Option<f64>,
    /// Which repetition of the cell this is, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
}

/// One row of the table: a label and how to read it from a result.
struct Metric {
    label: &'static str,
    value: fn(&CellResult) -> Option<f64>,
}

const P50: Metric = Metric {
    label: "p50 us",
    value: |r| r.p50_us,
};
const P99: Metric = Metric {
    label: "p99 us",
    value: |r| r.p99_us,
};
const SERVER_RSS: Metric = Metric {
    label: "server peak RSS MB",
    value: |r| r.rss_server_kb.map(|kb| kb as f64 / 1024.0),
};
const CLIENT_RSS: Metric = Metric {
    label: "client peak RSS MB",
    value: |r| r.rss_client_kb.map(|kb| kb as f64 / 1024.0),
};

fn metrics(workload: Workload) -> Vec<Metric> {
    match workload {
        Workload::Sequential(_) => vec![
            Metric {
                label: "ms per 10,000 calls",
                value: |r| Some(r.secs * 1e7 / r.calls.max(1) as f64),
            },
            P50,
            P99,
        ],
        Workload::Pipelined { .. } => vec![
            Metric {
                label: "calls/s",
                value: |r| Some(r.calls_per_s),
            },
            P50,
            P99,
        ],
        Workload::Churn => vec![
            Metric {
                label: "total s",
                value: |r| Some(r.secs),
            },
            Metric {
                label: "ms/round",
                value: |r| r.rounds.map(|n| r.secs * 1e3 / n.max(1) as f64),
            },
            Metric {
                label: "p50 us per connect+call",
                value: |r| r.p50_us,
            },
            Metric {
                label: "p99 us per connect+call",
                value: |r| r.p99_us,
            },
        ],
        Workload::Held => vec![
            Metric {
                label: "call-phase s",
                value: |r| Some(r.secs),
            },
            SERVER_RSS,
            CLIENT_RSS,
            P50,
            P99,
        ],
        Workload::Bulk => vec![
            Metric {
                label: "GB/s payload",
                value: |r| r.payload_gb_per_s,
            },
            P99,
        ],
        Workload::OneWay => vec![
            Metric {
                label: "messages/s",
                value: |r| Some(r.calls_per_s),
            },
            SERVER_RSS,
        ],
        Workload::Allocations => vec![
            Metric {
                label: "client allocations per call",
                value: |r| r.allocs_client_per_call,
            },
            Metric {
                label: "server allocations per call",
                value: |r| r.allocs_server_per_call,
            },
            Metric {
                label: "allocations per call, client + server",
                value: |r| Some(r.allocs_client_per_call? + r.allocs_server_per_call?),
            },
            Metric {
                label: "the same less the user's values",
                value: |r| {
                    let total = r.allocs_client_per_call? + r.allocs_server_per_call?;
                    Some(total - user_value_allocations(&r.system))
                },
            },
        ],
        Workload::BesideBigRequests { .. } => vec![
            Metric {
                label: "small calls/s",
                value: |r| Some(r.calls_per_s),
            },
            P50,
            P99,
            Metric {
                label: "p99.9 us",
                value: |r| r.p999_us,
            },
            Metric {
                label: "max us",
                value: |r| r.max_us,
            },
        ],
    }
}

/// Allocations per W8 call that belong to the user's own values, not to the RPC system: the
/// caller builds the argument (`UserModel::name`, one `String`), the server decodes it (one),
/// the client decodes the reply (one). The server's handler returns its argument, so the
/// reply costs nothing more. Raw TCP carries no values.
pub fn user_value_allocations(system: &str) -> f64 {
    if system == Target::RawTcp.system() {
        0.0
    } else {
        3.0
    }
}

/// The systems whose ratios the table shows: same codec on both sides of each ratio.
const WIRECALL: Target = Target::Wirecall(wirecall::Codec::MessagePack);
const WIRECALL_PROTOBUF: Target = Target::Wirecall(wirecall::Codec::Protobuf);
const TARPC: Target = Target::Tarpc(TarpcFormat::MessagePack);

/// The markdown table: per workload variant and metric, the median over the repeats of each
/// target, then wirecall (MessagePack) / raw TCP, tarpc (MessagePack) / wirecall
/// (MessagePack) and tonic / wirecall (Protobuf, tonic's codec) from the same medians.
pub fn markdown_table(results: &[CellResult], workloads: &[Workload]) -> String {
    let mut grouped: HashMap<(String, String, String), Vec<&CellResult>> = HashMap::new();
    for result in results {
        grouped
            .entry((
                result.workload.clone(),
                result.system.clone(),
                result.codec.clone(),
            ))
            .or_default()
            .push(result);
    }
    let median_of = |workload: Workload, target: Target, metric: &Metric| -> Option<f64> {
        let key = (
            workload.id(),
            target.system().to_owned(),
            target.codec().to_owned(),
        );
        let mut values: Vec<f64> = grouped
            .get(&key)?
            .iter()
            .filter_map(|r| (metric.value)(r))
            .collect();
        median(&mut values)
    };

    let mut out = String::new();
    out.push_str("| cell | metric |");
    for target in Target::ALL {
        let _ = write!(out, " {target} |");
    }
    out.push_str(" wirecall / raw | tarpc / wirecall | tonic / wirecall protobuf |\n|---|---|");
    for _ in Target::ALL {
        out.push_str("---:|");
    }
    out.push_str("---:|---:|---:|\n");
    for &workload in workloads {
        for metric in metrics(workload) {
            let _ = write!(out, "| {} | {} |", workload.id(), metric.label);
            for target in Target::ALL {
                let cell = if target.supports(workload) {
                    median_of(workload, target, &metric).map_or("-".to_owned(), format_value)
                } else {
                    "n/a".to_owned()
                };
                let _ = write!(out, " {cell} |");
            }
            let ratio = |numerator: Target, denominator: Target| {
                // The raw floor carries no values and allocates (almost) nothing: a ratio to
                // it says nothing.
                let no_floor = workload == Workload::Allocations && denominator == Target::RawTcp;
                if !numerator.supports(workload) || no_floor {
                    return "n/a".to_owned();
                }
                match (
                    median_of(workload, numerator, &metric),
                    median_of(workload, denominator, &metric),
                ) {
                    (Some(n), Some(d)) if d > 0.0 => format!("{:.2}", n / d),
                    _ => "-".to_owned(),
                }
            };
            let _ = writeln!(
                out,
                " {} | {} | {} |",
                ratio(WIRECALL, Target::RawTcp),
                ratio(TARPC, WIRECALL),
                ratio(Target::Tonic, WIRECALL_PROTOBUF)
            );
        }
    }
    out
}

/// Three significant figures or so, with k/M suffixes for large rates.
fn format_value(value: f64) -> String {
    match value.abs() {
        v if v >= 1e6 => format!("{:.2}M", value / 1e6),
        v if v >= 1e4 => format!("{:.1}k", value / 1e3),
        v if v >= 100.0 => format!("{value:.0}"),
        v if v >= 10.0 => format!("{value:.1}"),
        v if v >= 1.0 => format!("{value:.2}"),
        _ => format!("{value:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(target: Target, workload: Workload, secs: f64) -> CellResult {
        CellResult {
            system: target.system().to_owned(),
            codec: target.codec().to_owned(),
            workload: workload.id(),
            calls: 10_000,
            secs,
            calls_per_s: 10_000.0 / secs,
            p50_us: Some(secs * 100.0),
            p99_us: Some(secs * 200.0),
            p999_us: None,
            max_us: None,
            rss_server_kb: Some(1024),
            rss_client_kb: Some(2048),
            payload_gb_per_s: None,
            connect_secs: None,
            rounds: None,
            server_counted: None,
            allocs_client_per_call: None,
            allocs_server_per_call: None,
            repeat: None,
        }
    }

    #[test]
    fn table_shows_medians_and_ratios() {
        let w1 = Workload::Sequential(crate::model::Case::User);
        let results = vec![
            result(Target::RawTcp, w1, 0.2),
            result(Target::RawTcp, w1, 0.3),
            result(Target::RawTcp, w1, 0.25),
            result(WIRECALL, w1, 0.5),
            result(TARPC, w1, 1.0),
        ];
        let table = markdown_table(&results, &[w1, Workload::OneWay]);
        let row = table
            .lines()
            .find(|line| line.starts_with("| W1-1obj | ms per 10,000"))
            .expect("a W1 row");
        assert!(row.contains("| 250 |"), "{row}");
        assert!(row.ends_with("| 2.00 | 2.00 | - |"), "{row}");
        let one_way = table
            .lines()
            .find(|line| line.starts_with("| W6 | messages/s"))
            .expect("a W6 row");
        assert!(one_way.contains("n/a"), "{one_way}");
    }

    #[test]
    fn tonic_is_compared_with_wirecall_protobuf() {
        let w1 = Workload::Sequential(crate::model::Case::User);
        let results = vec![
            result(WIRECALL_PROTOBUF, w1, 0.5),
            result(Target::Tonic, w1, 1.5),
        ];
        let table = markdown_table(&results, &[w1, Workload::OneWay]);
        let row = table
            .lines()
            .find(|line| line.starts_with("| W1-1obj | ms per 10,000"))
            .expect("a W1 row");
        assert!(row.ends_with("| - | - | 3.00 |"), "{row}");
        let one_way = table
            .lines()
            .find(|line| line.starts_with("| W6 | messages/s"))
            .expect("a W6 row");
        assert!(one_way.ends_with("| n/a |"), "{one_way}");
    }

    #[test]
    fn allocation_rows_add_both_processes_and_drop_the_users_values() {
        let mut wirecall = result(WIRECALL, Workload::Allocations, 1.0);
        wirecall.allocs_client_per_call = Some(4.0);
        wirecall.allocs_server_per_call = Some(3.0);
        let mut raw = result(Target::RawTcp, Workload::Allocations, 1.0);
        raw.allocs_client_per_call = Some(0.0);
        raw.allocs_server_per_call = Some(0.5);
        let table = markdown_table(&[wirecall, raw], &[Workload::Allocations]);
        let row = |label: &str| {
            table
                .lines()
                .find(|line| line.starts_with(&format!("| W8 | {label} |")))
                .unwrap_or_else(|| panic!("no {label} row in\n{table}"))
                .to_owned()
        };
        let total = row("allocations per call, client + server");
        assert!(
            total.starts_with("| W8 | allocations per call, client + server | 0.500 | - | 7.00 |"),
            "{total}"
        );
        assert!(total.ends_with("| n/a | - | - |"), "{total}");
        let less = row("the same less the user's values");
        assert!(less.contains("| 0.500 | - | 4.00 |"), "{less}");
    }

    #[test]
    fn results_round_trip_through_json() {
        let line = serde_json::to_string(&result(Target::RawTcp, Workload::Churn, 1.0)).unwrap();
        let back: CellResult = serde_json::from_str(&line).unwrap();
        assert_eq!(back.workload, "W3");
        assert!(!line.contains("payload_gb_per_s"));
    }
}
