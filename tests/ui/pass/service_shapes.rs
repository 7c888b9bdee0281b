// A service with 0, 1 and 3 arguments and every reply shape, implemented with plain `async fn`;
// the client methods' types are checked by assignment.

use std::collections::{BTreeMap, HashMap};

use wirecall::{message, service, Service};

#[message]
#[derive(Clone, PartialEq)]
pub struct UserModel {
    pub id: u64,
    pub name: String,
}

#[message]
#[derive(Clone, PartialEq)]
pub struct NotFound {
    pub id: u64,
}

#[service]
pub trait UserService {
    /// Returns the id of `name`.
    async fn get_user_id(&self, name: String) -> u64;
    async fn get_user(&self, user: UserModel) -> UserModel;
    async fn get(&self, users: Vec<UserModel>) -> bool;
    async fn get_dictionary(&self) -> HashMap<String, String>;
    async fn ordered(&self) -> BTreeMap<u32, UserModel>;
    async fn find(&self, id: u64) -> Result<UserModel, NotFound>;
    async fn delete(&self, id: u64) -> Result<(), NotFound>;
    async fn rename(&self, id: u64, name: String, force: bool) -> Result<String, String>;
    async fn maybe(&self, id: Option<u64>) -> Option<UserModel>;
    async fn blob(&self, raw: Vec<u8>, shared: wirecall::__private::Bytes) -> Vec<Vec<u8>>;
    async fn floats(&self, x: f32, y: f64, z: i32) -> Vec<i64>;
    #[oneway]
    async fn notify(&self, message: String);
    async fn ping(&self);
    async fn unit(&self) -> ();
}

struct Users;

impl UserService for Users {
    async fn get_user_id(&self, name: String) -> u64 {
        name.len() as u64
    }
    async fn get_user(&self, user: UserModel) -> UserModel {
        user
    }
    async fn get(&self, users: Vec<UserModel>) -> bool {
        users.is_empty()
    }
    async fn get_dictionary(&self) -> HashMap<String, String> {
        HashMap::new()
    }
    async fn ordered(&self) -> BTreeMap<u32, UserModel> {
        BTreeMap::new()
    }
    async fn find(&self, id: u64) -> Result<UserModel, NotFound> {
        Err(NotFound { id })
    }
    async fn delete(&self, _id: u64) -> Result<(), NotFound> {
        Ok(())
    }
    async fn rename(&self, _id: u64, name: String, _force: bool) -> Result<String, String> {
        Ok(name)
    }
    async fn maybe(&self, _id: Option<u64>) -> Option<UserModel> {
        None
    }
    async fn blob(&self, raw: Vec<u8>, _shared: wirecall::__private::Bytes) -> Vec<Vec<u8>> {
        vec![raw]
    }
    async fn floats(&self, _x: f32, _y: f64, z: i32) -> Vec<i64> {
        vec![i64::from(z)]
    }
    async fn notify(&self, _message: String) {}
    async fn ping(&self) {}
    async fn unit(&self) {}
}

fn assert_service<S: Service + Clone>(_: &S) {}

#[allow(dead_code, unused_variables)]
async fn client_types(client: UserServiceClient) -> Result<(), wirecall::Error> {
    let id: u64 = client.get_user_id("ada".to_owned()).await?;
    let user: UserModel = client.get_user(UserModel::default()).await?;
    let empty: bool = client.get(Vec::new()).await?;
    let dictionary: HashMap<String, String> = client.get_dictionary().await?;
    let ordered: BTreeMap<u32, UserModel> = client.ordered().await?;
    let found: Result<UserModel, NotFound> = client.find(1).await?;
    let deleted: Result<(), NotFound> = client.delete(1).await?;
    let renamed: Result<String, String> = client.rename(1, "b".to_owned(), true).await?;
    let maybe: Option<UserModel> = client.maybe(Some(1)).await?;
    let blobs: Vec<Vec<u8>> = client.blob(vec![1], wirecall::__private::Bytes::new()).await?;
    let longs: Vec<i64> = client.floats(1.0, 2.0, 3).await?;
    let (): () = client.notify("hi".to_owned()).await?;
    let (): () = client.ping().await?;
    let (): () = client.unit().await?;
    let codec: wirecall::Codec = client.codec();
    let channel: &wirecall::Channel = client.channel();
    let hurried: UserServiceClient = client.with_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

fn main() {
    let server = UserServiceServer::new(Users);
    assert_service(&server);
    let shared = UserServiceServer::from_arc(std::sync::Arc::new(Users));
    let descriptor = shared.descriptor();
    assert_eq!(descriptor.name, "UserService");
    assert_eq!(UserServiceClient::SERVICE_NAME, "UserService");
    assert_eq!(descriptor.methods.len(), 14);
    for method in descriptor.methods {
        assert_eq!(method.id, wirecall::method_id("UserService", method.name));
        assert_eq!(method.oneway, method.name == "notify");
    }
    let _ = format!("{server:?}");
}
