//! I1: instructions per unary call, counted by callgrind in the server and the client
//! process separately.
//!
//! Each side runs under `valgrind --tool=callgrind` twice, the client making a short and a
//! long run of W2-1x256's calls. A process's total over both runs differs only by the calls
//! in between, so `(long - short) / (long calls - short calls)` is its cost per call, with
//! start-up, connecting, warming up and shutting down subtracted. Instruction counts hardly
//! move with the machine's load, which makes this the cell to compare across commits.

use std::ffi::OsString;
use std::path::Path;

use crate::cell::{Target, Workload};
use crate::cell_run::{run_cell, Launch};
use crate::orchestrate::Plan;
use crate::report::CellResult;
use crate::scale::Scale;
use crate::systems::BoxError;

/// Set (to anything) to keep I1's callgrind profiles instead of deleting them.
const KEEP_PROFILES: &str = "WIRECALL_BENCH_KEEP_I1";

/// One I1 result for `target`: the long run's figures, with the instructions per call of
/// each side and `calls` set to the calls between the runs.
pub async fn count_instructions(
    exe: &Path,
    target: Target,
    plan: &Plan,
) -> Result<CellResult, BoxError> {
    require_valgrind().await?;
    let [short_calls, long_calls] = if plan.smoke {
        Scale::SMOKE
    } else {
        Scale::FULL
    }
    .instruction_calls;
    let dir = std::env::temp_dir().join(format!("wirecall-bench-i1-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let runs = async {
        let short = counted_run(exe, target, plan, &dir, "short", short_calls).await?;
        let long = counted_run(exe, target, plan, &dir, "long", long_calls).await?;
        Ok::<_, BoxError>((short, long))
    }
    .await;
    // The profiles stay for reading per function (`callgrind_annotate`) when asked for.
    if std::env::var_os(KEEP_PROFILES).is_some() {
        eprintln!("I1: callgrind profiles kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (short, long) = runs?;
    let calls = long_calls - short_calls;
    let per_call = |long: u64, short: u64| long.saturating_sub(short) as f64 / calls as f64;
    let mut result = long.result;
    // Memory and latency under callgrind say nothing about the system: leave them out.
    result.rss_server_kb = None;
    result.rss_client_kb = None;
    result.p50_us = None;
    result.p99_us = None;
    result.p999_us = None;
    result.max_us = None;
    result.instructions_server_per_call = Some(per_call(long.server, short.server));
    result.instructions_client_per_call = Some(per_call(long.client, short.client));
    result.calls = calls as u64;
    Ok(result)
}

/// One run's instruction totals and what its client reported.
struct Totals {
    server: u64,
    client: u64,
    result: CellResult,
}

async fn counted_run(
    exe: &Path,
    target: Target,
    plan: &Plan,
    dir: &Path,
    name: &str,
    calls: usize,
) -> Result<Totals, BoxError> {
    let server_out = dir.join(format!("server-{name}.callgrind"));
    let client_out = dir.join(format!("client-{name}.callgrind"));
    let launch = Launch {
        server_wrapper: callgrind(&server_out),
        client_wrapper: callgrind(&client_out),
        calls: Some(calls),
    };
    let result = run_cell(exe, target, Workload::Instructions, plan, &launch).await?;
    Ok(Totals {
        server: total_of(&server_out)?,
        client: total_of(&client_out)?,
        result,
    })
}

/// `valgrind --tool=callgrind` writing its profile to `out`; its own messages are kept to
/// errors, so that a child's stderr stays readable.
fn callgrind(out: &Path) -> Vec<OsString> {
    let mut file_arg = OsString::from("--callgrind-out-file=");
    file_arg.push(out);
    vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        "--quiet".into(),
        file_arg,
    ]
}

async fn require_valgrind() -> Result<(), BoxError> {
    let found = tokio::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .await
        .is_ok_and(|output| output.status.success());
    if found {
        Ok(())
    } else {
        Err(
            "I1 needs valgrind (with callgrind) on the PATH: install it (Debian: apt-get \
             install valgrind) or leave I1 out with --only"
                .into(),
        )
    }
}

/// The instructions a callgrind profile counted in all: its `totals:` line (or `summary:`,
/// which older versions write instead).
fn total_of(profile: &Path) -> Result<u64, BoxError> {
    let text = std::fs::read_to_string(profile)
        .map_err(|err| format!("no callgrind profile at {}: {err}", profile.display()))?;
    parse_total(&text).ok_or_else(|| {
        format!(
            "the callgrind profile {} has no totals line",
            profile.display()
        )
        .into()
    })
}

fn parse_total(profile: &str) -> Option<u64> {
    let field = |prefix: &str| {
        profile
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
    };
    field("totals:").or_else(|| field("summary:"))
}

#[cfg(test)]
mod tests {
    use super::parse_total;

    #[test]
    fn the_total_is_read_from_the_totals_line_or_the_summary() {
        let profile = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfn=main\n3 10\n\
                       summary: 1056200\ntotals: 1056201\n";
        assert_eq!(parse_total(profile), Some(1_056_201));
        assert_eq!(parse_total("events: Ir\nsummary: 42\n"), Some(42));
        assert_eq!(parse_total("events: Ir\nfn=main\n"), None);
        assert_eq!(parse_total("totals: many\n"), None);
    }
}
