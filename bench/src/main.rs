//! `wirecall-bench`: wirecall against tarpc, tonic and raw TCP, server and client in separate
//! processes. See `bench/README.md`.

#![warn(missing_docs)]

mod alloc_count;
mod cell;
mod cell_run;
mod client;
mod compression;
mod delay_proxy;
mod discovery;
mod events;
mod fleet;
mod gateway_summary;
mod instructions;
mod load;
mod measure;
mod model;
mod options;
mod orchestrate;
mod policy;
mod report;
mod scale;
mod server;
mod slow_clients;
mod systems;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};
use options::{Cli, Command};

/// Counts allocations for W8 once a process enables it; forwards to the system allocator.
#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

fn main() -> ExitCode {
    // Usage errors and --help are clap's: exit code 2 and 0.
    let Some(sub) = Cli::parse().command else {
        // No subcommand: print the help, as `help` does.
        return match Cli::command().print_help() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => fail("cannot print the help", &err),
        };
    };
    let command = match sub.into_command() {
        Ok(command) => command,
        Err(message) => {
            eprintln!("error: {message}\n\nFor more information, try '--help'.");
            return ExitCode::from(2);
        }
    };
    // W4 and W6 hold 10,000 connections in each process.
    if let Err(err) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("warning: could not raise the open-file limit: {err}");
    }
    match command {
        Command::Run(plan) => {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => return fail("cannot start the runtime", &err),
            };
            match runtime.block_on(orchestrate::run(&plan)) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(err) => fail("benchmark aborted", &*err),
            }
        }
        Command::Discovery {
            calls,
            in_flight,
            repeat,
            kills,
        } => match multi_thread()
            .and_then(|runtime| runtime.block_on(discovery::run(calls, in_flight, repeat, kills)))
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => fail("discovery cell failed", &*err),
        },
        Command::Fleet {
            systems,
            before,
            hang,
        } => match multi_thread()
            .and_then(|runtime| runtime.block_on(fleet::run(systems, before, hang)))
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => fail("fleet cell failed", &*err),
        },
        Command::SlowClients {
            stallers,
            calls,
            repeat,
        } => match multi_thread()
            .and_then(|runtime| runtime.block_on(slow_clients::run(stallers, calls, repeat)))
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => fail("slow-clients cell failed", &*err),
        },
        Command::Compression {
            calls,
            repeat,
            level,
        } => match multi_thread()
            .and_then(|runtime| runtime.block_on(compression::run(calls, repeat, level)))
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => fail("compression cell failed", &*err),
        },
        Command::Policy { calls } => {
            match multi_thread().and_then(|runtime| runtime.block_on(policy::run(calls))) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => fail("policy cell failed", &*err),
            }
        }
        Command::Events {
            in_process_events,
            broker_events,
            repeat,
            broker,
        } => match multi_thread().and_then(|runtime| {
            runtime.block_on(events::run(
                in_process_events,
                broker_events,
                repeat,
                broker,
            ))
        }) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => fail("events cell failed", &*err),
        },
        Command::Server {
            target,
            workload,
            lifetime,
        } => exit_now(
            multi_thread()
                .and_then(|runtime| runtime.block_on(server::run(target, workload, lifetime))),
        ),
        Command::Proxy { to, rtt, lifetime } => exit_now(
            multi_thread()
                .and_then(|runtime| runtime.block_on(delay_proxy::run(to, rtt, lifetime))),
        ),
        Command::Client {
            target,
            workload,
            addr,
            scale,
            deadline,
        } => exit_now(multi_thread().and_then(|runtime| {
            runtime.block_on(async {
                let result =
                    tokio::time::timeout(deadline, client::run(target, workload, addr, scale))
                        .await
                        .map_err(|_| format!("gave up after {deadline:?}"))??;
                println!("{}", serde_json::to_string(&result)?);
                Ok(())
            })
        })),
    }
}

fn multi_thread() -> systems::BenchResult<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Ends a child process at once: with thousands of connections open, an orderly runtime
/// shutdown only adds time, and a blocked stdin read would delay it indefinitely.
fn exit_now(outcome: systems::BenchResult<()>) -> ExitCode {
    let code = match outcome {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("error: {err}");
            1
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

fn fail(context: &str, err: &dyn std::error::Error) -> ExitCode {
    eprintln!("error: {context}: {err}");
    ExitCode::FAILURE
}
