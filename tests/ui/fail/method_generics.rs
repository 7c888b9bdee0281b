#[wirecall::service]
pub trait Store {
    async fn put<T>(&self, value: T);
    async fn get<'a>(&self, key: String) -> String;
}

fn main() {}
