//! The circuit of one method: closed -> open -> half-open -> closed (or open again), fed with
//! call outcomes and instants. Pure: it is told the time, it never reads a clock, so every
//! transition is tested with explicit instants.
//!
//! - **Closed**: every call goes through; its outcome counts in the rolling window. Once the
//!   window holds at least the minimum of calls and the share of failures reaches the
//!   threshold, the circuit opens.
//! - **Open**: every call fails at once, until the open window has passed; then the next call
//!   finds the circuit half-open.
//! - **Half-open**: at most `trial_calls` calls go through, the others fail at once. The first
//!   failed trial opens the circuit again; once every trial succeeded, it closes with an empty
//!   window.
//!
//! Each transition starts a new epoch: the outcome of a call admitted in an earlier epoch
//! (a slow call of the closed circuit ending while it is half-open) says nothing about the
//! current one and is dropped.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::config::CircuitBreakerConfig;
use super::window::{RollingWindow, Totals};

/// The three states of a circuit, as logs and metrics name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CircuitState {
    Closed,
    Open,
    HalfOpen,
}

impl CircuitState {
    /// The `to` label of the state-change counter.
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }
}

impl fmt::Display for CircuitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// How an admitted call ended, as far as the circuit is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Success,
    Failure,
    /// Neither: an error that says nothing about the method's health (see
    /// [`counts_as_failure`](super::counts_as_failure)), or a call dropped before it ended.
    Ignored,
}

/// What an admitted call carries until its outcome is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ticket {
    epoch: u64,
    trial: bool,
}

impl Ticket {
    /// Whether the call is one of a half-open circuit's trial calls.
    pub(super) fn is_trial(self) -> bool {
        self.trial
    }
}

/// Whether a call may go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admission {
    Admitted(Ticket),
    /// Fail it at once; calls go through again in `retry_after` (zero: when the trial calls
    /// under way have succeeded).
    Rejected {
        retry_after: Duration,
    },
}

/// A change of state, for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Transition {
    pub(super) from: CircuitState,
    pub(super) to: CircuitState,
    /// The window's calls when the circuit opened from closed (empty otherwise).
    pub(super) window: Totals,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Closed,
    Open { until: Instant },
    HalfOpen { admitted: u32, succeeded: u32 },
}

/// The circuit of one method.
#[derive(Debug)]
pub(super) struct MethodCircuit {
    phase: Phase,
    window: RollingWindow,
    epoch: u64,
}

impl MethodCircuit {
    /// A closed circuit with an empty window starting at `now`.
    pub(super) fn new(now: Instant, config: &CircuitBreakerConfig) -> Self {
        Self {
            phase: Phase::Closed,
            window: RollingWindow::new(now, config.bucket_len(), config.window_buckets),
            epoch: 0,
        }
    }

    pub(super) fn state(&self) -> CircuitState {
        match self.phase {
            Phase::Closed => CircuitState::Closed,
            Phase::Open { .. } => CircuitState::Open,
            Phase::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }

    /// Whether a call starting at `now` may go through; an open circuit whose open window has
    /// passed turns half-open here (the returned transition).
    pub(super) fn admit(
        &mut self,
        now: Instant,
        config: &CircuitBreakerConfig,
    ) -> (Admission, Option<Transition>) {
        let mut transition = None;
        if let Phase::Open { until } = self.phase {
            if now < until {
                let retry_after = until.saturating_duration_since(now);
                return (Admission::Rejected { retry_after }, None);
            }
            transition = Some(self.enter(
                Phase::HalfOpen {
                    admitted: 0,
                    succeeded: 0,
                },
                Totals::default(),
            ));
        }
        let epoch = self.epoch;
        let admission = match &mut self.phase {
            Phase::Closed => Admission::Admitted(Ticket {
                epoch,
                trial: false,
            }),
            Phase::HalfOpen { admitted, .. } if *admitted < config.trial_calls => {
                *admitted += 1;
                Admission::Admitted(Ticket { epoch, trial: true })
            }
            Phase::HalfOpen { .. } | Phase::Open { .. } => Admission::Rejected {
                retry_after: Duration::ZERO,
            },
        };
        (admission, transition)
    }

    /// Records how the call of `ticket` ended at `now`.
    pub(super) fn record(
        &mut self,
        ticket: Ticket,
        outcome: Outcome,
        now: Instant,
        config: &CircuitBreakerConfig,
    ) -> Option<Transition> {
        if ticket.epoch != self.epoch {
            return None;
        }
        match (&mut self.phase, outcome) {
            (Phase::Closed, Outcome::Success) => {
                self.window.record_success(now);
                None
            }
            (Phase::Closed, Outcome::Failure) => {
                self.window.record_failure(now);
                let totals = self.window.totals(now);
                trips(totals, config).then(|| self.open(now, config, totals))
            }
            (Phase::HalfOpen { succeeded, .. }, Outcome::Success) => {
                *succeeded += 1;
                if *succeeded < config.trial_calls {
                    return None;
                }
                self.window.clear(now);
                Some(self.enter(Phase::Closed, Totals::default()))
            }
            (Phase::HalfOpen { .. }, Outcome::Failure) => {
                Some(self.open(now, config, Totals::default()))
            }
            // The trial did not test anything: its place goes to the next call.
            (Phase::HalfOpen { admitted, .. }, Outcome::Ignored) => {
                *admitted = admitted.saturating_sub(1);
                None
            }
            (Phase::Closed, Outcome::Ignored) | (Phase::Open { .. }, _) => None,
        }
    }

    fn open(&mut self, now: Instant, config: &CircuitBreakerConfig, window: Totals) -> Transition {
        let until = now + config.open_window;
        self.enter(Phase::Open { until }, window)
    }

    fn enter(&mut self, phase: Phase, window: Totals) -> Transition {
        let from = self.state();
        self.phase = phase;
        self.epoch += 1;
        Transition {
            from,
            to: self.state(),
            window,
        }
    }
}

/// Whether the window's calls open a closed circuit: enough of them, and a share of failures
/// at or above the threshold.
fn trips(totals: Totals, config: &CircuitBreakerConfig) -> bool {
    let calls = u64::from(totals.calls());
    let failures = u64::from(totals.failures);
    calls >= u64::from(config.minimum_calls)
        && failures > 0
        && failures * 100 >= u64::from(config.error_threshold_percent) * calls
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Opens after 4 calls at 50 %, stays open 100 ms, closes after 2 trials.
    fn config() -> CircuitBreakerConfig {
        CircuitBreakerConfig::default()
            .rolling_window(Duration::from_secs(10), 10)
            .minimum_calls(4)
            .error_threshold_percent(50)
            .open_window(100 * MS)
            .trial_calls(2)
    }

    fn admitted(circuit: &mut MethodCircuit, now: Instant) -> Ticket {
        match circuit.admit(now, &config()) {
            (Admission::Admitted(ticket), _) => ticket,
            (rejected, _) => panic!("expected the call through, got {rejected:?}"),
        }
    }

    /// One call admitted and ended at `now` with `outcome`.
    fn call(circuit: &mut MethodCircuit, now: Instant, outcome: Outcome) -> Option<Transition> {
        let ticket = admitted(circuit, now);
        circuit.record(ticket, outcome, now, &config())
    }

    /// A circuit opened at the returned instant by four failures.
    fn opened() -> (MethodCircuit, Instant) {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        for _ in 0..3 {
            assert_eq!(call(&mut circuit, start, Outcome::Failure), None);
        }
        let transition = call(&mut circuit, start, Outcome::Failure).expect("opens");
        assert_eq!(transition.to, CircuitState::Open);
        (circuit, start)
    }

    /// A circuit half-open at the returned instant (its open window just passed).
    fn half_open() -> (MethodCircuit, Instant) {
        let (circuit, opened_at) = opened();
        (circuit, opened_at + 100 * MS)
    }

    #[test]
    fn a_new_circuit_is_closed_and_lets_calls_through() {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        assert_eq!(circuit.state(), CircuitState::Closed);
        let ticket = admitted(&mut circuit, start);
        assert!(!ticket.is_trial());
    }

    #[test]
    fn failures_at_the_threshold_with_the_minimum_of_calls_open_the_circuit() {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        assert_eq!(call(&mut circuit, start, Outcome::Success), None);
        assert_eq!(call(&mut circuit, start, Outcome::Failure), None);
        assert_eq!(call(&mut circuit, start, Outcome::Success), None);
        let transition = call(&mut circuit, start + MS, Outcome::Failure).expect("opens");
        assert_eq!(
            transition,
            Transition {
                from: CircuitState::Closed,
                to: CircuitState::Open,
                window: Totals {
                    successes: 2,
                    failures: 2
                },
            }
        );
        assert_eq!(circuit.state(), CircuitState::Open);
    }

    #[test]
    fn a_failure_rate_above_the_threshold_under_the_minimum_of_calls_does_not_open() {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        for _ in 0..3 {
            assert_eq!(call(&mut circuit, start, Outcome::Failure), None);
        }
        assert_eq!(circuit.state(), CircuitState::Closed);
    }

    #[test]
    fn a_failure_rate_under_the_threshold_does_not_open() {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        for _ in 0..3 {
            call(&mut circuit, start, Outcome::Success);
        }
        assert_eq!(call(&mut circuit, start, Outcome::Failure), None);
        assert_eq!(circuit.state(), CircuitState::Closed);
    }

    #[test]
    fn failures_that_left_the_rolling_window_do_not_count() {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        for _ in 0..3 {
            call(&mut circuit, start, Outcome::Failure);
        }
        // Ten seconds later the three failures are out of the window: one more is 1 of 1.
        let later = start + Duration::from_secs(10);
        assert_eq!(call(&mut circuit, later, Outcome::Failure), None);
        assert_eq!(circuit.state(), CircuitState::Closed);
    }

    #[test]
    fn ignored_outcomes_count_neither_way() {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        for _ in 0..10 {
            assert_eq!(call(&mut circuit, start, Outcome::Ignored), None);
        }
        for _ in 0..3 {
            call(&mut circuit, start, Outcome::Failure);
        }
        assert_eq!(circuit.state(), CircuitState::Closed);
    }

    #[test]
    fn an_open_circuit_rejects_calls_until_its_open_window_has_passed() {
        let (mut circuit, opened_at) = opened();
        let (admission, transition) = circuit.admit(opened_at + 30 * MS, &config());
        assert_eq!(
            admission,
            Admission::Rejected {
                retry_after: 70 * MS
            }
        );
        assert_eq!(transition, None);
        assert_eq!(circuit.state(), CircuitState::Open);
    }

    #[test]
    fn the_first_call_after_the_open_window_turns_the_circuit_half_open_as_a_trial() {
        let (mut circuit, at) = half_open();
        let (admission, transition) = circuit.admit(at, &config());
        let transition = transition.expect("turns half-open");
        assert_eq!(
            (transition.from, transition.to),
            (CircuitState::Open, CircuitState::HalfOpen)
        );
        assert!(matches!(admission, Admission::Admitted(ticket) if ticket.is_trial()));
    }

    #[test]
    fn a_half_open_circuit_lets_at_most_the_trial_calls_through_and_rejects_the_rest() {
        let (mut circuit, at) = half_open();
        let first = admitted(&mut circuit, at);
        let second = admitted(&mut circuit, at);
        assert!(first.is_trial() && second.is_trial());
        for _ in 0..5 {
            let (admission, _) = circuit.admit(at + MS, &config());
            assert_eq!(
                admission,
                Admission::Rejected {
                    retry_after: Duration::ZERO
                }
            );
        }
        assert_eq!(circuit.state(), CircuitState::HalfOpen);
    }

    #[test]
    fn one_failed_trial_opens_the_circuit_again_for_a_whole_open_window() {
        let (mut circuit, at) = half_open();
        let first = admitted(&mut circuit, at);
        let second = admitted(&mut circuit, at);
        assert_eq!(circuit.record(first, Outcome::Success, at, &config()), None);
        let transition = circuit
            .record(second, Outcome::Failure, at + 5 * MS, &config())
            .expect("reopens");
        assert_eq!(
            (transition.from, transition.to),
            (CircuitState::HalfOpen, CircuitState::Open)
        );
        let (admission, _) = circuit.admit(at + 5 * MS, &config());
        assert_eq!(
            admission,
            Admission::Rejected {
                retry_after: 100 * MS
            }
        );
    }

    #[test]
    fn every_trial_succeeding_closes_the_circuit_with_an_empty_window() {
        let (mut circuit, at) = half_open();
        let first = admitted(&mut circuit, at);
        let second = admitted(&mut circuit, at);
        assert_eq!(circuit.record(first, Outcome::Success, at, &config()), None);
        let transition = circuit
            .record(second, Outcome::Success, at, &config())
            .expect("closes");
        assert_eq!(
            (transition.from, transition.to),
            (CircuitState::HalfOpen, CircuitState::Closed)
        );
        // The failures that opened it are forgotten: three more do not reopen it.
        for _ in 0..3 {
            assert_eq!(call(&mut circuit, at, Outcome::Failure), None);
        }
        assert_eq!(circuit.state(), CircuitState::Closed);
    }

    #[test]
    fn an_ignored_trial_gives_its_place_to_the_next_call() {
        let (mut circuit, at) = half_open();
        let first = admitted(&mut circuit, at);
        let _second = admitted(&mut circuit, at);
        assert_eq!(circuit.record(first, Outcome::Ignored, at, &config()), None);
        let third = admitted(&mut circuit, at);
        assert!(third.is_trial());
    }

    #[test]
    fn a_call_admitted_before_the_circuit_opened_does_not_count_as_a_trial() {
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config());
        let slow = admitted(&mut circuit, start);
        for _ in 0..4 {
            call(&mut circuit, start, Outcome::Failure);
        }
        let at = start + 100 * MS;
        let trial = admitted(&mut circuit, at);
        // The slow call of the closed circuit ends now: it neither closes nor reopens it.
        assert_eq!(circuit.record(slow, Outcome::Failure, at, &config()), None);
        assert_eq!(circuit.record(slow, Outcome::Success, at, &config()), None);
        assert_eq!(circuit.state(), CircuitState::HalfOpen);
        assert_eq!(circuit.record(trial, Outcome::Success, at, &config()), None);
    }

    #[test]
    fn a_zero_percent_threshold_opens_on_the_first_failure_past_the_minimum() {
        let config = config().error_threshold_percent(0);
        let start = Instant::now();
        let mut circuit = MethodCircuit::new(start, &config);
        for _ in 0..10 {
            let (Admission::Admitted(ticket), _) = circuit.admit(start, &config) else {
                panic!("closed");
            };
            assert_eq!(
                circuit.record(ticket, Outcome::Success, start, &config),
                None
            );
        }
        let (Admission::Admitted(ticket), _) = circuit.admit(start, &config) else {
            panic!("closed");
        };
        let transition = circuit.record(ticket, Outcome::Failure, start, &config);
        assert_eq!(transition.map(|t| t.to), Some(CircuitState::Open));
    }
}
