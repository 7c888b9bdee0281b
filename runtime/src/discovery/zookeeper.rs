//! The ZooKeeper back-end (feature `zookeeper`): one ephemeral sequential node per service
//! and registration, and a persistent recursive watch per service name.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use zookeeper_client as zk;

use super::backend::{Backend, RegistryError, WatchEvent};
use super::record::Registration;

/// Where records live unless [`ZooKeeper::with_root`] says otherwise: a record of service
/// `User` is an ephemeral sequential node `/wirecall/services/User/node-0000000042`.
pub const DEFAULT_ROOT: &str = "/wirecall/services";

/// The default ZooKeeper session timeout: the "lease" of every registration this registry
/// makes (ZooKeeper removes ephemeral nodes when their session expires).
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The ZooKeeper registry back-end.
///
/// A registration is one ephemeral sequential node per service, owned by this registry's
/// session: ZooKeeper removes them when the session expires, and sequence numbers mean hosts
/// registering at the same moment never write the same node. The session is the lease: its
/// timeout (not [`Registration::ttl`]) decides how long a dead host's nodes stay. When the
/// session expires, the next renewal reports the lease lost, a new session is opened and the
/// server registers again.
#[derive(Clone)]
pub struct ZooKeeper {
    cluster: String,
    root: String,
    session_timeout: Duration,
    session: Arc<tokio::sync::Mutex<Option<zk::Client>>>,
    leases: Arc<std::sync::Mutex<HashMap<i64, Lease>>>,
    next_lease: Arc<AtomicI64>,
}

struct Lease {
    session: zk::SessionId,
    nodes: Vec<String>,
}

impl ZooKeeper {
    /// The ZooKeeper ensemble `cluster` (`host:port,host:port`), records under
    /// [`DEFAULT_ROOT`], session timeout [`DEFAULT_SESSION_TIMEOUT`]; wrap it in a
    /// [`Registry`](super::Registry) with [`Registry::new`](super::Registry::new), as every
    /// back-end. The session is opened on first
    /// use (so this is not `async`), and an ensemble that is down now is reached once it is
    /// up.
    ///
    /// ```no_run
    /// use wirecall_runtime::discovery::{Registry, ZooKeeper};
    ///
    /// let registry = Registry::new(ZooKeeper::new("127.0.0.1:2181"));
    /// ```
    pub fn new(cluster: &str) -> Self {
        Self {
            cluster: cluster.to_owned(),
            root: DEFAULT_ROOT.to_owned(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            session: Arc::new(tokio::sync::Mutex::new(None)),
            leases: Arc::new(std::sync::Mutex::new(HashMap::new())),
            next_lease: Arc::new(AtomicI64::new(1)),
        }
    }

    /// Keeps records under `root` (no trailing `/`) instead of [`DEFAULT_ROOT`].
    pub fn with_root(mut self, root: &str) -> Self {
        self.root = root.trim_end_matches('/').to_owned();
        self
    }

    /// Opens sessions with `timeout` instead of [`DEFAULT_SESSION_TIMEOUT`].
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    fn unavailable(&self, err: impl std::fmt::Display) -> RegistryError {
        RegistryError::Unavailable {
            registry: self.describe(),
            message: err.to_string(),
        }
    }

    /// The live session, opening a new one if there is none or the last one ended.
    async fn client(&self) -> Result<zk::Client, RegistryError> {
        let mut session = self.session.lock().await;
        if let Some(client) = session.as_ref() {
            if !client.state().is_terminated() {
                return Ok(client.clone());
            }
        }
        let client = zk::Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(Duration::from_secs(2))
            .with_fail_eagerly()
            .connect(&self.cluster)
            .await
            .map_err(|err| self.unavailable(err))?;
        *session = Some(client.clone());
        Ok(client)
    }

    fn service_dir(&self, service: &str) -> String {
        format!("{}/{service}", self.root)
    }
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

async fn ensure_dir(client: &zk::Client, dir: &str) -> Result<(), zk::Error> {
    match client.mkdir(dir, &persistent()).await {
        Ok(()) | Err(zk::Error::NodeExists) => Ok(()),
        Err(err) => Err(err),
    }
}

impl Backend for ZooKeeper {
    fn describe(&self) -> String {
        format!("zookeeper {}", self.cluster)
    }

    fn register<'a>(
        &'a self,
        registration: &'a Registration,
    ) -> BoxFuture<'a, Result<i64, RegistryError>> {
        async move {
            let client = self.client().await?;
            let value = registration.to_json();
            let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
            let mut nodes = Vec::new();
            for service in &registration.services {
                let dir = self.service_dir(service);
                ensure_dir(&client, &dir)
                    .await
                    .map_err(|err| self.unavailable(err))?;
                let prefix = format!("{dir}/node-");
                let (_, sequence) = client
                    .create(&prefix, &value, &ephemeral)
                    .await
                    .map_err(|err| self.unavailable(err))?;
                nodes.push(format!("{prefix}{sequence}"));
            }
            let lease = self.next_lease.fetch_add(1, Ordering::Relaxed);
            self.leases
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(
                    lease,
                    Lease {
                        session: client.session_id(),
                        nodes,
                    },
                );
            Ok(lease)
        }
        .boxed()
    }

    fn keep_alive(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        async move {
            let owner = self
                .leases
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&lease)
                .map(|l| l.session);
            let expired = || RegistryError::LeaseExpired {
                registry: self.describe(),
                lease,
            };
            let Some(owner) = owner else {
                return Err(expired());
            };
            // The client library renews the session; the lease lives as long as it does.
            let client = self.client().await?;
            if client.session_id() != owner {
                self.leases
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&lease);
                return Err(expired());
            }
            match client.state() {
                zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => Ok(()),
                state => Err(self.unavailable(format!("session {state:?}"))),
            }
        }
        .boxed()
    }

    fn deregister(&self, lease: i64) -> BoxFuture<'_, Result<(), RegistryError>> {
        async move {
            let removed = self
                .leases
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&lease);
            let Some(removed) = removed else {
                return Ok(());
            };
            let client = self.client().await?;
            if client.session_id() != removed.session {
                return Ok(()); // The old session's nodes went with it.
            }
            for node in &removed.nodes {
                match client.delete(node, None).await {
                    Ok(()) | Err(zk::Error::NoNode) => {}
                    Err(err) => return Err(self.unavailable(err)),
                }
            }
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
            let client = self.client().await?;
            let dir = self.service_dir(service);
            ensure_dir(&client, &dir)
                .await
                .map_err(|err| self.unavailable(err))?;
            // Watch first, then read: a change in between shows up twice, never not at all.
            let watcher = client
                .watch(&dir, zk::AddWatchMode::PersistentRecursive)
                .await
                .map_err(|err| self.unavailable(err))?;
            let children = client
                .list_children(&dir)
                .await
                .map_err(|err| self.unavailable(err))?;
            let mut entries = Vec::new();
            for child in children {
                let path = format!("{dir}/{child}");
                match client.get_data(&path).await {
                    Ok((data, _)) => entries.extend(record(&path, &data)),
                    Err(zk::Error::NoNode) => {}
                    Err(err) => return Err(self.unavailable(err)),
                }
            }
            let registry = self.describe();
            let changes = futures::stream::unfold(Some((watcher, client, dir)), move |state| {
                let registry = registry.clone();
                async move {
                    let (mut watcher, client, dir) = state?;
                    loop {
                        let event = watcher.changed().await;
                        match event.event_type {
                            zk::EventType::Session => {
                                // Events may have been lost while disconnected
                                // (ZOOKEEPER-4698): end, so the watch starts over.
                                let err = RegistryError::WatchEnded {
                                    registry,
                                    reason: format!("session {:?}", event.session_state),
                                };
                                return Some((Err(err), None));
                            }
                            zk::EventType::NodeDeleted if event.path != dir => {
                                let next = WatchEvent::Delete(event.path);
                                return Some((Ok(next), Some((watcher, client, dir))));
                            }
                            zk::EventType::NodeCreated | zk::EventType::NodeDataChanged
                                if event.path != dir =>
                            {
                                match client.get_data(&event.path).await {
                                    Ok((data, _)) => {
                                        if let Some((key, registration)) =
                                            record(&event.path, &data)
                                        {
                                            let next = WatchEvent::Put(key, registration);
                                            return Some((Ok(next), Some((watcher, client, dir))));
                                        }
                                    }
                                    Err(zk::Error::NoNode) => {}
                                    Err(err) => {
                                        let err = RegistryError::WatchEnded {
                                            registry,
                                            reason: err.to_string(),
                                        };
                                        return Some((Err(err), None));
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
            });
            let stream =
                futures::stream::once(async move { Ok(WatchEvent::Reset(entries)) }).chain(changes);
            Ok(stream.boxed())
        }
        .boxed()
    }
}

/// A node's data as a record, or `None` (logged) for data that is not one.
fn record(path: &str, data: &[u8]) -> Option<(String, Registration)> {
    match Registration::from_json(data) {
        Ok(registration) => Some((path.to_owned(), registration)),
        Err(err) => {
            tracing::warn!(%path, %err, "skipping a registry node that is not a wirecall record");
            None
        }
    }
}
