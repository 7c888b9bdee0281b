//! [`EndpointOptions`]: what a balanced channel opens each of its endpoints with, from the
//! channel options it was given (`BalancedChannelBuilder::channel`).

use std::sync::Arc;
use std::time::Duration;

use super::dial::{Redial, Target};
use super::Endpoint;
use crate::client::request::{Reply, Request};
use crate::client::settings::ConnectionSettings;
use crate::codec::Codec;
use crate::error::Error;
use crate::layers::next::Layers;
use crate::metadata::Metadata;

/// How a balanced channel opens, and talks to, one endpoint.
#[derive(Clone, Debug)]
pub(crate) struct EndpointOptions {
    pub(crate) settings: ConnectionSettings,
    /// The layers of the channel options, an instance per endpoint connection.
    pub(crate) layers: Layers<Request, Reply>,
    pub(crate) max_reconnect_backoff: Duration,
    /// For the channels the balanced channel's health checks call through.
    pub(crate) timeout: Option<Duration>,
    pub(crate) metadata: Option<Arc<Metadata>>,
    pub(crate) trace: bool,
}

impl EndpointOptions {
    /// Dials `addr`: the endpoint's connection, never redialled by itself (the balanced
    /// channel ejects and probes), except to answer a refusal of early calls.
    pub(crate) async fn dial(&self, addr: &str) -> Result<Endpoint, Error> {
        let addrs = tokio::net::lookup_host(addr)
            .await
            .map_err(|cause| Error::Connect {
                addr: addr.to_owned(),
                cause,
            })?
            .collect();
        let target = Target::Tcp(addrs);
        let connection = self.settings.dial(&target).await?;
        let redial = Redial::new(
            target,
            self.settings.clone(),
            self.max_reconnect_backoff,
            false,
        );
        Ok(Endpoint::new(connection, Some(redial), &self.layers))
    }

    /// Whether the channel options have layers.
    pub(crate) fn has_layers(&self) -> bool {
        !self.layers.is_empty()
    }

    /// The codec offered first.
    pub(crate) fn first_codec(&self) -> Codec {
        self.settings
            .codecs
            .first()
            .copied()
            .unwrap_or(Codec::MessagePack)
    }
}
