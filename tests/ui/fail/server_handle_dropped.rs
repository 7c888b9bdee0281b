// A RunningServer that is not kept stops at once: the compiler says so.
#![deny(unused_must_use)]

async fn start() {
    wirecall::Server::builder()
        .bind("127.0.0.1:0")
        .await
        .unwrap();
}

fn main() {
    let _ = start();
}
