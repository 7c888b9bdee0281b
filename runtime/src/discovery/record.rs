//! The registration record: what a server publishes about itself, as JSON, so that clients in
//! any language (and `etcdctl` users) can read it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The largest record a watcher accepts; larger values in the registry are skipped (logged).
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

/// The default lease time-to-live of a registration.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// The default weight of an endpoint.
pub const DEFAULT_WEIGHT: u32 = 1;

/// One server's entry in a registry.
///
/// Stored as one JSON object per service name, for example:
///
/// ```json
/// {"services":["User"],"address":"10.0.0.7:7000","codecs":["msgpack","protobuf","json"],
///  "weight":10,"version":"1.4.0","metadata":{"zone":"eu-1"}}
/// ```
///
/// `services` and `address` are required; `codecs` (default: none listed), `weight` (default
/// 1), `version` (default empty) and `metadata` (default empty) may be left out. Unknown
/// fields are ignored, so newer writers can add some.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Registration {
    /// The wire names of the services the server serves (empty: filled in by
    /// [`ServerBuilder::register`](crate::ServerBuilder::register) from the served services).
    pub services: Vec<String>,
    /// `host:port` that clients dial (empty: the server's bound address).
    pub address: String,
    /// The codecs the server accepts, by name (`json`, `msgpack`, `protobuf`).
    #[serde(default)]
    pub codecs: Vec<String>,
    /// The share of calls relative to other endpoints under [`Balance::Weighted`]
    /// (`0` is read as `1`).
    ///
    /// [`Balance::Weighted`]: super::Balance::Weighted
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// A free-form version string (for example the server's release).
    #[serde(default)]
    pub version: String,
    /// Free-form key/value pairs (zone, rack, ...).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// The lease's time-to-live: the registry removes the record this long after the server
    /// stopped renewing it. Not part of the JSON record.
    #[serde(skip, default = "default_ttl")]
    pub ttl: Duration,
}

fn default_weight() -> u32 {
    DEFAULT_WEIGHT
}

fn default_ttl() -> Duration {
    DEFAULT_TTL
}

impl Registration {
    /// A record for a server that clients reach at `address` (`host:port`). Pass an empty
    /// string to publish the server's bound address, which is right when it binds a specific
    /// interface, wrong for `0.0.0.0`.
    pub fn new(address: impl Into<String>) -> Self {
        Self {
            services: Vec::new(),
            address: address.into(),
            codecs: Vec::new(),
            weight: DEFAULT_WEIGHT,
            version: String::new(),
            metadata: BTreeMap::new(),
            ttl: DEFAULT_TTL,
        }
    }

    /// A record that publishes the server's bound address.
    pub fn bound_address() -> Self {
        Self::new("")
    }

    /// Registers under `service` too (by default: every service the server serves).
    pub fn service(mut self, service: impl Into<String>) -> Self {
        self.services.push(service.into());
        self
    }

    /// The endpoint's weight (default 1).
    pub fn weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// A version string.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Adds a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The lease time-to-live (default 10 s, at least 1 s; etcd counts whole seconds). The
    /// server renews it every third of the TTL; a host that dies disappears within it.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// The JSON record.
    pub fn to_json(&self) -> Vec<u8> {
        // A struct of strings, integers and a string map: serialising it cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a JSON record, refusing records over [`MAX_RECORD_BYTES`] and records without an
    /// address.
    pub fn from_json(bytes: &[u8]) -> Result<Self, RecordError> {
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(RecordError::TooLarge(bytes.len()));
        }
        let record: Self = serde_json::from_slice(bytes).map_err(RecordError::Json)?;
        if record.address.is_empty() {
            return Err(RecordError::NoAddress);
        }
        Ok(record)
    }

    /// The weight balancers use (`0` counts as `1`).
    pub(crate) fn effective_weight(&self) -> u32 {
        self.weight.max(1)
    }
}

/// Why a record read from a registry was skipped.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The value is larger than [`MAX_RECORD_BYTES`].
    #[error("registration record of {0} bytes is larger than the limit of {MAX_RECORD_BYTES}")]
    TooLarge(usize),
    /// The value is not a registration record.
    #[error("registration record is not valid JSON for a record: {0}")]
    Json(serde_json::Error),
    /// The record has an empty `address`.
    #[error("registration record has no address")]
    NoAddress,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips_through_json_without_the_ttl() {
        let record = Registration::new("127.0.0.1:7000")
            .service("User")
            .weight(10)
            .version("1.4.0")
            .metadata("zone", "eu-1")
            .ttl(Duration::from_secs(3));
        let json = record.to_json();
        let text = std::str::from_utf8(&json).unwrap();
        assert!(!text.contains("ttl"), "{text}");
        let back = Registration::from_json(&json).unwrap();
        assert_eq!(back.ttl, DEFAULT_TTL);
        assert_eq!(back, record.ttl(DEFAULT_TTL));
    }

    #[test]
    fn minimal_record_from_another_language_reads_with_defaults() {
        let record =
            Registration::from_json(br#"{"services":["User"],"address":"h:1","extra":true}"#)
                .unwrap();
        assert_eq!(record.weight, 1);
        assert!(record.codecs.is_empty() && record.metadata.is_empty());
    }

    #[test]
    fn hostile_records_are_refused() {
        assert!(matches!(
            Registration::from_json(&vec![b' '; MAX_RECORD_BYTES + 1]),
            Err(RecordError::TooLarge(_))
        ));
        assert!(matches!(
            Registration::from_json(b"{\"services\":[],\"address\":\"\"}"),
            Err(RecordError::NoAddress)
        ));
        assert!(matches!(
            Registration::from_json(b"[1,2"),
            Err(RecordError::Json(_))
        ));
    }
}
