//! Command-line parsing for the subcommands (clap derive).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::cell::{Target, Workload};
use crate::orchestrate::Plan;
use crate::scale::Scale;

const WORKLOADS: &str = "\
workload variants: W1-0obj W1-1obj W1-10obj W1-100obj W2-1x256 W2-4x64 W3 W4 W5 W6 W7-alone
W7-big W8 S1 S1-w32 S1-w2048 S2 S1-short S2-short S3 U1 L1-rtt20 L1-rtt100 I1";

const TOP_LEVEL_NOTES: &str = "\
`wirecall-bench help all` lists the options of all and smoke (--repeat, --only, --system,
--codec, --out, --cell-timeout).

workload variants: W1-0obj W1-1obj W1-10obj W1-100obj W2-1x256 W2-4x64 W3 W4 W5 W6 W7-alone
W7-big W8 S1 S1-w32 S1-w2048 S2 S1-short S2-short S3 U1 L1-rtt20 L1-rtt100 I1";

/// wirecall against tarpc, tonic and raw TCP, server and client in separate processes.
///
/// `all` and `smoke` re-execute this binary as a `server` and a `client` process for every run
/// of every cell (see bench/README.md).
#[derive(Debug, Parser)]
#[command(name = "wirecall-bench", after_help = TOP_LEVEL_NOTES)]
pub struct Cli {
    /// What to do; without one, this help is printed.
    #[command(subcommand)]
    pub command: Option<Sub>,
}

/// The subcommands, as typed.
#[derive(Debug, Subcommand)]
pub enum Sub {
    /// Run every selected cell in separate server and client processes, print one JSON line
    /// per run and a markdown table of medians and ratios
    #[command(after_help = WORKLOADS)]
    All(RunArgs),
    /// The same with tiny counts and one run per cell; exits non-zero if any cell failed
    #[command(after_help = WORKLOADS)]
    Smoke(RunArgs),
    /// Calls/s and p99 through a balanced channel over 3 servers against a direct channel to
    /// one (same run), and the time from kill -9 of a server to its ejection
    Discovery(DiscoveryArgs),
    /// Calls/s, p99 and client CPU per call with a per-method policy (deadline, concurrency
    /// limit, circuit breaker) against none, W1's and W2's shapes, same run
    Policy(PolicyArgs),
    /// Bytes on the wire and calls/s with compression off and on (zstd, the default with the
    /// feature), W1-100obj and W5 with text-like and random bytes, same run; needs
    /// `--features zstd`
    Compression(CompressionArgs),
    /// Events/s through the event bus, 1 KiB payload: the in-process back-end, and with
    /// --broker wirecall over RabbitMQ against a plain lapin loop with the same settings
    Events(EventsArgs),
    /// A balanced client over 3 servers, one stopped with SIGSTOP for --hang-secs: calls/s,
    /// p99 and failures before and during the hang, wirecall and tonic at their defaults
    Fleet(FleetArgs),
    /// Connections that send half a request head and stall, against the gateway at its
    /// defaults: when each is closed, the gateway's descriptors, and other calls' p99 beside
    /// them against alone
    SlowClients(SlowClientsArgs),
    /// (internal) Serve one target, print its address, stop when stdin closes
    Server(ServerArgs),
    /// (internal) Run one cell against --addr and print one JSON line
    Client(ClientArgs),
    /// (internal) Relay connections to --to with --rtt-ms added, print the address to use
    Proxy(ProxyArgs),
}

/// Options of `all` and `smoke`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Runs per cell, medians reported [default: 3; smoke: 1]
    #[arg(long, value_name = "N")]
    repeat: Option<u32>,
    /// Comma-separated workloads or variants: W1, W2-1x256, W3, ... [default: all]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    only: Vec<String>,
    /// wirecall, tarpc, tonic, grpc-wirecall (tonic's client, wirecall's server through its
    /// gRPC door), gateway (HTTP/1.1 JSON through wirecall's gateway; W1 and W2) or raw-tcp
    /// [default: all]
    #[arg(long, value_name = "NAME")]
    system: Option<String>,
    /// json, msgpack, protobuf (wirecall), bincode, msgpack (tarpc), protobuf (tonic,
    /// grpc-wirecall), json (gateway) [default: all]
    #[arg(long, value_name = "NAME")]
    codec: Option<String>,
    /// JSON-lines file to append to [default: target/bench-results.jsonl]
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
    /// Hard limit for one run of one cell [default: 180; smoke: 60]
    #[arg(long, value_name = "SECS")]
    cell_timeout: Option<u64>,
}

/// What the `server` and `client` children are told to serve or call.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// wirecall, tarpc, tonic, grpc-wirecall, gateway or raw-tcp
    #[arg(long, value_name = "NAME")]
    system: String,
    /// The system's codec (none for raw-tcp)
    #[arg(long, value_name = "NAME", default_value = "none")]
    codec: String,
    /// The workload variant, e.g. W1-1obj
    #[arg(long, value_name = "ID")]
    workload: Workload,
}

/// Options of `server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The longest the server stays up
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    lifetime_secs: u64,
}

/// Options of `discovery`.
#[derive(Debug, Args)]
pub struct DiscoveryArgs {
    /// Calls per channel per run
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    calls: usize,
    /// Calls in flight at once
    #[arg(long, value_name = "N", default_value_t = 64)]
    in_flight: usize,
    /// Runs
    #[arg(long, value_name = "N", default_value_t = 3)]
    repeat: u32,
    /// Servers killed (kill -9) under load per run, one after another
    #[arg(long, value_name = "N", default_value_t = 20)]
    kills: usize,
    /// Tiny counts, one run (for CI)
    #[arg(long)]
    smoke: bool,
}

/// Options of `fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Seconds of calm before the hang
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    before_secs: u64,
    /// Seconds the first server stays stopped
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    hang_secs: u64,
    /// wirecall, wirecall-not-idempotent or tonic [default: all three]
    #[arg(long, value_name = "NAME")]
    system: Option<String>,
    /// 2 s of calm and a 3 s hang (for CI)
    #[arg(long)]
    smoke: bool,
}

/// Options of `slow-clients`.
#[derive(Debug, Args)]
pub struct SlowClientsArgs {
    /// Stalled connections, each sending half a request head
    #[arg(long, value_name = "N", default_value_t = 500)]
    stallers: usize,
    /// Sequential calls timed in each phase (alone, beside the stalled connections, after)
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    calls: usize,
    /// Runs, each against a fresh gateway
    #[arg(long, value_name = "N", default_value_t = 3)]
    repeat: u32,
}

/// Options of `policy`.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// Calls per W2 round (W1 rounds make a tenth of them)
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    calls: usize,
    /// Tiny counts (for CI)
    #[arg(long)]
    smoke: bool,
}

/// Options of `compression`.
#[derive(Debug, Args)]
pub struct CompressionArgs {
    /// Calls per round (one at a time)
    #[arg(long, value_name = "N", default_value_t = 2_000)]
    calls: usize,
    /// Rounds per setting, alternating; medians reported
    #[arg(long, value_name = "N", default_value_t = 3)]
    repeat: u32,
    /// The zstd level of the compressing client (default: the library's default)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    level: Option<i32>,
    /// Tiny counts, one round (for CI)
    #[arg(long)]
    smoke: bool,
}

/// Options of `events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Events per in-process run
    #[arg(long, value_name = "N", default_value_t = 2_000_000)]
    in_process_events: u64,
    /// Events per broker run (each back-end)
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    broker_events: u64,
    /// Runs, medians reported
    #[arg(long, value_name = "N", default_value_t = 3)]
    repeat: u32,
    /// A RabbitMQ AMQP URL (needs `--features rabbitmq`); without it, in-process only
    #[arg(long, value_name = "URL")]
    broker: Option<String>,
    /// Tiny counts, one run (for CI)
    #[arg(long)]
    smoke: bool,
}

/// Options of `client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The server's address
    #[arg(long, value_name = "ADDR")]
    addr: SocketAddr,
    /// The longest the client runs before giving up
    #[arg(long, value_name = "SECS", default_value_t = 180)]
    deadline_secs: u64,
    /// Tiny counts (the smoke run)
    #[arg(long)]
    smoke: bool,
    /// I1: the timed calls of this run (the parent runs each side at two counts)
    #[arg(long, value_name = "N")]
    calls: Option<usize>,
}

/// Options of `proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// The server's address
    #[arg(long, value_name = "ADDR")]
    to: SocketAddr,
    /// The round trip to add
    #[arg(long, value_name = "MS")]
    rtt_ms: u64,
    /// The longest the proxy stays up
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    lifetime_secs: u64,
}

/// A parsed and checked command line.
#[derive(Debug)]
pub enum Command {
    /// `all` or `smoke`.
    Run(Plan),
    /// `discovery`.
    Discovery {
        /// Calls per channel per run.
        calls: usize,
        /// Calls in flight.
        in_flight: usize,
        /// Runs.
        repeat: u32,
        /// Kills per run.
        kills: usize,
    },
    /// `fleet`.
    Fleet {
        /// The systems, in order.
        systems: Vec<String>,
        /// Calm before the hang.
        before: Duration,
        /// The hang.
        hang: Duration,
    },
    /// `slow-clients`.
    SlowClients {
        /// Stalled connections.
        stallers: usize,
        /// Calls timed per phase.
        calls: usize,
        /// Runs.
        repeat: u32,
    },
    /// `policy`.
    Policy {
        /// Calls per W2 round.
        calls: usize,
    },
    /// `compression`.
    Compression {
        /// Calls per round.
        calls: usize,
        /// Rounds per setting.
        repeat: u32,
        /// The compressing client's zstd level (`None`: the default).
        level: Option<i32>,
    },
    /// `events`.
    Events {
        /// Events per in-process run.
        in_process_events: u64,
        /// Events per broker run.
        broker_events: u64,
        /// Runs.
        repeat: u32,
        /// The broker, if any.
        broker: Option<String>,
    },
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
    /// `proxy`.
    Proxy {
        /// The server's address.
        to: SocketAddr,
        /// The round trip added.
        rtt: Duration,
        /// The longest the proxy stays up.
        lifetime: Duration,
    },
}

impl Sub {
    /// Checks what clap cannot: that the system and codec name a target, and that a run
    /// selects at least one cell.
    pub fn into_command(self) -> Result<Command, String> {
        match self {
            Sub::All(args) => args.plan(false).map(Command::Run),
            Sub::Smoke(args) => args.plan(true).map(Command::Run),
            Sub::Discovery(args) => Ok(if args.smoke {
                Command::Discovery {
                    calls: 2_000,
                    in_flight: args.in_flight.clamp(1, 64),
                    repeat: 1,
                    kills: args.kills.min(2),
                }
            } else {
                Command::Discovery {
                    calls: args.calls.max(1),
                    in_flight: args.in_flight.clamp(1, args.calls.max(1)),
                    repeat: args.repeat.max(1),
                    kills: args.kills,
                }
            }),
            Sub::Fleet(args) => Ok(Command::Fleet {
                systems: match args.system {
                    Some(system) => vec![system],
                    None => ["wirecall", "wirecall-not-idempotent", "tonic"]
                        .map(str::to_owned)
                        .to_vec(),
                },
                before: Duration::from_secs(if args.smoke {
                    2
                } else {
                    args.before_secs.max(1)
                }),
                hang: Duration::from_secs(if args.smoke { 3 } else { args.hang_secs.max(1) }),
            }),
            Sub::SlowClients(args) => Ok(Command::SlowClients {
                stallers: args.stallers,
                calls: args.calls.max(1),
                repeat: args.repeat.max(1),
            }),
            Sub::Compression(args) => Ok(Command::Compression {
                calls: if args.smoke { 20 } else { args.calls.max(1) },
                repeat: if args.smoke { 1 } else { args.repeat.max(1) },
                level: args.level,
            }),
            Sub::Policy(args) => Ok(Command::Policy {
                calls: if args.smoke {
                    2_000
                } else {
                    args.calls.max(10)
                },
            }),
            Sub::Events(args) => Ok(if args.smoke {
                Command::Events {
                    in_process_events: 20_000,
                    broker_events: 2_000,
                    repeat: 1,
                    broker: args.broker,
                }
            } else {
                Command::Events {
                    in_process_events: args.in_process_events.max(1),
                    broker_events: args.broker_events.max(1),
                    repeat: args.repeat.max(1),
                    broker: args.broker,
                }
            }),
            Sub::Server(args) => Ok(Command::Server {
                target: args.target.target()?,
                workload: args.target.workload,
                lifetime: Duration::from_secs(args.lifetime_secs),
            }),
            Sub::Proxy(args) => Ok(Command::Proxy {
                to: args.to,
                rtt: Duration::from_millis(args.rtt_ms),
                lifetime: Duration::from_secs(args.lifetime_secs),
            }),
            Sub::Client(args) => {
                let mut scale = if args.smoke {
                    Scale::SMOKE
                } else {
                    Scale::FULL
                };
                if let Some(calls) = args.calls {
                    scale.pipelined_calls = calls;
                }
                Ok(Command::Client {
                    target: args.target.target()?,
                    workload: args.target.workload,
                    addr: args.addr,
                    scale,
                    deadline: Duration::from_secs(args.deadline_secs),
                })
            }
        }
    }
}

impl TargetArgs {
    fn target(&self) -> Result<Target, String> {
        Target::parse(&self.system, &self.codec)
    }
}

impl RunArgs {
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
        let only: Vec<String> = self.only.iter().map(|s| s.trim().to_owned()).collect();
        let workloads: Vec<Workload> = Workload::ALL
            .into_iter()
            .filter(|w| w.selected_by(&only))
            .collect();
        if workloads.is_empty() {
            return Err(format!("--only {only:?} selects no workload"));
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
            cell_timeout: Duration::from_secs(self.cell_timeout.unwrap_or(if smoke {
                60
            } else {
                180
            })),
            out: self.out.unwrap_or(default_out),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    fn parse_str(line: &str) -> Result<Command, String> {
        let cli =
            Cli::try_parse_from(std::iter::once("wirecall-bench").chain(line.split_whitespace()))
                .map_err(|e| e.to_string())?;
        cli.command.ok_or("no command")?.into_command()
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
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
        assert_eq!(plan.cell_timeout, Duration::from_secs(60));
    }

    #[test]
    fn grpc_wirecall_is_a_system_of_its_own() {
        let Ok(Command::Run(plan)) = parse_str("all --system grpc-wirecall --only W1,W2,S1") else {
            panic!("expected a run");
        };
        assert_eq!(plan.targets, [Target::GrpcWirecall]);
        let Ok(Command::Run(plan)) = parse_str("all --system wirecall --codec protobuf") else {
            panic!("expected a run");
        };
        assert_eq!(plan.targets, [Target::Wirecall(wirecall::Codec::Protobuf)]);
    }

    #[test]
    fn only_takes_a_comma_separated_list() {
        let Ok(Command::Run(plan)) = parse_str("all --only W3,W2-4x64 --cell-timeout 9") else {
            panic!("expected a run");
        };
        let ids: Vec<String> = plan.workloads.iter().map(|w| w.id()).collect();
        assert_eq!(ids, ["W2-4x64", "W3"]);
        assert_eq!(plan.cell_timeout, Duration::from_secs(9));
    }

    #[test]
    fn slow_clients_defaults_to_500_stallers_and_the_gateway_is_a_system() {
        let Ok(Command::SlowClients {
            stallers, repeat, ..
        }) = parse_str("slow-clients")
        else {
            panic!("expected slow-clients");
        };
        assert_eq!((stallers, repeat), (500, 3));
        let Ok(Command::Run(plan)) = parse_str("all --codec json --only W1") else {
            panic!("expected a run");
        };
        assert!(plan.targets.contains(&Target::Gateway));
    }

    #[test]
    fn client_needs_an_address() {
        assert!(parse_str("client --system raw-tcp --workload W3").is_err());
    }

    /// The exact argument lists `orchestrate` gives its children.
    #[test]
    fn children_parse_what_the_orchestrator_passes() {
        let Ok(Command::Server {
            target, lifetime, ..
        }) = parse_str(
            "server --system wirecall --codec json --workload W1-1obj --lifetime-secs 75",
        )
        else {
            panic!("expected a server");
        };
        assert_eq!(target, Target::Wirecall(wirecall::Codec::Json));
        assert_eq!(lifetime, Duration::from_secs(75));
        let Ok(Command::Client {
            target,
            workload,
            deadline,
            scale,
            ..
        }) = parse_str(
            "client --system raw-tcp --codec none --workload W3 --addr 127.0.0.1:7000 \
             --deadline-secs 60 --smoke",
        )
        else {
            panic!("expected a client");
        };
        assert_eq!(target, Target::RawTcp);
        assert_eq!(workload, Workload::Churn);
        assert_eq!(deadline, Duration::from_secs(60));
        assert_eq!(scale.sequential_calls, Scale::SMOKE.sequential_calls);
    }
}
