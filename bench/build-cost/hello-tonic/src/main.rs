use tonic::{transport::Server, Request, Response, Status};

pub mod greeter {
    tonic::include_proto!("greeter");
}
use greeter::greeter_client::GreeterClient;
use greeter::greeter_server::{Greeter, GreeterServer};
use greeter::{HelloReply, HelloRequest};

struct English;

#[tonic::async_trait]
impl Greeter for English {
    async fn hello(&self, request: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        let message = format!("hello, {}", request.into_inner().name); // HANDLER
        Ok(Response::new(HelloReply { message }))
    }
    // ADDED HANDLER
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(
        Server::builder()
            .add_service(GreeterServer::new(English))
            .serve_with_incoming(incoming),
    );
    let mut client = GreeterClient::connect(format!("http://{addr}")).await?;
    let reply = client
        .hello(HelloRequest {
            name: "world".into(),
        })
        .await?;
    println!("{}", reply.into_inner().message);
    Ok(())
}
