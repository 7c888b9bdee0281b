//! A server with two services covering every type the JSON mapping has, behind the gateway
//! at its defaults: what `.ci/schemathesis-check` runs a schema fuzzer against.
//!
//! ```text
//! cargo run -p wirecall-gateway --example every_type -- 127.0.0.1:8080
//! ```
//!
//! Prints `gateway on http://{address}` once it answers, and serves until killed.

use wirecall::{Channel, Codec, Server};
use wirecall_gateway::Gateway;

mod services;

use services::{lab, weather};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let server = Server::builder()
        .serve(weather::WeatherServer::new(weather::Station))
        .serve(lab::LabServer::new(lab::Bench))
        .bind("127.0.0.1:0")
        .await?;
    let channel = Channel::builder()
        .codec(Codec::Json)
        .connect(server.local_addr())
        .await?;
    let gateway = Gateway::builder().build(channel).await?;
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("gateway on http://{}", listener.local_addr()?);
    gateway.serve(listener).await?;
    Ok(())
}
