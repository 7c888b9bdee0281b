// A generated client and server talk over TCP with every codec, including results, one-way
// calls and zero-argument methods.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use wirecall::{message, service, Channel, Codec, Server};

#[message]
#[derive(Clone, PartialEq)]
pub struct UserModel {
    pub id: u64,
    pub name: String,
    pub tags: Vec<String>,
}

#[message]
#[derive(Clone, PartialEq)]
pub struct NotFound {
    pub id: u64,
}

#[service]
pub trait UserService {
    async fn get_user_id(&self, name: String) -> u64;
    async fn find(&self, id: u64) -> Result<UserModel, NotFound>;
    async fn delete(&self, id: u64) -> Result<(), NotFound>;
    async fn rename(&self, user: UserModel, name: String, tag: Option<String>) -> UserModel;
    #[oneway]
    async fn notify(&self, message: String);
    async fn notified(&self) -> u32;
}

#[derive(Default)]
struct Users {
    notifications: AtomicU32,
}

impl UserService for Users {
    async fn get_user_id(&self, name: String) -> u64 {
        name.len() as u64
    }
    async fn find(&self, id: u64) -> Result<UserModel, NotFound> {
        if id == 1 {
            Ok(UserModel { id, name: "ada".to_owned(), tags: vec!["admin".to_owned()] })
        } else {
            Err(NotFound { id })
        }
    }
    async fn delete(&self, id: u64) -> Result<(), NotFound> {
        if id == 1 { Ok(()) } else { Err(NotFound { id }) }
    }
    async fn rename(&self, mut user: UserModel, name: String, tag: Option<String>) -> UserModel {
        user.name = name;
        user.tags.extend(tag);
        user
    }
    async fn notify(&self, _message: String) {
        self.notifications.fetch_add(1, Ordering::SeqCst);
    }
    async fn notified(&self) -> u32 {
        self.notifications.load(Ordering::SeqCst)
    }
}

async fn exercise(client: &UserServiceClient) -> Result<(), wirecall::Error> {
    assert_eq!(client.get_user_id("grace".to_owned()).await?, 5);
    let found = client.find(1).await?.expect("user 1 exists");
    assert_eq!(found.name, "ada");
    assert_eq!(client.find(2).await?, Err(NotFound { id: 2 }));
    assert_eq!(client.delete(1).await?, Ok(()));
    assert_eq!(client.delete(3).await?, Err(NotFound { id: 3 }));
    let renamed = client.rename(found, "lovelace".to_owned(), Some("math".to_owned())).await?;
    assert_eq!(renamed.name, "lovelace");
    assert_eq!(renamed.tags, vec!["admin".to_owned(), "math".to_owned()]);
    let before = client.notified().await?;
    client.notify("hello".to_owned()).await?;
    // One-way calls are not acknowledged; poll until the server has run the handler.
    for _ in 0..200 {
        if client.notified().await? > before {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("the one-way call never reached the server");
}

#[tokio::main]
async fn main() -> Result<(), wirecall::Error> {
    let users = Arc::new(Users::default());
    let server = Server::builder()
        .serve(UserServiceServer::from_arc(users))
        .bind("127.0.0.1:0")
        .await?;
    for codec in [Codec::Json, Codec::MessagePack, Codec::Protobuf] {
        let channel = Channel::builder().codec(codec).connect(server.local_addr()).await?;
        let client = UserServiceClient::new(channel);
        assert_eq!(client.codec(), codec);
        exercise(&client).await?;
    }
    let client = UserServiceClient::connect(server.local_addr()).await?;
    exercise(&client.with_timeout(std::time::Duration::from_secs(5))).await?;
    server.shutdown().await;
    Ok(())
}
