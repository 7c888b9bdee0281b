//! The `UserService` fixture, defined once for wirecall's own tests and benchmarks: the root
//! integration tests, the wire-spec test, the CLI's and the gateway's tests and the benchmark
//! all serve and call this trait.
//!
//! Its first five methods are the `user` example's (`examples/user.rs`, which keeps its own
//! copy so that a reader sees the whole trait; `tests/example_fixture.rs` checks that the two
//! have the same wire shape). The others are what the tests and the benchmark need besides:
//! bulk and one-way traffic, call metadata, a slow call and a panicking one. Method ids depend
//! only on the service and method names, so the ids pinned by the book's wire chapter are
//! these methods' ids.
//!
//! Besides the fixture, [`eventually`] and [`eventually_async`]: how a test waits for
//! something to happen, instead of sleeping and hoping it has; and
//! [`quiet_panics_starting_with`], which keeps a test's injected panics off stderr.

pub mod events;
mod eventually;
pub mod feed;
mod panics;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use wirecall::CallContext;

pub use eventually::{eventually, eventually_async, eventually_within, PATIENCE};
pub use panics::quiet_panics_starting_with;

/// A user, as in the surging benchmark.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct UserModel {
    /// The user's id.
    pub user_id: i32,
    /// The user's name.
    pub name: String,
    /// The user's age in years.
    pub age: i32,
}

/// The application error of `find`.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct NotFound {
    /// The id that was looked up.
    pub user_id: i32,
    /// Why nothing was found.
    pub reason: String,
}

/// Users, by id and by name.
#[wirecall::service]
pub trait UserService {
    /// The id of the user called `name`.
    #[idempotent]
    async fn get_user_id(&self, name: String) -> i32;
    /// Echoes a user back (the "1 object" benchmark case). Idempotent: the benchmark's
    /// balanced channel may retry it on another server.
    #[idempotent]
    async fn get_user(&self, user: UserModel) -> UserModel;
    /// Accepts a list of users (the "10 / 100 objects" cases); true unless it is empty.
    async fn get(&self, users: Vec<UserModel>) -> bool;
    /// A small dictionary, no arguments (the "0 objects" case).
    async fn get_dictionary(&self) -> HashMap<String, String>;
    /// Finds a user by id; unknown ids are an application error.
    async fn find(&self, user_id: i32) -> Result<UserModel, NotFound>;
    /// Accepts a payload and returns its length.
    async fn bulk(&self, data: Bytes) -> u32;
    /// Counts a one-way message.
    #[oneway]
    async fn record(&self, entry: Vec<u8>);
    /// The one-way messages counted so far.
    async fn recorded(&self) -> u64;
    /// The value of call metadata `key`; answers with reply metadata `served-by`.
    async fn metadata(&self, key: String) -> Option<String>;
    /// Sleeps.
    async fn sleep(&self, millis: u64);
    /// Panics.
    async fn explode(&self);
    /// Fire and forget.
    #[oneway]
    async fn poke(&self, note: String);
}

/// The reply metadata `served-by` that [`UserService::metadata`] sets.
pub const SERVED_BY: &str = "wirecall-test-support";

/// The implementation: stateless except for the count of `record` messages.
#[derive(Clone, Debug, Default)]
pub struct Users {
    recorded: Arc<AtomicU64>,
}

impl Users {
    /// Users whose `record` messages are counted in `recorded`, so that the caller can read
    /// the count without a call.
    pub fn counting_into(recorded: Arc<AtomicU64>) -> Self {
        Self { recorded }
    }
}

impl UserService for Users {
    async fn get_user_id(&self, name: String) -> i32 {
        name.len() as i32
    }

    async fn get_user(&self, user: UserModel) -> UserModel {
        user
    }

    async fn get(&self, users: Vec<UserModel>) -> bool {
        !users.is_empty()
    }

    async fn get_dictionary(&self) -> HashMap<String, String> {
        HashMap::from([("key".to_owned(), "value".to_owned())])
    }

    async fn find(&self, user_id: i32) -> Result<UserModel, NotFound> {
        match user_id {
            1 => Ok(fanly()),
            _ => Err(NotFound {
                user_id,
                reason: "no such user".to_owned(),
            }),
        }
    }

    async fn bulk(&self, data: Bytes) -> u32 {
        data.len() as u32
    }

    async fn record(&self, _entry: Vec<u8>) {
        self.recorded.fetch_add(1, Ordering::Relaxed);
    }

    async fn recorded(&self) -> u64 {
        self.recorded.load(Ordering::Relaxed)
    }

    async fn metadata(&self, key: String) -> Option<String> {
        CallContext::with_current(|context| {
            // Only fails for an invalid key, and this one is valid.
            let _ = context.set_reply_metadata("served-by", SERVED_BY);
            context.metadata().get(&key).map(str::to_owned)
        })
        .flatten()
    }

    async fn sleep(&self, millis: u64) {
        tokio::time::sleep(Duration::from_millis(millis)).await;
    }

    async fn explode(&self) {
        panic!("boom");
    }

    async fn poke(&self, _note: String) {}
}

/// The user that `find(1)` returns and the benchmarks send.
pub fn fanly() -> UserModel {
    UserModel {
        user_id: 1,
        name: "fanly".to_owned(),
        age: 18,
    }
}
