//! The smallest complete wirecall program: a service, its server and a client, in one process.
//! Copy it to start a project (the README's dependency lines are all it needs).
//!
//! ```text
//! cargo run --example hello
//! ```

use wirecall::Server;

/// The service: a plain trait. Its client and server are generated.
#[wirecall::service]
pub trait Greeter {
    /// Says hello to `name`.
    async fn hello(&self, name: String) -> String;
}

struct English;

impl Greeter for English {
    async fn hello(&self, name: String) -> String {
        format!("hello, {name}")
    }
}

#[tokio::main]
async fn main() -> Result<(), wirecall::Error> {
    // Port 0: the OS picks a free port.
    let server = Server::builder()
        .serve(GreeterServer::new(English))
        .bind("127.0.0.1:0")
        .await?;

    let client = GreeterClient::connect(server.local_addr()).await?;
    let greeting = client.hello("world".to_owned()).await?;
    println!("{greeting} (codec: {})", client.codec());

    server.shutdown().await;
    Ok(())
}
