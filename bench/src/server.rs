//! The `server` process: serves one target on an ephemeral loopback port, prints the address
//! on stdout, serves until stdin closes, then prints a [`ServerReport`] line.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cell::{Target, Workload};
use crate::measure::peak_rss_kb;
use crate::systems::{raw, tarpc, wirecall, BenchResult, Counter};

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
    let counted = Counter::default();
    // Held until the end: dropping a running wirecall server stops it.
    let mut running = None;
    let addr: SocketAddr = match target {
        Target::Wirecall(_) => {
            let server = wirecall::serve(counted.clone()).await?;
            let addr = server.local_addr();
            running = Some(server);
            addr
        }
        Target::Tarpc(format) => tarpc::serve(format, counted.clone()).await?,
        Target::RawTcp => raw::serve(workload == Workload::OneWay, counted.clone()).await?,
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{addr}")?;
    stdout.flush()?;
    drop(stdout);

    let mut stdin = tokio::io::stdin();
    let _ = tokio::time::timeout(
        lifetime,
        tokio::io::copy(&mut stdin, &mut tokio::io::sink()),
    )
    .await;

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
