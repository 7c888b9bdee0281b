//! What one cell is: a system under test (with its codec) and one workload variant, plus the
//! counts each workload uses at full size and in the smoke run.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use wirecall_runtime::stream::{
    DEFAULT_CONNECTION_WINDOW_BYTES, DEFAULT_STREAM_WINDOW, DEFAULT_STREAM_WINDOW_BYTES,
};

use crate::model::{Case, CHUNK_LEN};

/// The system under test and its encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// wirecall with one of its codecs.
    Wirecall(wirecall::Codec),
    /// tarpc 0.38 over its serde TCP transport.
    Tarpc(TarpcFormat),
    /// tonic 0.14: gRPC over HTTP/2, prost messages.
    Tonic,
    /// tonic's client (as [`Target::Tonic`]'s) calling wirecall's server through its gRPC
    /// door: wirecall's server beside tonic's, serving the same service to the same client.
    GrpcWirecall,
    /// wirecall's HTTP/JSON gateway in front of wirecall's server, called over HTTP/1.1.
    Gateway,
    /// Length-prefixed echo over plain tokio TCP: the physical floor.
    RawTcp,
}

/// The tokio-serde format tarpc's transport uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarpcFormat {
    /// `tokio_serde::formats::Bincode`.
    Bincode,
    /// `tokio_serde::formats::MessagePack`.
    MessagePack,
}

impl Target {
    /// Every target, in the order the table shows them.
    pub const ALL: [Target; 9] = [
        Target::RawTcp,
        Target::Wirecall(wirecall::Codec::Json),
        Target::Wirecall(wirecall::Codec::MessagePack),
        Target::Wirecall(wirecall::Codec::Protobuf),
        Target::Tarpc(TarpcFormat::Bincode),
        Target::Tarpc(TarpcFormat::MessagePack),
        Target::Tonic,
        Target::GrpcWirecall,
        Target::Gateway,
    ];

    /// `wirecall`, `tarpc`, `tonic`, `grpc-wirecall`, `gateway` or `raw-tcp`.
    pub fn system(self) -> &'static str {
        match self {
            Target::Wirecall(_) => "wirecall",
            Target::Tarpc(_) => "tarpc",
            Target::Tonic => "tonic",
            Target::GrpcWirecall => "grpc-wirecall",
            Target::Gateway => "gateway",
            Target::RawTcp => "raw-tcp",
        }
    }

    /// The codec's short name (`none` for raw TCP).
    pub fn codec(self) -> &'static str {
        match self {
            Target::Wirecall(codec) => codec.name(),
            Target::Tarpc(TarpcFormat::Bincode) => "bincode",
            Target::Tarpc(TarpcFormat::MessagePack) => "msgpack",
            Target::Tonic | Target::GrpcWirecall => "protobuf",
            Target::Gateway => "json",
            Target::RawTcp => "none",
        }
    }

    /// Parses `--system` and `--codec` as the server and client subcommands receive them.
    pub fn parse(system: &str, codec: &str) -> Result<Self, String> {
        match system {
            "wirecall" => codec
                .parse()
                .map(Target::Wirecall)
                .map_err(|e| e.to_string()),
            "tarpc" => match codec {
                "bincode" => Ok(Target::Tarpc(TarpcFormat::Bincode)),
                "msgpack" | "messagepack" => Ok(Target::Tarpc(TarpcFormat::MessagePack)),
                other => Err(format!(
                    "tarpc codec {other:?}: expected bincode or msgpack"
                )),
            },
            "tonic" => match codec {
                "protobuf" | "none" => Ok(Target::Tonic),
                other => Err(format!("tonic codec {other:?}: expected protobuf")),
            },
            "grpc-wirecall" => match codec {
                "protobuf" | "none" => Ok(Target::GrpcWirecall),
                other => Err(format!("grpc-wirecall codec {other:?}: expected protobuf")),
            },
            "gateway" => match codec {
                "json" | "none" => Ok(Target::Gateway),
                other => Err(format!("gateway codec {other:?}: expected json")),
            },
            "raw-tcp" | "raw" => Ok(Target::RawTcp),
            other => Err(format!(
                "unknown system {other:?}: expected wirecall, tarpc, tonic, grpc-wirecall, \
                 gateway or raw-tcp"
            )),
        }
    }

    /// Whether the target can run `workload` at all (tarpc and gRPC have no one-way call,
    /// tarpc has no streams; the gateway runs the unary cells W1 and W2).
    pub fn supports(self, workload: Workload) -> bool {
        if self == Target::Gateway {
            return matches!(
                workload,
                Workload::Sequential(_) | Workload::Pipelined { .. }
            );
        }
        match workload {
            Workload::OneWay => !matches!(
                self,
                Target::Tarpc(_) | Target::Tonic | Target::GrpcWirecall
            ),
            Workload::Streams { .. }
            | Workload::LongLink { .. }
            | Workload::UnaryBesideStream
            | Workload::Upload => !matches!(self, Target::Tarpc(_)),
            // A fairness cell of wirecall's own server: the other systems have no counterpart
            // of its off-loop decoding to compare.
            Workload::BesideBigRequests { .. } => matches!(self, Target::Wirecall(_)),
            _ => true,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.system(), self.codec())
    }
}

/// One workload variant: a row group of the results table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// W1: one connection, sequential calls of one case.
    Sequential(Case),
    /// W2: pipelined calls of the 1-object case on `connections` connections.
    Pipelined {
        /// Connections used at once.
        connections: usize,
        /// Calls in flight on each connection.
        in_flight: usize,
    },
    /// W3: rounds of connect + handshake + one call, then close.
    Churn,
    /// W4: many connections held at once, each making a few sequential calls.
    Held,
    /// W5: 64 KiB calls, a few in flight on each of several connections.
    Bulk,
    /// W6: one-way calls from many connections, counted by the server.
    OneWay,
    /// W7: sequential small calls on one connection, alone or while the same connection
    /// carries a 4 MiB request every 100 ms.
    BesideBigRequests {
        /// Whether the big requests are sent.
        big: bool,
    },
    /// W8: sequential 1-object calls on one connection, counting the heap allocations of
    /// the client and the server process while they run.
    Allocations,
    /// S1 (one stream) and S2 (many): server streams of 1 KiB items, all open at once on one
    /// connection.
    Streams {
        /// Streams open at once.
        streams: usize,
        /// How each stream's credit window is sized (tonic keeps HTTP/2's windows).
        window: StreamWindow,
        /// How long the streams are, and how they are warmed up.
        length: StreamLength,
    },
    /// S3: sequential 1-object calls on one connection, alone and beside a server stream
    /// on the same connection that is read as fast as it comes.
    UnaryBesideStream,
    /// U1: one upload (client stream) of 64 KiB chunks on one connection, answered once with
    /// the bytes the server received.
    Upload,
    /// L1: S1's one server stream of 1 KiB items at each system's default window, over a
    /// link with a long round trip (a delay proxy between client and server). The raw floor
    /// streams with no window the link can feel: what the link carries.
    LongLink {
        /// The round trip the proxy adds, in milliseconds.
        rtt_ms: u32,
    },
    /// I1: W2's one connection with 256 calls in flight, server and client each run under
    /// callgrind, twice, at two call counts: the instructions per call of each process are
    /// the difference over the difference in calls, so start-up, connecting and shutting
    /// down cancel out.
    Instructions,
}

/// How a stream cell's clients size each stream's credit window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamWindow {
    /// wirecall's default: `stream_window` (32) items at first, then sized towards
    /// `stream_window_bytes` (1 MiB) of items, or an even share of `connection_window_bytes`
    /// (8 MiB) when streams run side by side. The raw floor, which has no sizing, gets the
    /// window that comes to with these items ([`StreamWindow::raw_items`]).
    Sized,
    /// A fixed window of this many items for wirecall (its sizing off) and the raw floor.
    Fixed(u32),
}

/// How long a stream cell's streams are, and the warm-up before them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamLength {
    /// The bench's own shape: long streams (`stream_items`, or `items_per_concurrent_stream`
    /// each), after a warm-up of the same shape.
    Long,
    /// The shape a user's first measurement takes, written from the book: shorter streams
    /// (`short_stream_items`, or `short_items_per_concurrent_stream` each) after one warm-up
    /// stream of `short_warmup_items`, so the windows' growth from their first 32 items is a
    /// larger part of the time (`S1-short`, `S2-short`).
    Short,
}

/// What wirecall counts a 1 KiB item of these cells in its window: its body and 64 bytes.
const SIZED_ITEM_BYTES: u32 = 1024 + 64;

impl StreamWindow {
    /// The items wirecall's client grants at the open.
    pub fn initial_items(self) -> u32 {
        match self {
            StreamWindow::Sized => DEFAULT_STREAM_WINDOW,
            StreamWindow::Fixed(items) => items,
        }
    }

    /// The bytes wirecall's window sizes itself towards (0: fixed).
    pub fn bytes(self) -> u32 {
        match self {
            StreamWindow::Sized => DEFAULT_STREAM_WINDOW_BYTES,
            StreamWindow::Fixed(_) => 0,
        }
    }

    /// The raw floor's fixed window with `streams` open on its connection: where wirecall
    /// sizes its own, what that comes to with 1 KiB items (960 alone, 77 each for 100).
    pub fn raw_items(self, streams: usize) -> u32 {
        match self {
            StreamWindow::Sized => {
                let share = DEFAULT_CONNECTION_WINDOW_BYTES / streams.max(1) as u32;
                (DEFAULT_STREAM_WINDOW_BYTES.min(share) / SIZED_ITEM_BYTES)
                    .max(DEFAULT_STREAM_WINDOW)
            }
            StreamWindow::Fixed(items) => items,
        }
    }
}

/// The raw floor's window in L1: the most credit wirecall's protocol allows, 64 MiB of
/// 1 KiB items, more than any of these links holds in a round trip.
pub const LONG_LINK_RAW_WINDOW: u32 = 65_536;

/// The round trips of the L1 cells, in milliseconds.
pub const LONG_LINK_ROUND_TRIPS: [u32; 2] = [20, 100];

/// Streams open at once in S2.
pub const CONCURRENT_STREAMS: usize = 100;

/// The stream window of `S1-w2048`: 2 MiB of 1 KiB items, the window tonic's client gives
/// each stream (hyper's default).
pub const LARGE_STREAM_WINDOW: u32 = 2048;

/// The raw floor's upload window in U1: what wirecall's server sizes an upload's window to
/// with these chunks, 1 MiB over 64 KiB and the 64 bytes it counts an item beyond its body,
/// but never below the 32 items it grants at first. So 32: the sizing leaves 64 KiB chunks
/// at the first window.
pub const UPLOAD_RAW_WINDOW: u32 = {
    let sized = DEFAULT_STREAM_WINDOW_BYTES / (CHUNK_LEN as u32 + 64);
    if sized > DEFAULT_STREAM_WINDOW {
        sized
    } else {
        DEFAULT_STREAM_WINDOW
    }
};

impl Workload {
    /// Every workload variant, in table order.
    pub const ALL: [Workload; 24] = [
        Workload::Sequential(Case::Dictionary),
        Workload::Sequential(Case::User),
        Workload::Sequential(Case::Users10),
        Workload::Sequential(Case::Users100),
        Workload::Pipelined {
            connections: 1,
            in_flight: 256,
        },
        Workload::Pipelined {
            connections: 4,
            in_flight: 64,
        },
        Workload::Churn,
        Workload::Held,
        Workload::Bulk,
        Workload::OneWay,
        Workload::BesideBigRequests { big: false },
        Workload::BesideBigRequests { big: true },
        Workload::Allocations,
        Workload::Streams {
            streams: 1,
            window: StreamWindow::Sized,
            length: StreamLength::Long,
        },
        Workload::Streams {
            streams: 1,
            window: StreamWindow::Fixed(DEFAULT_STREAM_WINDOW),
            length: StreamLength::Long,
        },
        Workload::Streams {
            streams: 1,
            window: StreamWindow::Fixed(LARGE_STREAM_WINDOW),
            length: StreamLength::Long,
        },
        Workload::Streams {
            streams: CONCURRENT_STREAMS,
            window: StreamWindow::Sized,
            length: StreamLength::Long,
        },
        Workload::Streams {
            streams: 1,
            window: StreamWindow::Sized,
            length: StreamLength::Short,
        },
        Workload::Streams {
            streams: CONCURRENT_STREAMS,
            window: StreamWindow::Sized,
            length: StreamLength::Short,
        },
        Workload::UnaryBesideStream,
        Workload::Upload,
        Workload::LongLink {
            rtt_ms: LONG_LINK_ROUND_TRIPS[0],
        },
        Workload::LongLink {
            rtt_ms: LONG_LINK_ROUND_TRIPS[1],
        },
        Workload::Instructions,
    ];

    /// The id used on the command line and in the results: `W1-1obj`, `W2-4x64`, `W3`, ...
    pub fn id(self) -> String {
        match self {
            Workload::Sequential(case) => {
                let objects = match case {
                    Case::Dictionary => 0,
                    Case::User => 1,
                    Case::Users10 => 10,
                    Case::Users100 => 100,
                    Case::Bulk => unreachable!("W1 never sends bulk calls"),
                };
                format!("W1-{objects}obj")
            }
            Workload::Pipelined {
                connections,
                in_flight,
            } => format!("W2-{connections}x{in_flight}"),
            Workload::Churn => "W3".to_owned(),
            Workload::Held => "W4".to_owned(),
            Workload::Bulk => "W5".to_owned(),
            Workload::OneWay => "W6".to_owned(),
            Workload::BesideBigRequests { big: false } => "W7-alone".to_owned(),
            Workload::BesideBigRequests { big: true } => "W7-big".to_owned(),
            Workload::Allocations => "W8".to_owned(),
            Workload::Streams {
                streams: 1,
                window: StreamWindow::Sized,
                length: StreamLength::Long,
            } => "S1".to_owned(),
            Workload::Streams {
                streams: 1,
                window: StreamWindow::Sized,
                length: StreamLength::Short,
            } => "S1-short".to_owned(),
            Workload::Streams {
                streams: 1,
                window: StreamWindow::Fixed(items),
                ..
            } => format!("S1-w{items}"),
            // S2's count is `CONCURRENT_STREAMS` with the default window, the only other in
            // `ALL`.
            Workload::Streams {
                length: StreamLength::Long,
                ..
            } => "S2".to_owned(),
            Workload::Streams {
                length: StreamLength::Short,
                ..
            } => "S2-short".to_owned(),
            Workload::UnaryBesideStream => "S3".to_owned(),
            Workload::Upload => "U1".to_owned(),
            Workload::LongLink { rtt_ms } => format!("L1-rtt{rtt_ms}"),
            Workload::Instructions => "I1".to_owned(),
        }
    }

    /// The stream window the clients of a stream cell use (wirecall's default elsewhere).
    pub fn stream_window(self) -> StreamWindow {
        match self {
            Workload::Streams { window, .. } => window,
            _ => StreamWindow::Sized,
        }
    }

    /// The raw floor's window for this cell's streams.
    pub fn raw_stream_window(self) -> u32 {
        match self {
            Workload::Streams {
                streams, window, ..
            } => window.raw_items(streams),
            Workload::LongLink { .. } => LONG_LINK_RAW_WINDOW,
            _ => self.stream_window().raw_items(1),
        }
    }

    /// The round trip a delay proxy adds between client and server, for L1.
    pub fn link_round_trip(self) -> Option<Duration> {
        match self {
            Workload::LongLink { rtt_ms } => Some(Duration::from_millis(u64::from(rtt_ms))),
            _ => None,
        }
    }

    /// Whether `--only` patterns select this workload: each pattern is a workload (`W1`) or a
    /// variant id (`W1-10obj`), case-insensitive.
    pub fn selected_by(self, patterns: &[String]) -> bool {
        let id = self.id().to_ascii_lowercase();
        patterns.is_empty()
            || patterns.iter().any(|pattern| {
                let pattern = pattern.to_ascii_lowercase();
                id == pattern || id.starts_with(&format!("{pattern}-"))
            })
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(id: &str) -> Result<Self, String> {
        Workload::ALL
            .into_iter()
            .find(|w| w.id().eq_ignore_ascii_case(id))
            .ok_or_else(|| {
                let ids: Vec<String> = Workload::ALL.iter().map(|w| w.id()).collect();
                format!(
                    "unknown workload {id:?}; expected one of {}",
                    ids.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_ids_round_trip() {
        for workload in Workload::ALL {
            assert_eq!(workload.id().parse::<Workload>(), Ok(workload));
        }
    }

    #[test]
    fn only_selects_a_workload_or_one_variant() {
        let w1 = ["W1".to_owned()];
        let selected: Vec<String> = Workload::ALL
            .into_iter()
            .filter(|w| w.selected_by(&w1))
            .map(Workload::id)
            .collect();
        assert_eq!(selected, ["W1-0obj", "W1-1obj", "W1-10obj", "W1-100obj"]);
        assert!(Workload::Churn.selected_by(&["w3".to_owned()]));
        assert!(!Workload::Churn.selected_by(&["W1-1obj".to_owned()]));
    }

    #[test]
    fn the_raw_floor_gets_the_window_wirecall_sizes_for_itself() {
        assert_eq!(StreamWindow::Sized.raw_items(1), 963);
        assert_eq!(StreamWindow::Sized.raw_items(CONCURRENT_STREAMS), 77);
        assert_eq!(StreamWindow::Fixed(32).raw_items(CONCURRENT_STREAMS), 32);
    }

    #[test]
    fn tonic_and_the_door_run_w1_to_w5_w8_the_stream_cells_and_the_upload() {
        let ids: Vec<String> = Workload::ALL
            .into_iter()
            .filter(|w| Target::Tonic.supports(*w))
            .map(Workload::id)
            .collect();
        assert_eq!(
            ids.join(" "),
            "W1-0obj W1-1obj W1-10obj W1-100obj W2-1x256 W2-4x64 W3 W4 W5 W8 S1 S1-w32 S1-w2048 S2 S1-short S2-short S3 U1 L1-rtt20 L1-rtt100 I1"
        );
        let door: Vec<String> = Workload::ALL
            .into_iter()
            .filter(|w| Target::GrpcWirecall.supports(*w))
            .map(Workload::id)
            .collect();
        assert_eq!(door, ids, "the door runs every cell tonic runs");
        assert!(!Target::Tarpc(TarpcFormat::Bincode).supports(Workload::UnaryBesideStream));
        assert!(!Target::Tarpc(TarpcFormat::MessagePack).supports(Workload::Upload));
    }

    #[test]
    fn the_raw_upload_window_is_wirecalls_first_window_for_64_kib_chunks() {
        assert_eq!(UPLOAD_RAW_WINDOW, DEFAULT_STREAM_WINDOW);
    }

    #[test]
    fn every_target_parses_from_its_own_names() {
        for target in Target::ALL {
            assert_eq!(Target::parse(target.system(), target.codec()), Ok(target));
        }
    }
}
