#!/usr/bin/env bash
# The cost of a ten-method service to its user: generated lines per method (the
# `WIRECALL_EXPAND` output, formatted by prettyplease) and the clean debug build time of a
# crate that holds only that service, a server and a client. Run by hand from the
# repository's root:
#
#     bash bench/scripts/ten-methods.sh [WIRECALL_REPO]
#
# WIRECALL_REPO defaults to this checkout; give another checkout to measure it the same way.
# The crate is built in a temporary directory with its own target directory, after its
# dependencies are fetched and built once, so that the timed build compiles the dependencies
# and the crate, from the same warm registry, as a user's first build would.
set -euo pipefail
repo="$(cd "${1:-$(dirname "$0")/../..}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ten/src"
cat >"$work/ten/Cargo.toml" <<TOML
[package]
name = "ten-methods"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
wirecall = { path = "$repo" }
tokio = { version = "1", features = ["full"] }
futures = "0.3"

[workspace]
TOML
cat >"$work/ten/src/main.rs" <<'RUST'
use std::collections::HashMap;

use futures::StreamExt;
use wirecall::stream::Streaming;

#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct User {
    pub id: u64,
    pub name: String,
    pub tags: Vec<String>,
}

#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct NotFound {
    pub id: u64,
}

#[wirecall::service]
pub trait Directory {
    async fn get_user(&self, id: u64) -> Result<User, NotFound>;
    #[idempotent]
    async fn find(&self, name: String, limit: u32) -> Vec<User>;
    async fn put_user(&self, user: User) -> bool;
    #[wirecall(timeout = "2s", retries = 1)]
    #[idempotent]
    async fn count(&self) -> u64;
    async fn rename(&self, id: u64, name: String) -> Result<(), NotFound>;
    async fn tags(&self) -> HashMap<String, u32>;
    #[oneway]
    async fn touch(&self, id: u64);
    async fn list(&self, limit: u32) -> Streaming<User>;
    async fn import(&self, users: Streaming<User>) -> u32;
    async fn echo(&self, prefix: String, words: Streaming<String>) -> Streaming<String>;
}

struct Memory;

impl Directory for Memory {
    async fn get_user(&self, id: u64) -> Result<User, NotFound> {
        Err(NotFound { id })
    }
    async fn find(&self, name: String, limit: u32) -> Vec<User> {
        vec![User { id: u64::from(limit), name, tags: Vec::new() }]
    }
    async fn put_user(&self, _user: User) -> bool {
        true
    }
    async fn count(&self) -> u64 {
        1
    }
    async fn rename(&self, _id: u64, _name: String) -> Result<(), NotFound> {
        Ok(())
    }
    async fn tags(&self) -> HashMap<String, u32> {
        HashMap::new()
    }
    async fn touch(&self, _id: u64) {}
    async fn list(&self, limit: u32) -> Streaming<User> {
        Streaming::from_iter((0..u64::from(limit)).map(|id| User { id, name: String::new(), tags: Vec::new() }))
    }
    async fn import(&self, users: Streaming<User>) -> u32 {
        users.count().await as u32
    }
    async fn echo(&self, prefix: String, words: Streaming<String>) -> Streaming<String> {
        Streaming::new(words.map(move |word| format!("{prefix}{word}")))
    }
}

#[tokio::main]
async fn main() -> Result<(), wirecall::Error> {
    let server = wirecall::Server::builder()
        .serve(DirectoryServer::new(Memory))
        .bind("127.0.0.1:0")
        .await?;
    let client = DirectoryClient::connect(server.local_addr()).await?;
    println!("{:?}", client.find("ada".to_owned(), 3).await?);
    server.shutdown().await;
    Ok(())
}
RUST
cd "$work/ten"
export CARGO_TARGET_DIR="$work/target"
cargo fetch --quiet
# Warm: every dependency built once, so the clock below measures a clean build of the same
# crates from a warm disk cache, not the first read of the registry.
cargo build --quiet 2>/dev/null
WIRECALL_EXPAND=Directory cargo build --quiet 2>"$work/expansion.txt" || true
touch src/main.rs
WIRECALL_EXPAND=Directory cargo build --quiet 2>"$work/expansion.txt"
lines=$(grep -cv '^\s*$' "$work/expansion.txt" || true)
cargo clean --quiet
start=$(date +%s.%N)
cargo build --quiet
end=$(date +%s.%N)
printf 'expansion of the ten-method service: %d non-blank lines, %.1f per method\n' \
    "$lines" "$(echo "$lines / 10" | bc -l)"
printf 'clean debug build of the crate: %.1f s\n' "$(echo "$end - $start" | bc -l)"
