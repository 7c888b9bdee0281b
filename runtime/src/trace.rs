//! W3C trace context (`traceparent`) carried in call metadata, so that a client's span and the
//! server's span of one call, and every call a handler makes in turn, share one trace id.
//!
//! `traceparent: 00-{trace id: 32 hex}-{parent span id: 16 hex}-{flags: 2 hex}`, as in the
//! W3C Trace Context recommendation. wirecall records the ids on its `tracing` spans (fields
//! `trace_id` and `span_id`), so any subscriber or exporter can join them.

use std::cell::Cell;
use std::fmt;

/// The metadata key of the trace context.
pub const TRACEPARENT: &str = "traceparent";

/// One span's place in a trace.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace all spans of one request share.
    pub trace_id: [u8; 16],
    /// This span.
    pub span_id: [u8; 8],
    /// Whether the trace is sampled (flag bit 0).
    pub sampled: bool,
}

impl TraceContext {
    /// A new trace with a random trace id and span id.
    pub fn new_root() -> Self {
        let mut trace_id = [0u8; 16];
        trace_id[..8].copy_from_slice(&random_u64().to_be_bytes());
        trace_id[8..].copy_from_slice(&random_u64().to_be_bytes());
        Self {
            trace_id,
            span_id: random_u64().to_be_bytes(),
            sampled: true,
        }
    }

    /// A new span in the same trace.
    pub fn child(&self) -> Self {
        Self {
            span_id: random_u64().to_be_bytes(),
            ..*self
        }
    }

    /// Parses a `traceparent` value; `None` for anything malformed (then a new trace starts,
    /// as the recommendation says).
    pub fn parse(value: &str) -> Option<Self> {
        let mut parts = value.split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        let trace_id: [u8; 16] = hex(trace)?;
        let span_id: [u8; 8] = hex(span)?;
        let [flags]: [u8; 1] = hex(flags)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }

    /// The `traceparent` value naming this span as the parent.
    pub fn to_traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            Hex(&self.trace_id),
            Hex(&self.span_id),
            u8::from(self.sampled)
        )
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        Hex(&self.trace_id).to_string()
    }

    /// The span id as 16 lowercase hex digits.
    pub fn span_id_hex(&self) -> String {
        Hex(&self.span_id).to_string()
    }
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_traceparent())
    }
}

struct Hex<'a>(&'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

thread_local! {
    /// xorshift64* state, seeded from the OS once per thread: ids need to be unique, not
    /// secret, and a syscall per call would cost more than the call.
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    getrandom::u64().unwrap_or(0x9e37_79b9_7f4a_7c15) | 1
}

fn random_u64() -> u64 {
    RNG.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_the_w3c_example() {
        let value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let trace = TraceContext::parse(value).unwrap();
        assert!(trace.sampled);
        assert_eq!(trace.to_traceparent(), value);
        assert_eq!(trace.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
    }

    #[test]
    fn malformed_values_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_child_keeps_the_trace_and_changes_the_span() {
        let root = TraceContext::new_root();
        let child = root.child();
        assert_eq!(child.trace_id, root.trace_id);
        assert_ne!(child.span_id, root.span_id);
        assert_ne!(TraceContext::new_root().trace_id, root.trace_id);
    }
}
