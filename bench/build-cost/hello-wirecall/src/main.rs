use wirecall::Server;

#[wirecall::service]
pub trait Greeter {
    async fn hello(&self, name: String) -> String;
    // ADDED METHOD
}

struct English;

impl Greeter for English {
    async fn hello(&self, name: String) -> String {
        format!("hello, {name}") // HANDLER
    }
    // ADDED HANDLER
}

#[tokio::main]
async fn main() -> Result<(), wirecall::Error> {
    let server = Server::builder()
        .serve(GreeterServer::new(English))
        .bind("127.0.0.1:0")
        .await?;
    let client = GreeterClient::connect(server.local_addr()).await?;
    println!("{}", client.hello("world".to_owned()).await?);
    server.shutdown().await;
    Ok(())
}
