//! The handle on a started server ([`RunningServer`]), the [`ShutdownHandle`] that stops it
//! from anywhere, and the [`shutdown_signal`] a server binary waits for.

use std::future::Future;
use std::net::SocketAddr;
#[cfg(unix)]
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::listener::{self, serve_opened};
use super::shared::{ConnectionSlot, Shared};
use crate::auth::Token;
use crate::cold_task::cold;
use crate::transport::Transport;

/// A server that is accepting connections.
///
/// Keep it for as long as the server should serve: **dropping it stops the server at once**
/// (and logs a warning saying so). The usual ways to run one:
///
/// - [`run_until_shutdown_signal`](Self::run_until_shutdown_signal): serve until Ctrl-C or
///   SIGTERM, then shut down gracefully. What a server binary's `main` ends with.
/// - [`run`](Self::run) / [`run_until`](Self::run_until): serve until a
///   [`ShutdownHandle`] (or a future of yours) asks it to stop.
/// - [`shutdown`](Self::shutdown): graceful stop now; [`abort`](Self::abort): stop at once.
#[must_use = "dropping a RunningServer stops the server at once: keep it, or end with \
              `.run_until_shutdown_signal().await`"]
#[derive(Debug)]
pub struct RunningServer {
    pub(super) local_addr: SocketAddr,
    pub(super) shared: Arc<Shared>,
}

/// Asks a server to shut down gracefully, from anywhere: cheap to clone, and usable after the
/// [`RunningServer`] has moved into [`run`](RunningServer::run).
#[derive(Clone, Debug)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl ShutdownHandle {
    /// Starts a graceful shutdown with the server's grace period (if none has started) and
    /// waits until the server has stopped. The shutdown goes on even if this future is
    /// dropped.
    pub async fn shutdown(&self) {
        let shared = Arc::clone(&self.shared);
        let grace = shared.config.grace_period;
        tokio::spawn(cold(async move { shared.shut_down(grace).await }));
        self.stopped().await;
    }

    /// Waits until a graceful shutdown begins (before the server deregisters and drains),
    /// or until the server has stopped, however it was stopped. A health service uses it
    /// to report `Draining`.
    pub async fn shutting_down(&self) {
        tokio::select! {
            () = self.shared.draining.cancelled() => {}
            () = self.shared.stopped.cancelled() => {}
        }
    }

    /// Waits until the server has stopped, however it was stopped.
    pub async fn stopped(&self) {
        self.shared.stopped.cancelled().await;
    }

    /// Whether the server has stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopped.is_cancelled()
    }
}

/// Completes on Ctrl-C (SIGINT) or, on Unix, SIGTERM: the signals a terminal and a service
/// manager send to stop a process. If a signal handler cannot be installed, that signal is
/// logged and ignored rather than stopping the server at once.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(%err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(err) => {
                tracing::error!(%err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C received; shutting down"),
        () = terminate => tracing::info!("SIGTERM received; shutting down"),
    }
}

impl RunningServer {
    /// The address the server listens on (useful after binding port 0). A server bound with
    /// [`ServerBuilder::bind_unix`](crate::ServerBuilder::bind_unix) has no IP address and
    /// reports `0.0.0.0:0`; see [`unix_path`](Self::unix_path).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The socket path of a server bound with
    /// [`ServerBuilder::bind_unix`](crate::ServerBuilder::bind_unix).
    #[cfg(unix)]
    pub fn unix_path(&self) -> Option<&Path> {
        self.shared.unix_path.as_deref()
    }

    /// The token clients must present, if the server requires one: the fixed token, or the
    /// one generated at start-up by
    /// [`ServerBuilder::generated_token`](crate::ServerBuilder::generated_token). Hand it to
    /// clients over a channel you trust; wirecall never logs it.
    pub fn token(&self) -> Option<&str> {
        self.shared.token.as_ref().map(Token::expose)
    }

    /// Connections currently open.
    pub fn connection_count(&self) -> usize {
        self.shared.connections.load(Ordering::Acquire)
    }

    /// Calls currently running on the server, over all connections.
    pub fn in_flight(&self) -> usize {
        self.shared.calls.running()
    }

    /// Serves a stream that your code connected (or accepted) itself as one more connection
    /// of this server: the same handshake, limits, TLS (when configured) and shutdown as a
    /// connection from the listener, without a peer address. Over `max_connections` it is
    /// refused with a `Busy` hello; after shutdown has begun it is dropped. Call it from
    /// within a tokio runtime.
    ///
    /// ```
    /// # async fn run(service: impl wirecall_runtime::Service) -> Result<(), wirecall_runtime::Error> {
    /// use wirecall_runtime::{Channel, Server};
    ///
    /// let server = Server::builder().serve(service).start_without_listener().await?;
    /// let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    /// server.serve_stream(server_end);
    /// let channel = Channel::builder().connect_with(client_end).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn serve_stream<T: Transport>(&self, stream: T) {
        let shared = &self.shared;
        if shared.shutdown.is_cancelled() {
            return;
        }
        let open = shared.connections.fetch_add(1, Ordering::AcqRel);
        let guard = ConnectionSlot(Arc::clone(shared));
        let connection_shared = Arc::clone(shared);
        let busy = open >= shared.max_connections;
        if busy {
            shared.tracker.spawn(cold(async move {
                let _guard = guard;
                listener::refuse_stream(stream, connection_shared).await;
            }));
            return;
        }
        let opening = Box::pin(listener::open_stream(stream, connection_shared));
        shared.tracker.spawn(serve_opened(opening, guard));
    }

    /// A handle that can shut the server down from another task.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Serves until Ctrl-C or SIGTERM ([`shutdown_signal`]) or a [`ShutdownHandle`], then
    /// shuts down gracefully and returns once the server has stopped.
    ///
    /// ```no_run
    /// # async fn run(service: impl wirecall_runtime::Service) -> Result<(), wirecall_runtime::Error> {
    /// wirecall_runtime::Server::builder()
    ///     .serve(service)
    ///     .bind("0.0.0.0:7000")
    ///     .await?
    ///     .run_until_shutdown_signal()
    ///     .await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_until_shutdown_signal(self) {
        self.run_until(shutdown_signal()).await;
    }

    /// Serves until `signal` completes or a [`ShutdownHandle`] asks the server to stop, then
    /// shuts down gracefully and returns once the server has stopped.
    pub async fn run_until(self, signal: impl Future<Output = ()>) {
        tokio::select! {
            () = signal => self.shutdown().await,
            () = self.shared.stopped.cancelled() => {}
        }
    }

    /// Serves until a [`ShutdownHandle`] asks the server to stop; returns once it has stopped.
    pub async fn run(self) {
        self.run_until(std::future::pending()).await;
    }

    /// Graceful shutdown with the configured grace period: stop accepting, stop reading new
    /// calls, let in-flight calls finish and send their replies, then close every connection.
    /// Calls still running when the grace period ends are aborted.
    pub async fn shutdown(self) {
        let grace = self.shared.config.grace_period;
        self.shutdown_within(grace).await;
    }

    /// Graceful shutdown with an explicit grace period.
    pub async fn shutdown_within(self, grace: Duration) {
        self.shared.shut_down(grace).await;
    }

    /// Stops the server at once: no new connection or call, running calls are aborted and
    /// connections closed without a goodbye. What dropping the handle does, said out loud.
    pub fn abort(self) {
        self.shared.stopping.store(true, Ordering::Release);
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if !self.shared.stopping.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                local_addr = %self.local_addr,
                "the RunningServer handle was dropped, so the server stopped at once; keep it \
                 while the server should serve (e.g. end with run_until_shutdown_signal().await) \
                 or stop it with shutdown() or abort()"
            );
        }
        // Stopped at once: the keep-alives stop, the records expire with their leases.
        drop(self.shared.take_registrations());
        self.shared.shutdown.cancel();
        self.shared.force.cancel();
        self.shared.remove_socket_file();
        if self.shared.tracker.is_empty() {
            self.shared.stopped.cancel();
        } else {
            // The tasks end on their own now; mark the server stopped when they have.
            let shared = Arc::clone(&self.shared);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(cold(async move {
                    shared.tracker.close();
                    shared.tracker.wait().await;
                    shared.stopped.cancel();
                }));
            }
        }
    }
}
