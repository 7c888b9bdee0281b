//! The parent process of `all` and `smoke`: for every cell, starts a `server` and a `client`
//! child (this same executable), collects their reports, and prints the results.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt as _, BufReader};
use tokio::process::Command;
use tokio::time::timeout;

use crate::cell::{Target, Workload};
use crate::client::MARK;
use crate::report::{markdown_table, stream_summary, CellResult};
use crate::server::ServerReport;
use crate::systems::{BenchResult, BoxError};

/// How long a server may take to print its address, and to report after stdin closes.
const SERVER_STEP_LIMIT: Duration = Duration::from_secs(15);

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Targets, in table order.
    pub targets: Vec<Target>,
    /// Workload variants, in table order.
    pub workloads: Vec<Workload>,
    /// Runs of each cell.
    pub repeat: u32,
    /// Tiny counts (the smoke run).
    pub smoke: bool,
    /// Hard limit for one run of one cell.
    pub cell_timeout: Duration,
    /// The JSON-lines file results are appended to.
    pub out: PathBuf,
}

/// Runs every cell of `plan`; returns whether all of them succeeded.
pub async fn run(plan: &Plan) -> BenchResult<bool> {
    let exe = std::env::current_exe()?;
    if let Some(dir) = plan.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&plan.out)?;
    let mut results = Vec::new();
    let mut failures = Vec::new();
    // Repeats are the outer loop so that a burst of machine noise hits different cells'
    // repeats rather than every repeat of one cell.
    for repeat in 1..=plan.repeat {
        for &workload in &plan.workloads {
            for &target in &plan.targets {
                if !target.supports(workload) {
                    continue;
                }
                let cell = format!("{} {target} (run {repeat})", workload.id());
                match run_cell(&exe, target, workload, plan).await {
                    Ok(mut result) => {
                        result.repeat = Some(repeat);
                        let line = serde_json::to_string(&result)?;
                        println!("{line}");
                        writeln!(out, "{line}")?;
                        results.push(result);
                    }
                    Err(err) => {
                        eprintln!("cell {cell} failed: {err}");
                        failures.push(cell);
                    }
                }
            }
        }
    }
    println!();
    println!(
        "medians of {} run(s) per cell; ratios use one codec on both sides (MessagePack, \
         tonic against wirecall's Protobuf)",
        plan.repeat
    );
    println!();
    print!("{}", markdown_table(&results, &plan.workloads));
    println!();
    let streams = stream_summary(&results, &plan.workloads);
    if !streams.is_empty() {
        print!("{streams}");
        println!();
    }
    println!("results appended to {}", plan.out.display());
    if !failures.is_empty() {
        eprintln!(
            "{} cell run(s) failed: {}",
            failures.len(),
            failures.join("; ")
        );
    }
    Ok(failures.is_empty())
}

/// One run of one cell: a fresh server process and a client process.
async fn run_cell(
    exe: &std::path::Path,
    target: Target,
    workload: Workload,
    plan: &Plan,
) -> BenchResult<CellResult> {
    let common = [
        "--system".to_owned(),
        target.system().to_owned(),
        "--codec".to_owned(),
        target.codec().to_owned(),
        "--workload".to_owned(),
        workload.id(),
    ];
    // The server outlives the client's deadline a little, whatever happens to this process.
    let lifetime = plan.cell_timeout + SERVER_STEP_LIMIT;
    let mut server = Command::new(exe)
        .arg("server")
        .args(&common)
        .args(["--lifetime-secs", &lifetime.as_secs().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut server_lines =
        BufReader::new(server.stdout.take().ok_or("server stdout not captured")?).lines();
    let addr = timeout(SERVER_STEP_LIMIT, server_lines.next_line())
        .await
        .map_err(|_| "the server did not print its address in time")??
        .ok_or("the server exited before printing its address")?;

    let mut client = Command::new(exe);
    client
        .arg("client")
        .args(&common)
        .args(["--addr", addr.trim()])
        .args(["--deadline-secs", &plan.cell_timeout.as_secs().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if plan.smoke {
        client.arg("--smoke");
    }
    let mut client = client.spawn()?;
    let mut client_stdin = client.stdin.take().ok_or("client stdin not captured")?;
    let mut client_lines =
        BufReader::new(client.stdout.take().ok_or("client stdout not captured")?).lines();
    let server_stdin = server.stdin.as_mut().ok_or("server stdin not captured")?;
    // A little more than the client's own deadline, so that it normally reports first.
    let (line, server_allocations) = timeout(plan.cell_timeout + Duration::from_secs(5), async {
        let mut result_line = None;
        let mut server_allocations = Vec::new();
        while let Some(line) = client_lines.next_line().await? {
            if line == MARK {
                // W8: the server's count now, then the client may go on.
                server_stdin.write_all(b"count\n").await?;
                server_stdin.flush().await?;
                let count = server_lines
                    .next_line()
                    .await?
                    .ok_or("the server exited before reporting its allocations")?;
                server_allocations.push(count.trim().parse::<u64>()?);
                client_stdin.write_all(b"go\n").await?;
                client_stdin.flush().await?;
            } else if line.starts_with('{') {
                result_line = Some(line);
            }
        }
        let status = client.wait().await?;
        if !status.success() {
            return Err(format!("the client failed ({status})").into());
        }
        Ok::<_, BoxError>((
            result_line.ok_or("the client printed no result")?,
            server_allocations,
        ))
    })
    .await
    .map_err(|_| format!("no result within {:?}", plan.cell_timeout))??;
    let mut result: CellResult = serde_json::from_str(&line)?;
    if workload == Workload::Allocations {
        let [before, after] = server_allocations[..] else {
            return Err("the W8 client did not mark the start and end of its calls".into());
        };
        result.allocs_server_per_call =
            Some(after.saturating_sub(before) as f64 / result.calls.max(1) as f64);
    }

    // Closing the server's stdin asks it for its report.
    drop(server.stdin.take());
    let report_line = timeout(SERVER_STEP_LIMIT, server_lines.next_line())
        .await
        .map_err(|_| "the server did not report in time")??
        .ok_or("the server exited without a report")?;
    let report: ServerReport = serde_json::from_str(&report_line)?;
    let status = timeout(SERVER_STEP_LIMIT, server.wait())
        .await
        .map_err(|_| "the server did not exit in time")??;
    if !status.success() {
        return Err(format!("the server failed ({status})").into());
    }
    result.rss_server_kb = report.rss_server_kb;
    if workload == Workload::OneWay {
        result.server_counted = Some(report.counted);
        if report.counted != result.calls {
            return Err(format!(
                "the server counted {} one-way messages, expected {}",
                report.counted, result.calls
            )
            .into());
        }
    }
    Ok(result)
}
