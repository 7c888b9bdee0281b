//! The `server` process: serves one target on an ephemeral loopback port, prints the address
//! on stdout, serves until stdin closes, then prints a [`ServerReport`] line. Meanwhile each
//! line it reads on stdin is answered with a line holding the allocations counted so far
//! (W8; see `crate::alloc_count`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use tokio::io::AsyncBufReadExt as _;

use crate::alloc_count;
use crate::cell::{Target, Workload};
use crate::measure::peak_rss_kb;
use crate::systems::wirecall::GrpcDoor;
use crate::systems::{
    gateway, raw, raw_streams, raw_upload, tarpc, tonic, wirecall, BenchResult, Counter,
};

/// What the server process reports when it stops.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerReport {
    /// Peak RSS of the server process.
    pub rss_server_kb: Option<u64>,
    /// One-way messages counted.
    pub counted: u64,
}

/// Serves `target` until stdin reaches end-of-file or `lifetime` passes, whichever is first.
pub async fn run(target: Target, workload: Workload, lifetime: Duration) -> BenchResult<()> {
    if workload == Workload::Allocations {
        alloc_count::enable();
    }
    let counted = Counter::default();
    // The stream and upload cells' servers add their streams; the other cells' serve what
    // they call.
    let streams = matches!(
        workload,
        Workload::Streams { .. }
            | Workload::LongLink { .. }
            | Workload::UnaryBesideStream
            | Workload::Upload
    );
    // Held until the end: dropping a running wirecall server stops it.
    let mut running = None;
    let addr: SocketAddr = match target {
        Target::Wirecall(_) | Target::GrpcWirecall => {
            let door = if target == Target::GrpcWirecall {
                GrpcDoor::Open
            } else {
                GrpcDoor::Closed
            };
            let server = wirecall::serve(counted.clone(), streams, door).await?;
            let addr = server.local_addr();
            running = Some(server);
            addr
        }
        Target::Gateway => {
            let (server, addr) = gateway::serve(counted.clone()).await?;
            running = Some(server);
            addr
        }
        Target::Tarpc(format) => tarpc::serve(format, counted.clone()).await?,
        Target::Tonic => tonic::serve(counted.clone(), streams).await?,
        Target::RawTcp if workload == Workload::Upload => raw_upload::serve().await?,
        Target::RawTcp if streams => raw_streams::serve().await?,
        Target::RawTcp => raw::serve(workload == Workload::OneWay, counted.clone()).await?,
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{addr}")?;
    stdout.flush()?;
    drop(stdout);

    let mut requests = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let answer_until_eof = async {
        while let Ok(Some(_)) = requests.next_line().await {
            // Read before anything of the answer is formatted.
            let allocations = alloc_count::allocations();
            let mut stdout = std::io::stdout().lock();
            if writeln!(stdout, "{allocations}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(lifetime, answer_until_eof).await;

    let report = ServerReport {
        rss_server_kb: peak_rss_kb(),
        counted: counted.load(Ordering::Relaxed),
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", serde_json::to_string(&report)?)?;
    stdout.flush()?;
    drop(running);
    Ok(())
}
