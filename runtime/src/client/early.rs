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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct KnownServer {
    /// The codec it chose: early calls are encoded in it, and it leads the next offer.
    pub(super) codec: Codec,
    /// The protocol version of that connection; early calls are sent only in the same one.
    pub(super) version: u8,
    /// The frame limit it announced: early frames are sent no larger.
    pub(super) max_frame_len: Option<u32>,
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
    table().servers.get(key).copied()
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
        codec: Codec::Json,
        version: 2,
        max_frame_len: Some(1 << 20),
    };

    #[test]
    fn a_full_table_starts_over_rather_than_grow() {
        let mut table = Table {
            servers: HashMap::new(),
            capacity: 8,
        };
        for port in 0..20 {
            table.remember(key(port), KNOWN);
            assert!(table.servers.len() <= 8);
        }
        assert_eq!(table.servers.get(&key(19)), Some(&KNOWN));
        // A known server is updated in place, even when the table is full.
        let len = table.servers.len();
        table.remember(key(19), KNOWN);
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
        remember(named.clone(), KNOWN);
        assert_eq!(lookup(&plain), None);
        assert_eq!(lookup(&named), Some(KNOWN));
        forget(&named);
        assert_eq!(lookup(&named), None);
    }
}
