//! Calls over TCP through services generated with `crate = "..."`, with wirecall reachable
//! only as `rpc`.

use rpc::{Channel, Codec, Server};
use wirecall_renamed_dependency_test::nested::{Ping, PingerClient, PingerServer};
use wirecall_renamed_dependency_test::{
    EchoClient, EchoServer, Mark, Note, NotebookClient, NotebookServer, Pages, Shade,
};

#[tokio::test]
async fn a_service_generated_for_a_renamed_dependency_answers_over_tcp() {
    let server = Server::builder()
        .serve(NotebookServer::new(Pages))
        .serve(PingerServer::new(Pages))
        .bind("127.0.0.1:0")
        .await
        .expect("server binds");
    let note = Note {
        text: "hello".to_owned(),
        shade: Shade::Bold,
        marks: vec![Mark::Number(3)],
        pin: Some(None),
    };
    for codec in [Codec::Json, Codec::MessagePack, Codec::Protobuf] {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .expect("client connects");
        let notebook = NotebookClient::new(channel.clone());
        assert_eq!(notebook.codec(), codec);
        let stamped = notebook.stamp(note.clone()).await.expect("stamp");
        assert_eq!(stamped.text, "HELLO", "{codec}");
        assert!(stamped.shade == Shade::Bold, "{codec}");
        assert!(
            stamped.marks
                == [
                    Mark::Number(3),
                    Mark::Named {
                        name: "stamped".to_owned()
                    }
                ],
            "{codec}"
        );
        assert_eq!(stamped.pin, Some(None), "{codec}");
        assert_eq!(
            notebook.length("four".to_owned()).await.expect("length"),
            Ok(4)
        );
        assert_eq!(
            notebook.length(String::new()).await.expect("length"),
            Err("the text is empty".to_owned())
        );
        let pinger = PingerClient::new(channel);
        assert!(pinger.ping(Ping { count: 41 }).await.expect("ping") == Ping { count: 42 });
    }
    // A server serving a serde-only service offers only JSON and MessagePack.
    let echo_server = Server::builder()
        .serve(EchoServer::new(Pages))
        .bind("127.0.0.1:0")
        .await
        .expect("server binds");
    let echo = EchoClient::connect(echo_server.local_addr())
        .await
        .expect("client connects");
    assert_ne!(echo.codec(), Codec::Protobuf);
    assert!(echo.echo(Shade::Plain).await.expect("echo") == Shade::Plain);
}
