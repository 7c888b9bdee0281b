//! The parent process of `all` and `smoke`: for every cell, starts a `server` and a `client`
//! child (this same executable), collects their reports, and prints the results.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::cell::{Target, Workload};
use crate::cell_run::{run_cell, Launch};
use crate::gateway_summary::gateway_summary;
use crate::instructions::count_instructions;
use crate::report::{markdown_table, stream_summary};
use crate::systems::BenchResult;

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
                let outcome = if workload == Workload::Instructions {
                    count_instructions(&exe, target, plan).await
                } else {
                    run_cell(&exe, target, workload, plan, &Launch::default()).await
                };
                match outcome {
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
         tonic against wirecall's Protobuf, grpc-wirecall's door against tonic's server with \
         tonic's client on both)",
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
    let gateway = gateway_summary(&results, &plan.workloads);
    if !gateway.is_empty() {
        print!("{gateway}");
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
