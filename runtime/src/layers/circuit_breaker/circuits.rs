//! [`Circuits`]: the circuits of one breaker, one per method, each fed with the outcomes of
//! the calls it admitted. The tower layer keeps one set per service it builds; a channel keeps
//! one set for the breakers its methods' policies turn on (`policy/`), so both paths share
//! the state machine, the logs and the metrics.

use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;

use super::circuit_state::{Admission, MethodCircuit, Outcome, Ticket, Transition};
use super::config::CircuitBreakerConfig;
use super::failure::counts_as_failure;
use super::metrics;
use crate::error::Error;
use crate::id_hash::IdMap;
use crate::method::MethodId;

/// The circuits of one breaker, by method. One lock for all methods: it is held for a few
/// comparisons per call, never across an await.
pub(crate) struct Circuits {
    /// The endpoint the circuits guard, for logs and metrics (`None`: not known here; the
    /// channel around a layer names it in the error instead).
    endpoint: Option<String>,
    by_method: Mutex<IdMap<MethodId, MethodCircuit>>,
}

impl Circuits {
    pub(crate) fn new(endpoint: Option<String>) -> Arc<Self> {
        Arc::new(Self {
            endpoint,
            by_method: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, IdMap<MethodId, MethodCircuit>> {
        // The map stays consistent if a holder panicked: every update is one assignment.
        self.by_method.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets a call of `method` through, or fails it with [`Error::CircuitOpen`] (naming this
    /// set's endpoint, when it knows it). `config` is the method's: the layer passes one for
    /// every method, a policy one per method. The pending outcome owns its handles, for a
    /// future that outlives the caller's borrow (the layer's boxed future).
    pub(crate) fn admit(
        self: &Arc<Self>,
        method: MethodId,
        config: &Arc<CircuitBreakerConfig>,
    ) -> Result<PendingOutcome<Arc<Circuits>, Arc<CircuitBreakerConfig>>, Error> {
        let (ticket, admitted_at) = self.ticket(method, config)?;
        Ok(PendingOutcome {
            circuits: Arc::clone(self),
            method,
            config: Arc::clone(config),
            ticket: Some(ticket),
            admitted_at,
        })
    }

    /// [`admit`](Self::admit) for a caller that outlives the call (a channel's own call
    /// path): the pending outcome borrows, and touches no reference count.
    pub(crate) fn admit_borrowed<'a>(
        &'a self,
        method: MethodId,
        config: &'a CircuitBreakerConfig,
    ) -> Result<PendingOutcome<&'a Circuits, &'a CircuitBreakerConfig>, Error> {
        let (ticket, admitted_at) = self.ticket(method, config)?;
        Ok(PendingOutcome {
            circuits: self,
            method,
            config,
            ticket: Some(ticket),
            admitted_at,
        })
    }

    fn ticket(
        &self,
        method: MethodId,
        config: &CircuitBreakerConfig,
    ) -> Result<(Ticket, Instant), Error> {
        let now = Instant::now();
        let (admission, transition) = self
            .lock()
            .entry(method)
            .or_insert_with(|| MethodCircuit::new(now, config))
            .admit(now, config);
        self.report(method, transition);
        match admission {
            Admission::Admitted(ticket) => Ok((ticket, now)),
            Admission::Rejected { retry_after } => Err(Error::CircuitOpen {
                method,
                endpoint: self.endpoint.clone(),
                retry_after,
            }),
        }
    }

    /// Records the outcome of an admitted call. The success of a call of a closed circuit
    /// counts at the instant it was admitted (`admitted_at`), which saves a clock read on
    /// the common path; failures and trial calls, which may change the state, count when
    /// they end.
    fn record(
        &self,
        method: MethodId,
        ticket: Ticket,
        outcome: Outcome,
        admitted_at: Instant,
        config: &CircuitBreakerConfig,
    ) {
        let now = match outcome {
            Outcome::Success if !ticket.is_trial() => admitted_at,
            _ => Instant::now(),
        };
        let transition = self
            .lock()
            .get_mut(&method)
            .and_then(|circuit| circuit.record(ticket, outcome, now, config));
        self.report(method, transition);
    }

    /// Logs and counts a change of state, outside the lock.
    fn report(&self, method: MethodId, transition: Option<Transition>) {
        if let Some(transition) = transition {
            metrics::state_changed(method, self.endpoint.as_deref(), transition);
        }
    }
}

impl Drop for Circuits {
    fn drop(&mut self) {
        for (method, circuit) in self.lock().iter() {
            metrics::circuit_dropped(*method, self.endpoint.as_deref(), circuit.state());
        }
    }
}

/// The pending outcome of a call that outlives its caller's borrow: a stream, which reports
/// how it ended when it ends.
pub(crate) type OwnedOutcome = PendingOutcome<Arc<Circuits>, Arc<CircuitBreakerConfig>>;

/// An admitted call whose outcome is not recorded yet. A call dropped before it ended (its
/// caller gave up) counts for nothing, but gives back its place if it was a trial call:
/// otherwise a half-open circuit whose trials were all cancelled would stay half-open.
pub(crate) struct PendingOutcome<C, K>
where
    C: Deref<Target = Circuits>,
    K: Deref<Target = CircuitBreakerConfig>,
{
    circuits: C,
    method: MethodId,
    config: K,
    ticket: Option<Ticket>,
    admitted_at: Instant,
}

impl<C, K> PendingOutcome<C, K>
where
    C: Deref<Target = Circuits>,
    K: Deref<Target = CircuitBreakerConfig>,
{
    /// Records how the call ended: `Ok` a success, an error by
    /// [`counts_as_failure`](super::counts_as_failure).
    pub(crate) fn finish<T>(self, result: &Result<T, Error>) {
        let outcome = match result {
            Ok(_) => Outcome::Success,
            Err(err) if counts_as_failure(err) => Outcome::Failure,
            Err(_) => Outcome::Ignored,
        };
        self.finish_with(outcome);
    }

    /// Records a call that failed with `error` (a failure if the breaker counts it).
    pub(crate) fn finish_failed(self, error: &Error) {
        let outcome = if counts_as_failure(error) {
            Outcome::Failure
        } else {
            Outcome::Ignored
        };
        self.finish_with(outcome);
    }

    fn finish_with(mut self, outcome: Outcome) {
        if let Some(ticket) = self.ticket.take() {
            self.circuits
                .record(self.method, ticket, outcome, self.admitted_at, &self.config);
        }
    }
}

impl<C, K> Drop for PendingOutcome<C, K>
where
    C: Deref<Target = Circuits>,
    K: Deref<Target = CircuitBreakerConfig>,
{
    fn drop(&mut self) {
        // Ignoring a call of a closed circuit changes nothing: only trials need the lock.
        if let Some(ticket) = self.ticket.take().filter(|ticket| ticket.is_trial()) {
            self.circuits.record(
                self.method,
                ticket,
                Outcome::Ignored,
                self.admitted_at,
                &self.config,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::method::method_id;

    /// Opens after 2 failures, half-open after 1 ms, 1 trial.
    fn config() -> Arc<CircuitBreakerConfig> {
        Arc::new(
            CircuitBreakerConfig::default()
                .minimum_calls(2)
                .open_window(Duration::from_millis(1))
                .trial_calls(1),
        )
    }

    fn failure() -> Result<(), Error> {
        Err(Error::Timeout {
            after: Duration::from_secs(1),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_trial_call_gives_its_place_to_the_next_call() {
        let method = method_id("S", "m");
        let circuits = Circuits::new(None);
        let config = config();
        for _ in 0..2 {
            circuits
                .admit(method, &config)
                .expect("closed")
                .finish(&failure());
        }
        assert!(circuits.admit(method, &config).is_err());
        tokio::time::advance(Duration::from_millis(1)).await;
        let trial = circuits.admit(method, &config).expect("half-open");
        assert!(circuits.admit(method, &config).is_err());
        drop(trial);
        assert!(circuits.admit(method, &config).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_circuit_names_the_endpoint_it_guards() {
        let method = method_id("S", "m");
        let circuits = Circuits::new(Some("127.0.0.1:9".to_owned()));
        let config = config();
        for _ in 0..2 {
            circuits
                .admit(method, &config)
                .expect("closed")
                .finish(&failure());
        }
        let Err(Error::CircuitOpen { endpoint, .. }) = circuits.admit(method, &config) else {
            panic!("open");
        };
        assert_eq!(endpoint.as_deref(), Some("127.0.0.1:9"));
    }
}
