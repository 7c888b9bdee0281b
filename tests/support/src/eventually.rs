//! Waiting for a condition instead of sleeping: a test that sleeps "long enough" and then
//! asserts fails on a loaded machine, and wastes the whole sleep on an idle one. These helpers
//! check the condition every few milliseconds and fail, naming it, only after a deadline that
//! is generous because it costs nothing when the condition holds sooner.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// How long [`eventually`] and [`eventually_async`] wait before they fail the test.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// How often the condition is checked.
const POLL_EVERY: Duration = Duration::from_millis(10);

/// Waits until `condition` holds, checking it every 10 ms; panics with `what` if it still
/// does not after [`PATIENCE`].
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    eventually_async(what, || std::future::ready(condition())).await;
}

/// [`eventually`] with its own deadline, for what takes longer than [`PATIENCE`] even when
/// all is well (a broker restart, a hundred thousand events).
pub async fn eventually_within(
    what: &str,
    patience: Duration,
    mut condition: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + patience;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {patience:?}");
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// [`eventually`] for a condition that has to wait itself, such as a call: `condition` is
/// called again (and awaited) until its future yields `true`. The deadline bounds the whole
/// wait, the condition's own time included.
pub async fn eventually_async<F, C>(what: &str, mut condition: C)
where
    C: FnMut() -> F,
    F: Future<Output = bool>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        match tokio::time::timeout_at(deadline, condition()).await {
            Ok(true) => return,
            Ok(false) if Instant::now() < deadline => tokio::time::sleep(POLL_EVERY).await,
            _ => panic!("{what}: not within {PATIENCE:?}"),
        }
    }
}
