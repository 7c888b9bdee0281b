//! The parent process of `all` and `smoke`: for every cell, starts a `server` and a `client`
//! child (this same executable), collects their reports, and prints the results.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::time::timeout;

use crate::cell::{Target, Workload};
use crate::report::{markdown_table, CellResult};
use crate::server::ServerReport;
use crate::systems::BenchResult;

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
        "medians of {} run(s) per cell; ratios use MessagePack on both sides",
        plan.repeat
    );
    println!();
    print!("{}", markdown_table(&results, &plan.workloads));
    println!();
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
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if plan.smoke {
        client.arg("--smoke");
    }
    let client = client.spawn()?;
    // A little more than the client's own deadline, so that it normally reports first.
    let output = timeout(
        plan.cell_timeout + Duration::from_secs(5),
        client.wait_with_output(),
    )
    .await
    .map_err(|_| format!("no result within {:?}", plan.cell_timeout))??;
    if !output.status.success() {
        return Err(format!("the client failed ({})", output.status).into());
    }
    let stdout = String::from_utf8(output.stdout)?;
    let line = stdout
        .lines()
        .rev()
        .find(|line| line.starts_with('{'))
        .ok_or("the client printed no result")?;
    let mut result: CellResult = serde_json::from_str(line)?;

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
