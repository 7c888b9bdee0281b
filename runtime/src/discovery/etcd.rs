//! The etcd back-end (feature `etcd`): leases with keep-alive, one key per service and lease,
//! and a prefix watch per service name.

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};

use super::backend::{Backend, RegistryError, WatchEvent};
use super::record::Registration;

/// Where records live unless [`Etcd::connect_with_prefix`] says otherwise: a record of service
/// `User` under lease `L` is the key `/wirecall/services/User/{L in hex}`.
pub const DEFAULT_PREFIX: &str = "/wirecall/services/";

/// The etcd registry back-end.
///
/// Each server grants its own lease and writes its records under keys that embed the lease
/// id, so one host's lease expiring can only ever remove that host's records.
#[derive(Clone)]
pub struct Etcd {
    client: etcd_client::Client,
    endpoints: String,
    prefix: String,
}

impl Etcd {
    /// Connects to the etcd cluster at `endpoints` (`host:port`, `http://host:port`); wrap
    /// it in a [`Registry`](super::Registry) with [`Registry::new`](super::Registry::new), as every back-end. The connection is
    /// made lazily: a cluster that is down now is reached once it comes up.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), wirecall_runtime::discovery::RegistryError> {
    /// use wirecall_runtime::discovery::{Etcd, Registry};
    ///
    /// let registry = Registry::new(Etcd::connect(["127.0.0.1:2379"]).await?);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect<E: AsRef<str>, S: AsRef<[E]>>(
        endpoints: S,
    ) -> Result<Self, RegistryError> {
        Self::connect_with_prefix(endpoints, DEFAULT_PREFIX).await
    }

    /// Like [`connect`](Self::connect), with records under `prefix` (it should end in `/`).
    pub async fn connect_with_prefix<E: AsRef<str>, S: AsRef<[E]>>(
        endpoints: S,
        prefix: &str,
    ) -> Result<Self, RegistryError> {
        let described = endpoints
            .as_ref()
            .iter()
            .map(|e| e.as_ref().to_owned())
            .collect::<Vec<_>>()
            .join(",");
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(std::time::Duration::from_secs(2))
            .with_timeout(std::time::Duration::from_secs(5))
            .with_keep_alive(
                std::time::Duration::from_secs(2),
                std::time::Duration::from_secs(2),
            );
        let client = etcd_client::Client::connect(endpoints, Some(options))
            .await
            .map_err(|err| RegistryError::Unavailable {
                registry: format!("etcd {described}"),
                message: err.to_string(),
            })?;
        Ok(Self {
            client,
            endpoints: described,
            prefix: prefix.to_owned(),
        })
    }

    fn unavailable(&self, err: etcd_client::Error) -> RegistryError {
        RegistryError::Unavailable {
            registry: self.describe(),
            message: err.to_string(),
        }
    }

    fn service_prefix(&self, service: &str) -> String {
        format!("{}{service}/", self.prefix)
    }
}

impl Backend for Etcd {
    fn describe(&self) -> String {
        format!("etcd {}", self.endpoints)
    }

    fn register<'a>(
        &'a self,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<i64, RegistryError>> {
        async move {
            let mut client = self.client.clone();
            let ttl = registration.ttl.as_secs_f64().ceil().max(1.0) as i64;
            let lease = client
                .lease_grant(ttl, None)
                .await
                .map_err(|err| self.unavailable(err))?
                .id();
            let value = registration.to_json();
            let puts: Vec<etcd_client::TxnOp> = registration
                .services
                .iter()
                .map(|service| {
                    etcd_client::TxnOp::put(
                        format!("{}{lease:016x}", self.service_prefix(service)),
                        value.clone(),
                        Some(etcd_client::PutOptions::new().with_lease(lease)),
                    )
                })
                .collect();
            // All of one server's records appear together or not at all.
            client
                .txn(etcd_client::Txn::new().and_then(puts))
                .await
                .map_err(|err| self.unavailable(err))?;
            Ok(lease)
        }
        .boxed()
    }

    fn keep_alive(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        async move {
            let mut client = self.client.clone();
            let (mut keeper, mut responses) = client
                .lease_keep_alive(lease)
                .await
                .map_err(|err| self.unavailable(err))?;
            keeper
                .keep_alive()
                .await
                .map_err(|err| self.unavailable(err))?;
            match responses.message().await {
                Ok(Some(response)) if response.ttl() > 0 => Ok(()),
                Ok(_) => Err(RegistryError::LeaseExpired {
                    registry: self.describe(),
                    lease,
                }),
                Err(err) => Err(self.unavailable(err)),
            }
        }
        .boxed()
    }

    fn deregister(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        async move {
            let mut client = self.client.clone();
            client
                .lease_revoke(lease)
                .await
                .map_err(|err| self.unavailable(err))?;
            Ok(())
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        service: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchEvent, RegistryError>>, RegistryError>>
    {
        async move {
            let mut client = self.client.clone();
            let prefix = self.service_prefix(service);
            let snapshot = client
                .get(
                    prefix.clone(),
                    Some(etcd_client::GetOptions::new().with_prefix()),
                )
                .await
                .map_err(|err| self.unavailable(err))?;
            let revision = snapshot.header().map_or(0, |h| h.revision());
            let entries = snapshot
                .kvs()
                .iter()
                .filter_map(|kv| record(kv.key(), kv.value()))
                .collect();
            let watch = client
                .watch(
                    prefix,
                    Some(
                        etcd_client::WatchOptions::new()
                            .with_prefix()
                            .with_start_revision(revision + 1),
                    ),
                )
                .await
                .map_err(|err| self.unavailable(err))?;
            let registry = self.describe();
            let changes = watch.flat_map(move |response| {
                let events: Vec<Result<WatchEvent, RegistryError>> = match response {
                    Err(err) => vec![Err(RegistryError::WatchEnded {
                        registry: registry.clone(),
                        reason: err.to_string(),
                    })],
                    Ok(response) if response.canceled() || response.compact_revision() > 0 => {
                        vec![Err(RegistryError::WatchEnded {
                            registry: registry.clone(),
                            reason: format!(
                                "cancelled by etcd ({}); resynchronising",
                                response.cancel_reason()
                            ),
                        })]
                    }
                    Ok(response) => response
                        .events()
                        .iter()
                        .filter_map(|event| {
                            let kv = event.kv()?;
                            match event.event_type() {
                                etcd_client::EventType::Put => record(kv.key(), kv.value())
                                    .map(|(key, value)| Ok(WatchEvent::Put(key, value))),
                                etcd_client::EventType::Delete => Some(Ok(WatchEvent::Delete(
                                    String::from_utf8_lossy(kv.key()).into_owned(),
                                ))),
                            }
                        })
                        .collect(),
                };
                futures::stream::iter(events)
            });
            let stream =
                futures::stream::once(async move { Ok(WatchEvent::Reset(entries)) }).chain(changes);
            Ok(stream.boxed())
        }
        .boxed()
    }
}

/// A key/value pair as a record, or `None` (logged) for a value that is not one.
fn record(key: &[u8], value: &[u8]) -> Option<(String, Registration)> {
    let key = String::from_utf8_lossy(key).into_owned();
    match Registration::from_json(value) {
        Ok(registration) => Some((key, registration)),
        Err(err) => {
            tracing::warn!(%key, %err, "skipping a registry entry that is not a wirecall record");
            None
        }
    }
}
