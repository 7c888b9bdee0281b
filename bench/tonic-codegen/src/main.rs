//! Regenerates the benchmark's tonic code from its `.proto`:
//!
//! ```sh
//! cargo run --manifest-path bench/tonic-codegen/Cargo.toml
//! ```
//!
//! protoc comes from the `protoc-bin-vendored` crate, so nothing needs installing. The output
//! is checked in, so building the benchmark needs neither protoc nor this generator.

use std::path::Path;

const HEADER: &str = "\
// Generated from user_service.proto by tonic-prost-build; do not edit. To regenerate:
//     cargo run --manifest-path bench/tonic-codegen/Cargo.toml
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../src/systems/tonic");
    let out = std::env::temp_dir().join("wirecall-bench-tonic-codegen");
    std::fs::create_dir_all(&out)?;
    // prost-build runs the protoc that PROTOC names.
    std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .out_dir(&out)
        // The same struct the other systems send, so every system clones the same fixtures.
        .extern_path(".wirecall.bench.UserModel", "crate::model::UserModel")
        .extern_path(".wirecall.bench.StreamItem", "crate::model::StreamItem")
        .extern_path(".wirecall.bench.Chunk", "crate::model::Chunk")
        // `bytes::Bytes` as wirecall's and tarpc's `bulk` take, so a call clones no payload.
        .bytes(".wirecall.bench.BulkRequest.data")
        .compile_protos(&[dir.join("user_service.proto")], &[dir.clone()])?;
    let generated = std::fs::read_to_string(out.join("wirecall.bench.rs"))?;
    let target = dir.join("user_service.rs");
    std::fs::write(&target, format!("{HEADER}\n{generated}"))?;
    println!("wrote {}", target.display());
    Ok(())
}
