//! A built-in health service, like gRPC's health-checking protocol: per service, `Serving`,
//! `NotServing` or `Draining`, which orchestrators and clients can probe over wirecall.
//!
//! The facade's `wirecall::health` module shows it in use.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::cold_task::cold;

/// A service's health, as the health service reports it.
#[wirecall_macros::message]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServingStatus {
    /// The service is not known to this server's health reporter.
    Unknown,
    /// The service accepts calls.
    Serving,
    /// The service is up but does not accept calls now.
    NotServing,
    /// The server is shutting down: it finishes the calls it has, new ones should go
    /// elsewhere.
    Draining,
}

/// The health service (wire name `wirecall.Health`).
#[wirecall_macros::service(name = "wirecall.Health")]
pub trait Health {
    /// The status of `service` (its wire name); `""` is the server as a whole. A service the
    /// reporter was never told about is `Unknown`.
    #[idempotent]
    async fn check(&self, service: String) -> ServingStatus;
}

/// Sets the statuses the health service reports. Cheap to clone; clones share the statuses.
#[derive(Clone, Debug)]
pub struct HealthReporter {
    statuses: Arc<RwLock<HashMap<String, ServingStatus>>>,
}

impl Default for HealthReporter {
    fn default() -> Self {
        Self::new()
    }
}

impl HealthReporter {
    /// A reporter in which the server as a whole (`""`) is `Serving`.
    pub fn new() -> Self {
        let statuses = HashMap::from([(String::new(), ServingStatus::Serving)]);
        Self {
            statuses: Arc::new(RwLock::new(statuses)),
        }
    }

    /// Sets the status of `service` (`""`: the whole server).
    pub fn set(&self, service: &str, status: ServingStatus) {
        self.statuses
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(service.to_owned(), status);
    }

    /// The status of `service`.
    pub fn status(&self, service: &str) -> ServingStatus {
        self.statuses
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(service)
            .copied()
            .unwrap_or(ServingStatus::Unknown)
    }

    /// The health service to pass to [`ServerBuilder::serve`](crate::ServerBuilder::serve).
    pub fn service(&self) -> HealthServer<Self> {
        HealthServer::new(self.clone())
    }

    /// Reports every service (and the server) as `Draining` once the server's graceful
    /// shutdown begins, before it deregisters and drains.
    pub fn drain_on_shutdown(&self, server: crate::server::running::ShutdownHandle) {
        let reporter = self.clone();
        tokio::spawn(cold(async move {
            server.shutting_down().await;
            let mut statuses = reporter.statuses.write().unwrap_or_else(|p| p.into_inner());
            for status in statuses.values_mut() {
                *status = ServingStatus::Draining;
            }
        }));
    }
}

impl Health for HealthReporter {
    async fn check(&self, service: String) -> ServingStatus {
        self.status(&service)
    }
}
