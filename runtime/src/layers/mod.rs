//! The tower seam shared by both sides, and the layers wirecall ships for it.
//!
//! - [`Next`]: what a layer added with `ServerBuilder::layer` or `ChannelBuilder::layer`
//!   wraps (`next.rs`).
//!
//! This module only declares and re-exports.

pub(crate) mod next;

pub use next::{Next, NextFuture};
