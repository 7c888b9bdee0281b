//! Results: the JSON line of one cell, and the markdown table of medians and ratios.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

#[cfg(test)]
use crate::cell::{StreamLength, StreamWindow};
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
    /// Calls (W3: connections, W6: one-way messages, S1 and S2: stream items, S3: calls
    /// beside the stream, U1: uploaded chunks) in the timed phase; I1: the calls its long
    /// run made beyond its short one (its `secs` is the long run's, under callgrind).
    pub calls: u64,
    /// Length of the timed phase.
    pub secs: f64,
    /// `calls / secs`.
    pub calls_per_s: f64,
    /// Median call latency (W3: connect + handshake + one call; S1 and S2: an item's, from
    /// its producer's timestamp to its arrival; S3: the calls beside the stream).
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
    /// W5, S1, S2 and U1: payload bytes carried per second, in 10^9 bytes.
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
    /// I1: the server process's instructions per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_server_per_call: Option<f64>,
    /// I1: the client process's instructions per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_client_per_call: Option<f64>,
    /// S3: median call latency without the stream (`p50_us` is beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_p50_us: Option<f64>,
    /// S3: 99th-percentile call latency without the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_p99_us: Option<f64>,
    /// S3: the stream's items/s while the calls ran beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_items_per_s: Option<f64>,
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
const BESIDE_OVER_ALONE_P50: Metric = Metric {
    label: "p50 beside / alone",
    value: |r| Some(r.p50_us? / r.alone_p50_us?),
};
const BESIDE_OVER_ALONE_P99: Metric = Metric {
    label: "p99 beside / alone",
    value: |r| Some(r.p99_us? / r.alone_p99_us?),
};
const UPLOAD_GB_PER_S: Metric = Metric {
    label: "GB/s payload",
    value: |r| r.payload_gb_per_s,
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
        Workload::Instructions => vec![
            Metric {
                label: "server instructions per call",
                value: |r| r.instructions_server_per_call,
            },
            Metric {
                label: "client instructions per call",
                value: |r| r.instructions_client_per_call,
            },
        ],
        Workload::Streams { .. } | Workload::LongLink { .. } => vec![
            Metric {
                label: "items/s",
                value: |r| Some(r.calls_per_s),
            },
            Metric {
                label: "GB/s payload",
                value: |r| r.payload_gb_per_s,
            },
            Metric {
                label: "item latency p50 us",
                value: |r| r.p50_us,
            },
            Metric {
                label: "item latency p99 us",
                value: |r| r.p99_us,
            },
        ],
        Workload::Upload => vec![
            Metric {
                label: "chunks/s",
                value: |r| Some(r.calls_per_s),
            },
            UPLOAD_GB_PER_S,
        ],
        Workload::UnaryBesideStream => vec![
            Metric {
                label: "p50 us alone",
                value: |r| r.alone_p50_us,
            },
            Metric {
                label: "p50 us beside the stream",
                value: |r| r.p50_us,
            },
            BESIDE_OVER_ALONE_P50,
            Metric {
                label: "p99 us alone",
                value: |r| r.alone_p99_us,
            },
            Metric {
                label: "p99 us beside the stream",
                value: |r| r.p99_us,
            },
            BESIDE_OVER_ALONE_P99,
            Metric {
                label: "stream items/s meanwhile",
                value: |r| r.stream_items_per_s,
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
/// (MessagePack), tonic / wirecall (Protobuf, tonic's codec) and grpc-wirecall / tonic (one
/// client, wirecall's gRPC door against tonic's server) from the same medians.
pub fn markdown_table(results: &[CellResult], workloads: &[Workload]) -> String {
    let medians = Medians::of(results);
    let median_of = |workload, target, metric: &Metric| medians.get(workload, target, metric);

    let mut out = String::new();
    out.push_str("| cell | metric |");
    for target in Target::ALL {
        let _ = write!(out, " {target} |");
    }
    out.push_str(
        " wirecall / raw | tarpc / wirecall | tonic / wirecall protobuf | grpc-wirecall / tonic \
         |\n|---|---|",
    );
    for _ in Target::ALL {
        out.push_str("---:|");
    }
    out.push_str("---:|---:|---:|---:|\n");
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
                " {} | {} | {} | {} |",
                ratio(WIRECALL, Target::RawTcp),
                ratio(TARPC, WIRECALL),
                ratio(Target::Tonic, WIRECALL_PROTOBUF),
                ratio(Target::GrpcWirecall, Target::Tonic)
            );
        }
    }
    out
}

/// The runs of each cell, by workload, system and codec.
struct Medians<'a>(HashMap<(String, String, String), Vec<&'a CellResult>>);

impl<'a> Medians<'a> {
    fn of(results: &'a [CellResult]) -> Self {
        let mut grouped: HashMap<_, Vec<&CellResult>> = HashMap::new();
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
        Self(grouped)
    }

    /// The median of `metric` over the runs of `target` in `workload`.
    fn get(&self, workload: Workload, target: Target, metric: &Metric) -> Option<f64> {
        let key = (
            workload.id(),
            target.system().to_owned(),
            target.codec().to_owned(),
        );
        let mut values: Vec<f64> = self
            .0
            .get(&key)?
            .iter()
            .filter_map(|r| (metric.value)(r))
            .collect();
        median(&mut values)
    }
}

/// Issue 35's target for a stream cell's items/s against tonic's: 1.5x for a window of 32
/// and for 100 streams (S2, and S2-short, the same shape as a user writes it), 2x otherwise.
fn stream_target_against_tonic(id: &str) -> &'static str {
    match id {
        "S1-w32" | "S2" | "S2-short" => "1.5",
        _ => "2",
    }
}

/// The stream and upload cells against their targets, from the same medians as the table:
/// items/s of wirecall over tonic's and over the raw floor's (target: at least 2 x tonic, 1.5 x
/// for some cells: [`stream_target_against_tonic`]),
/// the calls' latency beside the saturating stream over alone (target: at most 1.2), per
/// system, and the upload's GB/s of wirecall over the raw floor's (target: at least 0.9) and
/// of tonic over wirecall's. Empty unless the run has a stream or upload cell.
pub fn stream_summary(results: &[CellResult], workloads: &[Workload]) -> String {
    const ITEMS: Metric = Metric {
        label: "items/s",
        value: |r| Some(r.calls_per_s),
    };
    let medians = Medians::of(results);
    let ratio = |workload, numerator, denominator, metric: &Metric| match (
        medians.get(workload, numerator, metric),
        medians.get(workload, denominator, metric),
    ) {
        (Some(n), Some(d)) if d > 0.0 => format!("{:.2}", n / d),
        _ => "-".to_owned(),
    };
    let value = |workload, target, metric: &Metric| {
        medians
            .get(workload, target, metric)
            .map_or("-".to_owned(), |v| format!("{v:.2}"))
    };
    let mut out = String::new();
    for &workload in workloads {
        match workload {
            Workload::Streams { .. } => {
                let _ = writeln!(
                    out,
                    "{} items/s: wirecall msgpack / tonic {}, wirecall protobuf / tonic {} \
                     (target >= {}); wirecall msgpack / raw {}, wirecall protobuf / raw {}",
                    workload.id(),
                    ratio(workload, WIRECALL, Target::Tonic, &ITEMS),
                    ratio(workload, WIRECALL_PROTOBUF, Target::Tonic, &ITEMS),
                    stream_target_against_tonic(&workload.id()),
                    ratio(workload, WIRECALL, Target::RawTcp, &ITEMS),
                    ratio(workload, WIRECALL_PROTOBUF, Target::RawTcp, &ITEMS),
                );
            }
            Workload::LongLink { .. } => {
                let _ = writeln!(
                    out,
                    "{} items/s over the long link: wirecall msgpack / raw {}, wirecall protobuf \
                     / raw {} (target >= 0.8); wirecall msgpack / tonic {}, wirecall protobuf / \
                     tonic {} (target >= 2)",
                    workload.id(),
                    ratio(workload, WIRECALL, Target::RawTcp, &ITEMS),
                    ratio(workload, WIRECALL_PROTOBUF, Target::RawTcp, &ITEMS),
                    ratio(workload, WIRECALL, Target::Tonic, &ITEMS),
                    ratio(workload, WIRECALL_PROTOBUF, Target::Tonic, &ITEMS),
                );
            }
            Workload::UnaryBesideStream => {
                let per_system: Vec<String> = Target::ALL
                    .into_iter()
                    .filter(|target| target.supports(workload))
                    .map(|target| {
                        format!(
                            "{target} {} / {}",
                            value(workload, target, &BESIDE_OVER_ALONE_P50),
                            value(workload, target, &BESIDE_OVER_ALONE_P99)
                        )
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{} unary latency beside a saturating stream / alone, p50 / p99 (target \
                     <= 1.2): {}",
                    workload.id(),
                    per_system.join("; ")
                );
            }
            Workload::Upload => {
                let _ = writeln!(
                    out,
                    "{} upload GB/s: wirecall msgpack / raw {}, wirecall protobuf / raw {} \
                     (target >= 0.9); tonic / wirecall protobuf {}",
                    workload.id(),
                    ratio(workload, WIRECALL, Target::RawTcp, &UPLOAD_GB_PER_S),
                    ratio(
                        workload,
                        WIRECALL_PROTOBUF,
                        Target::RawTcp,
                        &UPLOAD_GB_PER_S
                    ),
                    ratio(workload, Target::Tonic, WIRECALL_PROTOBUF, &UPLOAD_GB_PER_S),
                );
            }
            _ => {}
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
            instructions_server_per_call: None,
            instructions_client_per_call: None,
            alone_p50_us: None,
            alone_p99_us: None,
            stream_items_per_s: None,
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
        assert!(row.ends_with("| 2.00 | 2.00 | - | - |"), "{row}");
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
        assert!(row.ends_with("| - | - | 3.00 | - |"), "{row}");
        let one_way = table
            .lines()
            .find(|line| line.starts_with("| W6 | messages/s"))
            .expect("a W6 row");
        assert!(one_way.ends_with("| n/a |"), "{one_way}");
    }

    #[test]
    fn the_door_is_compared_with_tonics_server() {
        let w2 = Workload::Pipelined {
            connections: 1,
            in_flight: 256,
        };
        let results = vec![
            result(Target::Tonic, w2, 2.0),
            result(Target::GrpcWirecall, w2, 1.0),
        ];
        let table = markdown_table(&results, &[w2]);
        let row = table
            .lines()
            .find(|line| line.starts_with("| W2-1x256 | calls/s |"))
            .expect("a W2 row");
        assert!(
            row.ends_with("| 5000 | 10.0k | - | - | - | - | 2.00 |"),
            "{row}"
        );
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
        assert!(total.ends_with("| n/a | - | - | - |"), "{total}");
        let less = row("the same less the user's values");
        assert!(less.contains("| 0.500 | - | 4.00 |"), "{less}");
    }

    #[test]
    fn the_stream_cells_show_beside_over_alone_and_the_targets() {
        let mut wirecall = result(WIRECALL, Workload::UnaryBesideStream, 1.0);
        wirecall.alone_p50_us = Some(40.0);
        wirecall.p50_us = Some(60.0);
        let s1 = Workload::Streams {
            streams: 1,
            window: StreamWindow::Sized,
            length: StreamLength::Long,
        };
        let items = |target, secs| result(target, s1, secs);
        let results = vec![
            wirecall,
            items(WIRECALL, 1.0),
            items(WIRECALL_PROTOBUF, 1.0),
            items(Target::Tonic, 3.0),
            items(Target::RawTcp, 0.5),
        ];
        let workloads = [s1, Workload::UnaryBesideStream];
        let table = markdown_table(&results, &workloads);
        let row = table
            .lines()
            .find(|line| line.starts_with("| S3 | p50 beside / alone |"))
            .expect("an S3 ratio row");
        assert!(row.contains("| 1.50 |"), "{row}");
        let summary = stream_summary(&results, &workloads);
        assert!(
            summary.contains("S1 items/s: wirecall msgpack / tonic 3.00"),
            "{summary}"
        );
        assert!(summary.contains("wirecall msgpack / raw 0.50"), "{summary}");
        assert!(summary.contains("wirecall msgpack 1.50 / -"), "{summary}");
        assert!(!summary.contains("upload"), "{summary}");
        assert!(stream_summary(&results, &[Workload::Churn]).is_empty());
        assert!(summary.contains("(target >= 2)"), "{summary}");
    }

    #[test]
    fn each_stream_cell_is_held_to_its_own_target_against_tonic() {
        for (id, target) in [
            ("S1", "2"),
            ("S1-short", "2"),
            ("S1-w2048", "2"),
            ("S1-w32", "1.5"),
            ("S2", "1.5"),
            ("S2-short", "1.5"),
        ] {
            assert_eq!(stream_target_against_tonic(id), target, "{id}");
        }
    }

    #[test]
    fn the_upload_cell_shows_gb_per_s_against_the_floor_and_tonic() {
        let gb_per_s = |target, gb| {
            let mut run = result(target, Workload::Upload, 1.0);
            run.payload_gb_per_s = Some(gb);
            run
        };
        let results = vec![
            gb_per_s(Target::RawTcp, 4.0),
            gb_per_s(WIRECALL, 3.0),
            gb_per_s(WIRECALL_PROTOBUF, 2.0),
            gb_per_s(Target::Tonic, 1.0),
        ];
        let table = markdown_table(&results, &[Workload::Upload]);
        let row = table
            .lines()
            .find(|line| line.starts_with("| U1 | GB/s payload |"))
            .expect("a U1 GB/s row");
        assert!(row.ends_with("| 0.75 | n/a | 0.50 | - |"), "{row}");
        let summary = stream_summary(&results, &[Workload::Upload]);
        assert_eq!(
            summary,
            "U1 upload GB/s: wirecall msgpack / raw 0.75, wirecall protobuf / raw 0.50 \
             (target >= 0.9); tonic / wirecall protobuf 0.50\n"
        );
    }

    #[test]
    fn results_round_trip_through_json() {
        let line = serde_json::to_string(&result(Target::RawTcp, Workload::Churn, 1.0)).unwrap();
        let back: CellResult = serde_json::from_str(&line).unwrap();
        assert_eq!(back.workload, "W3");
        assert!(!line.contains("payload_gb_per_s"));
    }
}
