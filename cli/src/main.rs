//! `wirecall`: list, describe and call the services of any wirecall server from a shell.
//!
//! It knows no service at compile time: it asks the server's reflection service
//! (`wirecall.Reflection`) what it serves and calls methods with the JSON codec, arguments
//! given as a JSON object keyed by argument name.

mod bench;
mod call;
mod connect;
mod describe;
mod error;
mod output;
mod reply_metadata;
mod stream;
mod upload;
mod upload_lines;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use connect::ConnectOptions;
use error::CliError;
use upload_lines::UploadSource;

const AFTER_HELP: &str = "\
Examples:
  wirecall list 127.0.0.1:7000
  wirecall describe 127.0.0.1:7000 UserService
  wirecall call 127.0.0.1:7000 UserService.get_user_id '{\"name\":\"fanly\"}'
  echo '{\"user_id\":7}' | wirecall call 127.0.0.1:7000 UserService.find
  wirecall call 127.0.0.1:7000 UserService.get_user @user.json
  wirecall call 127.0.0.1:7000 UserFeed.list_users '{\"count\":3}' | jq .name
  printf '1\\n2\\n3\\n' | wirecall call 127.0.0.1:7000 Meter.total '{\"limit\":10}'
  wirecall call 127.0.0.1:7000 Meter.doubled --upload readings.jsonl
  wirecall proto 127.0.0.1:7000 > users.proto
  wirecall bench 127.0.0.1:7000 UserService.get_user_id '{\"name\":\"fanly\"}' --calls 10000 --concurrency 32
  wirecall bench 127.0.0.1:7000 UserFeed.list_users '{\"count\":100}' --calls 200
  wirecall bench 127.0.0.1:7000 Meter.total '{\"limit\":1000}' --upload readings.jsonl --calls 500

Environment:
  WIRECALL_TOKEN        the token, as --token
  WIRECALL_POLICY_FILE  a policy file: per-method timeout, retries, concurrency, breaker
                        and hedge, applied as a Rust client applies them
  WIRECALL_POLICY       policy entries over the file's, `;` between them, e.g.
                        'UserService.get_user timeout=300ms; UserService.* concurrency=8'

Exit codes:
  0  success, or stdout was closed early (`| head`, `| grep -q`)
  1  bad input: arguments that are not a JSON object, an unknown service, method or argument,
     a line of an upload that is not JSON, a policy (WIRECALL_POLICY, WIRECALL_POLICY_FILE)
     that does not parse; or stdout could not be written
  2  bad command line (unknown option, missing operand)
  3  could not connect: refused, TLS failure, wrong or missing token, codec refused
  4  the call failed: the server answered with a wirecall error (its code and message are
     printed), or the deadline passed, or the connection broke; for a server stream, also
     when it fails after some items were printed
  5  the method returned its application error (`Err(e)`, printed as JSON on stderr)";

/// A command-line client for wirecall services, through their built-in reflection.
#[derive(Debug, Parser)]
#[command(name = "wirecall", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    connect: ConnectOptions,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the services a server serves
    List {
        /// The server's address (`host:port`)
        addr: String,
    },
    /// Describe a service: its methods, argument and reply types, and named types
    Describe {
        /// The server's address (`host:port`)
        addr: String,
        /// The service's name, as `list` shows it
        service: String,
        /// Print the schema as JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Call a method with arguments as a JSON object keyed by argument name; a server stream
    /// prints one JSON line per item, as the items arrive. A method that takes an upload
    /// (client or bidirectional streaming) reads its items as JSON lines from standard input
    /// (or `--upload FILE`) and sends each as it is read; the end of the input ends the upload
    Call {
        /// The server's address (`host:port`)
        addr: String,
        /// `Service.method`
        target: String,
        /// The arguments: a JSON object, `@file` to read it from a file, or `-` (or nothing)
        /// to read it from standard input; `{}` when the method takes none. When standard
        /// input carries an upload, nothing means `{}`
        args: Option<String>,
        /// For a method that takes an upload: read its items, one JSON value per line (blank
        /// lines skipped), from FILE instead of standard input (`-`, the default)
        #[arg(long, value_name = "FILE")]
        upload: Option<String>,
    },
    /// Write a `.proto` file for every service that speaks Protobuf
    Proto {
        /// The server's address (`host:port`)
        addr: String,
        /// The protobuf package of the file
        #[arg(long, default_value = "wirecall.services")]
        package: String,
    },
    /// Call a method many times and print throughput and latency percentiles. A unary call's
    /// latency runs to its reply. A server stream is read to its end, and an item's latency is
    /// its gap: the time since the stream's previous item (since the open, for its first). A
    /// method that takes an upload reads its items once, as `call` does (JSON lines from
    /// standard input or `--upload FILE`), uploads all of them in every call, and a call's
    /// latency runs from the open to the answer's end
    Bench {
        /// The server's address (`host:port`)
        addr: String,
        /// `Service.method`
        target: String,
        /// The arguments, as for `call`
        args: Option<String>,
        /// How many calls in total: unary calls, streams read to their end, or uploads
        #[arg(long, default_value_t = 1000)]
        calls: u64,
        /// How many calls in flight at once (on one connection, which multiplexes them)
        #[arg(long, default_value_t = 16)]
        concurrency: u64,
        /// For a method that takes an upload: read its items, one JSON value per line, from
        /// FILE instead of standard input (`-`, the default); every call uploads them all
        #[arg(long, value_name = "FILE")]
        upload: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("wirecall: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // Dropping the runtime would wait for its blocking threads, and an upload answered before
    // the end of its input leaves one in a read of standard input that cannot be cancelled
    // (tokio's `Stdin` docs): the command would hang until the next line or the end of the
    // input. Nothing else is left to wait for once `run` has returned.
    runtime.shutdown_background();
    match result {
        Ok(()) | Err(CliError::StdoutClosed) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wirecall: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

async fn run(cli: Cli) -> Result<(), CliError> {
    let options = &cli.connect;
    match cli.command {
        Command::List { addr } => describe::list(options, &addr).await,
        Command::Describe {
            addr,
            service,
            json,
        } => describe::describe(options, &addr, &service, json).await,
        Command::Call {
            addr,
            target,
            args,
            upload,
        } => {
            let upload = upload.as_deref().map(UploadSource::from_operand);
            let prepared =
                call::PreparedCall::new(options, &addr, &target, args.as_deref(), upload).await?;
            if let Some(source) = &prepared.upload_source {
                upload::call_with_upload(&prepared, source).await
            } else if prepared.method.server_stream {
                stream::print_items(&prepared).await
            } else {
                call::print_reply(prepared).await
            }
        }
        Command::Proto { addr, package } => describe::proto(options, &addr, &package).await,
        Command::Bench {
            addr,
            target,
            args,
            calls,
            concurrency,
            upload,
        } => {
            let upload = upload.as_deref().map(UploadSource::from_operand);
            let load = bench::Load { calls, concurrency };
            bench::bench(options, &addr, &target, args.as_deref(), upload, load).await
        }
    }
}
