//! Which servers understand early calls: a process-wide table of the addresses whose last
//! `Accepted` hello carried the early-calls extension, with what that connection settled.
//! A connection to an address in the table sends its hello with early calls and returns at
//! once; its first calls travel right behind the hello (book: "Early calls").
//!
//! The table is bounded: when it is full, a new address empties it first (the next dial of
//! each forgotten address simply waits for its hello once more).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::codec::Codec;
use crate::negotiate::{negotiate_codec, Negotiated, Preference};

/// The most servers remembered at once.
const CAPACITY: usize = 4096;

/// A server as the client reached it: the address it connected to and, with TLS, the name
/// it verified (one address may serve several names).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct ServerKey {
    pub(super) addr: SocketAddr,
    pub(super) server_name: Option<String>,
}

/// What the last accepted connection to a server settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct KnownServer {
    /// The codecs it allows, in its order.
    pub(super) supported: Vec<Codec>,
    /// It chose by its own order, not the client's (`prefer_server_codec_order`).
    pub(super) server_order: bool,
    /// The protocol version of that connection; early calls are sent only in the same one.
    pub(super) version: u8,
    /// The frame limit it announced: early frames are sent no larger.
    pub(super) max_frame_len: Option<u32>,
}

impl KnownServer {
    /// What an accepting hello to `offer` says about its server. `server_order` when known
    /// (an early hello lists the codec to choose first, so its answer cannot tell), else
    /// inferred: the server chose otherwise than the client's order would.
    pub(super) fn accepted(
        offer: &[u8],
        negotiated: &Negotiated,
        supported: &[u8],
        server_order: Option<bool>,
    ) -> Self {
        let supported: Vec<Codec> = supported
            .iter()
            .filter_map(|id| Codec::from_id(*id))
            .collect();
        let server_order = server_order.unwrap_or_else(|| {
            negotiate_codec(offer, &supported, Preference::Client) != Some(negotiated.codec)
        });
        Self {
            supported,
            server_order,
            version: negotiated.version,
            max_frame_len: negotiated.peer_max_frame_len,
        }
    }

    /// The codec a connection offering `offer` would get from this server, as a connection
    /// without early calls would: early calls are encoded in it.
    pub(super) fn codec_for(&self, offer: &[u8]) -> Option<Codec> {
        let preference = if self.server_order {
            Preference::Server
        } else {
            Preference::Client
        };
        negotiate_codec(offer, &self.supported, preference)
    }
}

/// Known servers, at most `capacity` of them.
#[derive(Debug)]
struct Table {
    servers: HashMap<ServerKey, KnownServer>,
    capacity: usize,
}

impl Table {
    fn remember(&mut self, key: ServerKey, server: KnownServer) {
        if self.servers.len() >= self.capacity && !self.servers.contains_key(&key) {
            self.servers.clear();
        }
        self.servers.insert(key, server);
    }
}

fn table() -> MutexGuard<'static, Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    // Each operation is one insert, remove or lookup: a poisoned table is still consistent.
    TABLE
        .get_or_init(|| {
            Mutex::new(Table {
                servers: HashMap::new(),
                capacity: CAPACITY,
            })
        })
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the table knows about `key`.
pub(super) fn lookup(key: &ServerKey) -> Option<KnownServer> {
    table().servers.get(key).cloned()
}

/// Remembers that `key` understands early calls, as `server` says.
pub(super) fn remember(key: ServerKey, server: KnownServer) {
    table().remember(key, server);
}

/// Forgets `key`: its last hello refused or did not announce early calls.
pub(super) fn forget(key: &ServerKey) {
    table().servers.remove(key);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(port: u16) -> ServerKey {
        ServerKey {
            addr: SocketAddr::from(([192, 0, 2, 1], port)),
            server_name: None,
        }
    }

    const KNOWN: KnownServer = KnownServer {
        supported: Vec::new(),
        server_order: false,
        version: 2,
        max_frame_len: Some(1 << 20),
    };

    #[test]
    fn the_early_codec_is_the_one_a_plain_hello_would_get() {
        let msgpack_json = [Codec::MessagePack.id(), Codec::Json.id()];
        let json_msgpack = [Codec::Json.id(), Codec::MessagePack.id()];
        let by = |server_order| KnownServer {
            supported: vec![Codec::Json, Codec::Protobuf],
            server_order,
            ..KNOWN
        };
        assert_eq!(by(false).codec_for(&json_msgpack), Some(Codec::Json));
        assert_eq!(by(true).codec_for(&msgpack_json), Some(Codec::Json));
        assert_eq!(by(false).codec_for(&[Codec::MessagePack.id()]), None);
        let offer = [Codec::Protobuf.id(), Codec::Json.id()];
        let negotiated = |codec| Negotiated {
            codec,
            version: 2,
            peer_max_frame_len: None,
            early_calls: true,
            compression: None,
        };
        let ids = [Codec::Json.id(), Codec::Protobuf.id()];
        let inferred = KnownServer::accepted(&offer, &negotiated(Codec::Json), &ids, None);
        assert!(
            inferred.server_order,
            "json was chosen over the offered protobuf"
        );
        let inferred = KnownServer::accepted(&offer, &negotiated(Codec::Protobuf), &ids, None);
        assert!(!inferred.server_order);
    }

    #[test]
    fn a_full_table_starts_over_rather_than_grow() {
        let mut table = Table {
            servers: HashMap::new(),
            capacity: 8,
        };
        for port in 0..20 {
            table.remember(key(port), KNOWN.clone());
            assert!(table.servers.len() <= 8);
        }
        assert_eq!(table.servers.get(&key(19)), Some(&KNOWN));
        // A known server is updated in place, even when the table is full.
        let len = table.servers.len();
        table.remember(key(19), KNOWN.clone());
        assert_eq!(table.servers.len(), len);
    }

    #[test]
    fn a_server_name_is_part_of_the_key() {
        let plain = ServerKey {
            addr: SocketAddr::from(([192, 0, 2, 2], 7000)),
            server_name: None,
        };
        let named = ServerKey {
            server_name: Some("api.example".to_owned()),
            ..plain.clone()
        };
        remember(named.clone(), KNOWN.clone());
        assert_eq!(lookup(&plain), None);
        assert_eq!(lookup(&named), Some(KNOWN));
        forget(&named);
        assert_eq!(lookup(&named), None);
    }
}
