//! Starting a server from its builder: the checks `bind` makes (services, codecs, token),
//! the call pipeline, the shared state, the registrations and the accept loop.

use std::net::SocketAddr;
#[cfg(unix)]
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::builder::{ServerBuilder, TokenSource};
use super::descriptor_budget;
use super::layer::{AuthorizeLayer, CallBudget, Core, Dispatch, InFlightLimitLayer};
use super::listener::{accept_loop, Listener};
use super::metrics;
use super::registration;
use super::router::Router;
use super::running::RunningServer;
use super::shared::Shared;
use crate::auth::{FailureLimiter, Token, TokenCheck};
use crate::cold_task::cold;
use crate::error::Error;
use crate::negotiate::check_codec_list;

impl ServerBuilder {
    pub(super) fn launch(
        mut self,
        listener: Listener,
        local_addr: SocketAddr,
        #[cfg(unix)] unix_path: Option<PathBuf>,
    ) -> Result<RunningServer, Error> {
        if !self.no_reflection {
            let reflection = crate::reflect::reflection_for(&self.services);
            self.services.push(Arc::new(reflection));
        }
        let router = Arc::new(Router::build(&self.services)?);
        if self.config.codecs.is_empty() {
            return Err(Error::Config(
                "no codec is enabled; list at least one compiled-in codec".to_owned(),
            ));
        }
        check_codec_list(&self.config.codecs).map_err(Error::Config)?;
        // The codec is negotiated per connection, before any call names a service, so a
        // connection may only use a codec that every service supports.
        let services = &self.services;
        self.config.codecs.retain(|codec| {
            services
                .iter()
                .all(|service| service.descriptor().codecs.contains(codec))
        });
        if self.config.codecs.is_empty() {
            return Err(Error::Config(
                "no codec is supported by every service (see their #[service(codecs(...))]); \
                 serve them from separate servers"
                    .to_owned(),
            ));
        }
        let token = match self.token {
            None => None,
            Some(TokenSource::Fixed(token)) => Some(token),
            Some(TokenSource::Generated) => Some(Token::generate()?),
        };
        if let Some(token) = &token {
            token.validate()?;
        }
        #[cfg(feature = "tls")]
        let tls = {
            // With the gRPC door on, TLS also offers `h2`: a caller's ALPN picks the protocol.
            #[cfg(feature = "grpc")]
            let h2_too = self.config.grpc;
            #[cfg(not(feature = "grpc"))]
            let h2_too = false;
            self.tls
                .as_ref()
                .map(|tls| tls.acceptor(h2_too))
                .transpose()?
        };
        let failures = FailureLimiter::new(
            self.config.auth_max_failures,
            self.config.auth_failure_window,
        );
        let max_connections = self
            .config
            .max_connections
            .unwrap_or_else(descriptor_budget::default_max_connections);
        let calls = Arc::new(CallBudget::new(self.config.max_in_flight));
        let dispatch = Dispatch::new(Arc::clone(&router));
        let core = match self.layers.wrap(dispatch.clone()) {
            Some(layered) => Core::Layered(layered),
            None => Core::Direct(dispatch),
        };
        let pipeline = tower::Layer::layer(
            &AuthorizeLayer::new(self.authorize),
            tower::Layer::layer(&InFlightLimitLayer::new(Arc::clone(&calls)), core),
        );
        let registered = registration::start(
            std::mem::take(&mut self.registrations),
            local_addr,
            &self.services,
            &self.config.codecs,
        );
        #[cfg(feature = "grpc")]
        let grpc = self
            .config
            .grpc
            .then(|| -> Arc<dyn super::shared::SecondDoor> {
                Arc::new(crate::grpc::GrpcDoor::new(
                    &self.services,
                    &self.config.grpc_package,
                ))
            });
        let shared = Arc::new(Shared {
            registered: Mutex::new(registered),
            metrics: metrics::ServerMetrics::register(),
            max_connections,
            router,
            pipeline,
            calls,
            config: self.config,
            connections: AtomicUsize::new(0),
            shutdown: CancellationToken::new(),
            force: CancellationToken::new(),
            tracker: TaskTracker::new(),
            token_check: token.as_ref().map(TokenCheck::new),
            token,
            failures,
            #[cfg(feature = "tls")]
            tls,
            #[cfg(feature = "grpc")]
            grpc,
            stopping: AtomicBool::new(false),
            draining: CancellationToken::new(),
            stopped: CancellationToken::new(),
            #[cfg(unix)]
            unix_path: unix_path.clone(),
        });
        // Tracked like the connections, so that a shutdown also waits for the accept loop.
        shared
            .tracker
            .spawn(cold(accept_loop(listener, Arc::clone(&shared))));
        #[cfg(unix)]
        match &unix_path {
            Some(path) => tracing::info!(path = %path.display(), "wirecall server listening"),
            None => tracing::info!(%local_addr, "wirecall server listening"),
        }
        #[cfg(not(unix))]
        tracing::info!(%local_addr, "wirecall server listening");
        Ok(RunningServer { local_addr, shared })
    }
}
