//! How many calls, connections and items each workload uses: at full size, and in the
//! smoke run that only proves every cell runs to completion.

/// How many calls and connections each workload uses.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// W1 timed calls per case.
    pub sequential_calls: usize,
    /// Untimed calls before W1 and W2 start timing.
    pub warmup_calls: usize,
    /// W2 calls in total, spread over the connections.
    pub pipelined_calls: usize,
    /// W3 rounds.
    pub churn_rounds: usize,
    /// W3 connections per round.
    pub churn_connections: usize,
    /// W4 connections held at once.
    pub held_connections: usize,
    /// W4 sequential calls per connection.
    pub held_calls: usize,
    /// W5 connections.
    pub bulk_connections: usize,
    /// W5 calls per connection.
    pub bulk_calls: usize,
    /// W5 calls in flight per connection.
    pub bulk_in_flight: usize,
    /// W6 connections.
    pub oneway_connections: usize,
    /// W6 one-way calls per connection.
    pub oneway_calls: usize,
    /// W7 timed small calls.
    pub beside_big_calls: usize,
    /// W8 counted calls.
    pub counted_calls: usize,
    /// S1 items on its one stream.
    pub stream_items: u64,
    /// S2 items on each of its streams.
    pub items_per_concurrent_stream: u64,
    /// S1-short items on its one stream.
    pub short_stream_items: u64,
    /// S2-short items on each of its streams.
    pub short_items_per_concurrent_stream: u64,
    /// Items of the one warm-up stream before S1-short and S2-short.
    pub short_warmup_items: u64,
    /// L1 items on its one stream.
    pub long_link_items: u64,
    /// S3 timed calls of each phase (alone, beside the stream), split over two rounds.
    pub beside_stream_calls: usize,
    /// U1 chunks in the timed upload.
    pub upload_chunks: u64,
    /// U1 chunks in the untimed upload before it.
    pub upload_warmup_chunks: u64,
    /// I1 timed calls of its short run and of its long run.
    pub instruction_calls: [usize; 2],
    /// Connection attempts in progress at once while opening W4 and W6 connections; keeps the
    /// listen backlog from overflowing (an overflow costs a 1 s SYN retransmit).
    pub connect_fan_out: usize,
}

impl Scale {
    /// The sizes the issue specifies.
    pub const FULL: Scale = Scale {
        sequential_calls: 10_000,
        warmup_calls: 1_000,
        pipelined_calls: 200_000,
        churn_rounds: 10,
        churn_connections: 1_000,
        held_connections: 10_000,
        held_calls: 10,
        bulk_connections: 10,
        bulk_calls: 2_000,
        bulk_in_flight: 8,
        oneway_connections: 10_000,
        oneway_calls: 100,
        beside_big_calls: 20_000,
        counted_calls: 10_000,
        stream_items: 500_000,
        items_per_concurrent_stream: 5_000,
        short_stream_items: 300_000,
        short_items_per_concurrent_stream: 3_000,
        short_warmup_items: 1_000,
        // 200 MiB: 2.5 s at 80 MB/s, 20 s at 10 MB/s.
        long_link_items: 200_000,
        beside_stream_calls: 10_000,
        // 1 GiB.
        upload_chunks: 16_384,
        upload_warmup_chunks: 64,
        // 20,000 calls between the runs: about 5 s of callgrind for wirecall, 25 s for tonic.
        instruction_calls: [5_000, 25_000],
        connect_fan_out: 64,
    };

    /// Tiny counts that only prove every cell runs to completion.
    pub const SMOKE: Scale = Scale {
        sequential_calls: 50,
        warmup_calls: 5,
        pipelined_calls: 512,
        churn_rounds: 2,
        churn_connections: 20,
        held_connections: 20,
        held_calls: 10,
        bulk_connections: 2,
        bulk_calls: 20,
        bulk_in_flight: 8,
        oneway_connections: 20,
        oneway_calls: 5,
        beside_big_calls: 50,
        counted_calls: 50,
        stream_items: 200,
        items_per_concurrent_stream: 5,
        short_stream_items: 100,
        short_items_per_concurrent_stream: 3,
        short_warmup_items: 10,
        long_link_items: 200,
        beside_stream_calls: 50,
        upload_chunks: 40,
        upload_warmup_chunks: 4,
        instruction_calls: [64, 192],
        connect_fan_out: 8,
    };
}
