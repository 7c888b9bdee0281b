//! One run of one cell: a fresh `server` child and a `client` child (this same executable),
//! each optionally started under a wrapper (I1 runs them under callgrind), and the result
//! the client reports, completed with the server's figures.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt as _, BufReader};
use tokio::process::Command;
use tokio::time::timeout;

use crate::cell::{Target, Workload};
use crate::client::MARK;
use crate::orchestrate::Plan;
use crate::report::CellResult;
use crate::server::ServerReport;
use crate::systems::BoxError;

/// How long a server may take to print its address, and to report after stdin closes.
const SERVER_STEP_LIMIT: Duration = Duration::from_secs(15);

/// How the two processes of a run are started, beyond the cell's own arguments.
#[derive(Debug, Default)]
pub struct Launch {
    /// A program and its arguments to start the server under, before this executable.
    pub server_wrapper: Vec<OsString>,
    /// The same for the client.
    pub client_wrapper: Vec<OsString>,
    /// The client's timed calls, where the cell's scale does not decide them (I1).
    pub calls: Option<usize>,
}

impl Launch {
    fn command(wrapper: &[OsString], exe: &Path) -> Command {
        match wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(exe);
                command
            }
            None => Command::new(exe),
        }
    }
}

/// One run of one cell: a fresh server process and a client process.
pub async fn run_cell(
    exe: &Path,
    target: Target,
    workload: Workload,
    plan: &Plan,
    launch: &Launch,
) -> Result<CellResult, BoxError> {
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
    let mut server = Launch::command(&launch.server_wrapper, exe)
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
    let addr = printed_address(&mut server_lines, "server").await?;

    // L1: the client reaches the server through a delay proxy of its own (a third process,
    // so that neither side pays for the relaying), killed with the cell.
    let mut proxy = None;
    let addr = match workload.link_round_trip() {
        None => addr,
        Some(rtt) => {
            let mut child = Command::new(exe)
                .arg("proxy")
                .args(["--to", addr.trim()])
                .args(["--rtt-ms", &rtt.as_millis().to_string()])
                .args(["--lifetime-secs", &lifetime.as_secs().to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()?;
            let mut lines =
                BufReader::new(child.stdout.take().ok_or("proxy stdout not captured")?).lines();
            let addr = printed_address(&mut lines, "proxy").await?;
            proxy = Some(child);
            addr
        }
    };

    let mut client = Launch::command(&launch.client_wrapper, exe);
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
    if let Some(calls) = launch.calls {
        client.args(["--calls", &calls.to_string()]);
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

    drop(proxy);
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

/// The address a child (`who`: the server or the proxy) prints first, within the step limit.
async fn printed_address<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
    who: &str,
) -> Result<String, BoxError> {
    timeout(SERVER_STEP_LIMIT, lines.next_line())
        .await
        .map_err(|_| format!("the {who} did not print its address in time"))??
        .ok_or_else(|| format!("the {who} exited before printing its address").into())
}
