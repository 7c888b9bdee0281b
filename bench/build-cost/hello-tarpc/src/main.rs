use futures::StreamExt;
use tarpc::server::{BaseChannel, Channel};
use tarpc::tokio_serde::formats::Bincode;
use tarpc::{client, context};

#[tarpc::service]
trait Greeter {
    async fn hello(name: String) -> String;
    // ADDED METHOD
}

#[derive(Clone)]
struct English;

impl Greeter for English {
    async fn hello(self, _: context::Context, name: String) -> String {
        format!("hello, {name}") // HANDLER
    }
    // ADDED HANDLER
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut listener = tarpc::serde_transport::tcp::listen("127.0.0.1:0", Bincode::default).await?;
    let addr = listener.local_addr();
    tokio::spawn(async move {
        while let Some(Ok(transport)) = listener.next().await {
            let channel = BaseChannel::with_defaults(transport);
            tokio::spawn(
                channel
                    .execute(English.serve())
                    .for_each(|response| async move {
                        tokio::spawn(response);
                    }),
            );
        }
    });
    let transport = tarpc::serde_transport::tcp::connect(addr, Bincode::default).await?;
    let client = GreeterClient::new(client::Config::default(), transport).spawn();
    println!(
        "{}",
        client.hello(context::current(), "world".into()).await?
    );
    Ok(())
}
