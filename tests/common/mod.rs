//! Services and helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wirecall::{Codec, RunningServer, Server};

#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct UserModel {
    pub user_id: i32,
    pub name: String,
    pub age: i32,
}

#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct NotFound {
    pub user_id: i32,
    pub reason: String,
}

/// The example's service, as users write it.
#[wirecall::service]
pub trait UserService {
    /// The id of the user called `name`.
    async fn get_user_id(&self, name: String) -> i32;
    async fn get_user(&self, user: UserModel) -> UserModel;
    async fn get(&self, users: Vec<UserModel>) -> bool;
    async fn get_dictionary(&self) -> HashMap<String, String>;
    async fn find(&self, user_id: i32) -> Result<UserModel, NotFound>;
}

pub struct Users;

impl UserService for Users {
    async fn get_user_id(&self, name: String) -> i32 {
        name.len() as i32
    }
    async fn get_user(&self, user: UserModel) -> UserModel {
        user
    }
    async fn get(&self, users: Vec<UserModel>) -> bool {
        users.len() == 10
    }
    async fn get_dictionary(&self) -> HashMap<String, String> {
        HashMap::from([("key".to_owned(), "value".to_owned())])
    }
    async fn find(&self, user_id: i32) -> Result<UserModel, NotFound> {
        if user_id == 1 {
            Ok(fanly())
        } else {
            Err(NotFound {
                user_id,
                reason: "no such user".to_owned(),
            })
        }
    }
}

pub fn fanly() -> UserModel {
    UserModel {
        user_id: 1,
        name: "fanly".to_owned(),
        age: 18,
    }
}

/// Methods with behaviour the failure tests need.
#[wirecall::service]
pub trait Lab {
    async fn add(&self, a: i64, b: i64) -> i64;
    async fn sleep_ms(&self, ms: u64) -> u64;
    async fn panic_now(&self, message: String) -> u32;
    #[oneway]
    async fn record(&self, value: u64);
    async fn recorded(&self) -> u64;
    async fn nothing(&self);
    async fn check(&self, value: i32) -> Result<(), String>;
    async fn blob(&self, len: u32) -> Vec<u8>;
}

#[derive(Default)]
pub struct LabImpl {
    pub recorded: AtomicU64,
    pub finished_sleeps: AtomicU64,
}

impl Lab for Arc<LabImpl> {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    async fn sleep_ms(&self, ms: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.finished_sleeps.fetch_add(1, Ordering::SeqCst);
        ms
    }
    async fn panic_now(&self, message: String) -> u32 {
        panic!("{message}")
    }
    async fn record(&self, value: u64) {
        self.recorded.fetch_add(value, Ordering::SeqCst);
    }
    async fn recorded(&self) -> u64 {
        self.recorded.load(Ordering::SeqCst)
    }
    async fn nothing(&self) {}
    async fn check(&self, value: i32) -> Result<(), String> {
        if value >= 0 {
            Ok(())
        } else {
            Err(format!("{value} is negative"))
        }
    }
    async fn blob(&self, len: u32) -> Vec<u8> {
        vec![7; len as usize]
    }
}

/// A server with both services and every codec, on a free port.
pub async fn start_server() -> (RunningServer, Arc<LabImpl>) {
    let lab = Arc::new(LabImpl::default());
    let server = Server::builder()
        .serve(UserServiceServer::new(Users))
        .serve(LabServer::new(Arc::clone(&lab)))
        .bind("127.0.0.1:0")
        .await
        .expect("server binds");
    (server, lab)
}

pub const CODECS: [Codec; 3] = [Codec::Json, Codec::MessagePack, Codec::Protobuf];
