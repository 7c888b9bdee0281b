//! Command-line parsing for the four subcommands.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::cell::{Scale, Target, Workload};
use crate::orchestrate::Plan;

/// Usage, printed by `help` and after a usage error.
pub const HELP: &str = "\
usage: wirecall-bench <COMMAND> [OPTIONS]

commands:
  all      run every selected cell in separate server and client processes, print one JSON
           line per run and a markdown table of medians and ratios
  smoke    the same with tiny counts and one run per cell; exits non-zero if any cell failed
  server   (internal) serve one target, print its address, stop when stdin closes
  client   (internal) run one cell against --addr and print one JSON line
  help     print this text

options of all and smoke:
  --repeat N           runs per cell, medians reported (default 3; smoke: 1)
  --only LIST          comma-separated workloads or variants: W1, W2-1x256, W3, ... (default all)
  --system NAME        wirecall, tarpc or raw-tcp (default all)
  --codec NAME         json, msgpack, protobuf (wirecall), bincode, msgpack (tarpc)
  --out PATH           JSON-lines file to append to (default target/bench-results.jsonl)
  --cell-timeout SECS  hard limit for one run of one cell (default 180; smoke: 60)

workload variants: W1-0obj W1-1obj W1-10obj W1-100obj W2-1x256 W2-4x64 W3 W4 W5 W6
";

/// A parsed command line.
#[derive(Debug)]
pub enum Command {
    /// `all` or `smoke`.
    Run(Plan),
    /// `server`.
    Server {
        /// What to serve.
        target: Target,
        /// The workload (the raw-TCP server counts instead of echoing for W6).
        workload: Workload,
        /// The longest the server stays up.
        lifetime: Duration,
    },
    /// `client`.
    Client {
        /// What to call.
        target: Target,
        /// What to run.
        workload: Workload,
        /// The server's address.
        addr: SocketAddr,
        /// Counts.
        scale: Scale,
        /// The longest the client runs before giving up.
        deadline: Duration,
    },
    /// `help`.
    Help,
}

/// Parses `args` (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut args = args.into_iter();
    let command = args.next().unwrap_or_else(|| "help".to_owned());
    let mut flags = Flags::default();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--repeat" => flags.repeat = Some(number(&flag, &value()?)?),
            "--only" => flags
                .only
                .extend(value()?.split(',').map(|s| s.trim().to_owned())),
            "--system" => flags.system = Some(value()?),
            "--codec" => flags.codec = Some(value()?),
            "--workload" => flags.workload = Some(value()?.parse()?),
            "--out" => flags.out = Some(PathBuf::from(value()?)),
            "--cell-timeout" => flags.cell_timeout = Some(secs(&flag, &value()?)?),
            "--lifetime-secs" => flags.lifetime = Some(secs(&flag, &value()?)?),
            "--deadline-secs" => flags.deadline = Some(secs(&flag, &value()?)?),
            "--addr" => flags.addr = Some(value()?.parse().map_err(|e| format!("--addr: {e}"))?),
            "--smoke" => flags.smoke = true,
            "-h" | "--help" => return Ok(Command::Help),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    match command.as_str() {
        "all" => flags.plan(false).map(Command::Run),
        "smoke" => flags.plan(true).map(Command::Run),
        "server" => Ok(Command::Server {
            target: flags.target()?,
            workload: flags.workload.ok_or("server needs --workload")?,
            lifetime: flags.lifetime.unwrap_or(Duration::from_secs(600)),
        }),
        "client" => Ok(Command::Client {
            target: flags.target()?,
            workload: flags.workload.ok_or("client needs --workload")?,
            addr: flags.addr.ok_or("client needs --addr")?,
            scale: if flags.smoke {
                Scale::SMOKE
            } else {
                Scale::FULL
            },
            deadline: flags.deadline.unwrap_or(Duration::from_secs(180)),
        }),
        "help" | "-h" | "--help" => Ok(Command::Help),
        other => Err(format!("unknown command {other:?}")),
    }
}

#[derive(Default)]
struct Flags {
    repeat: Option<u32>,
    only: Vec<String>,
    system: Option<String>,
    codec: Option<String>,
    workload: Option<Workload>,
    out: Option<PathBuf>,
    cell_timeout: Option<Duration>,
    lifetime: Option<Duration>,
    deadline: Option<Duration>,
    addr: Option<SocketAddr>,
    smoke: bool,
}

impl Flags {
    fn target(&self) -> Result<Target, String> {
        let system = self.system.as_deref().ok_or("--system is required")?;
        Target::parse(system, self.codec.as_deref().unwrap_or("none"))
    }

    fn plan(self, smoke: bool) -> Result<Plan, String> {
        let system = self.system.as_deref().map(|s| match s {
            "raw" => "raw-tcp",
            other => other,
        });
        let targets: Vec<Target> = Target::ALL
            .into_iter()
            .filter(|t| system.is_none_or(|s| t.system() == s))
            .filter(|t| {
                self.codec
                    .as_deref()
                    .is_none_or(|c| t.codec() == c || t.codec() == "none")
            })
            .collect();
        if targets.is_empty() {
            return Err("no target matches --system and --codec".to_owned());
        }
        let workloads: Vec<Workload> = Workload::ALL
            .into_iter()
            .filter(|w| w.selected_by(&self.only))
            .collect();
        if workloads.is_empty() {
            return Err(format!("--only {:?} selects no workload", self.only));
        }
        // The workspace's target/, wherever cargo was started from.
        let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let default_out = manifest_dir
            .parent()
            .unwrap_or(manifest_dir)
            .join("target")
            .join("bench-results.jsonl");
        Ok(Plan {
            targets,
            workloads,
            repeat: self.repeat.unwrap_or(if smoke { 1 } else { 3 }).max(1),
            smoke,
            cell_timeout: self.cell_timeout.unwrap_or(Duration::from_secs(if smoke {
                60
            } else {
                180
            })),
            out: self.out.unwrap_or(default_out),
        })
    }
}

fn number(flag: &str, value: &str) -> Result<u32, String> {
    value.parse().map_err(|e| format!("{flag}: {e}"))
}

fn secs(flag: &str, value: &str) -> Result<Duration, String> {
    value
        .parse()
        .map(Duration::from_secs)
        .map_err(|e| format!("{flag}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Command, String> {
        parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn all_with_a_system_and_codec_keeps_the_raw_floor_out() {
        let Ok(Command::Run(plan)) = parse_str("all --system wirecall --codec msgpack --only W1")
        else {
            panic!("expected a run");
        };
        assert_eq!(
            plan.targets,
            [Target::Wirecall(wirecall::Codec::MessagePack)]
        );
        assert_eq!(plan.workloads.len(), 4);
        assert_eq!(plan.repeat, 3);
    }

    #[test]
    fn codec_alone_keeps_the_raw_floor_for_ratios() {
        let Ok(Command::Run(plan)) = parse_str("smoke --codec msgpack") else {
            panic!("expected a run");
        };
        let names: Vec<String> = plan.targets.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["raw-tcp none", "wirecall msgpack", "tarpc msgpack"]);
        assert_eq!(plan.repeat, 1);
    }

    #[test]
    fn client_needs_an_address() {
        assert!(parse_str("client --system raw-tcp --workload W3").is_err());
    }
}
