//! The `user` example keeps its own `UserService` so that a reader sees the whole trait in one
//! file; the tests and benchmarks use the shared fixture (`wirecall-test-support`). This test
//! keeps the two from drifting: every method of the example's trait is in the fixture, first
//! and in the same order, with the same id, arguments, reply and types, and a client of the
//! fixture gets the same answers from the example's server as from the fixture's.

use std::collections::HashMap;

use wirecall::reflect::{FieldSchema, MethodSchema, ServiceSchema, TypeDef};
use wirecall::{Channel, Codec, Server, Service};
use wirecall_test_support::{fanly, UserModel, UserServiceClient};

#[allow(dead_code)]
#[path = "../examples/user.rs"]
mod example;

/// What of a method travels on the wire: docs, the client-side `idempotent` retry hint and
/// the client-side policy do not.
fn wire_shape(method: &MethodSchema) -> MethodSchema {
    MethodSchema {
        doc: String::new(),
        idempotent: false,
        policy: String::new(),
        args: method.args.iter().map(undocumented).collect(),
        ..method.clone()
    }
}

fn undocumented(field: &FieldSchema) -> FieldSchema {
    FieldSchema {
        doc: String::new(),
        ..field.clone()
    }
}

/// A named type as the wire sees it: its shape, without the Rust path it was declared at.
fn wire_type<'a>(schema: &'a ServiceSchema, name: &str) -> &'a wirecall::reflect::TypeKind {
    let found: Option<&TypeDef> = schema.types.iter().find(|ty| ty.name == name);
    &found
        .unwrap_or_else(|| panic!("{} has no type {name}", schema.name))
        .kind
}

#[test]
fn the_example_and_the_fixture_have_one_wire_shape() {
    let example = example::UserServiceServer::new(example::Users).schema();
    let fixture =
        wirecall_test_support::UserServiceServer::new(wirecall_test_support::Users::default())
            .schema();
    assert_eq!(example.name, fixture.name);
    assert_eq!(example.codecs, fixture.codecs);
    assert!(
        example.methods.len() <= fixture.methods.len(),
        "the fixture lacks some of the example's methods"
    );
    for (ours, theirs) in example.methods.iter().zip(&fixture.methods) {
        assert_eq!(wire_shape(ours), wire_shape(theirs), "method {}", ours.name);
    }
    for name in ["UserModel", "NotFound"] {
        assert_eq!(
            wire_type(&example, name),
            wire_type(&fixture, name),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_fixture_client_gets_the_same_answers_from_the_example_server() {
    let server = Server::builder()
        .serve(example::UserServiceServer::new(example::Users))
        .bind("127.0.0.1:0")
        .await
        .expect("server binds");
    for codec in [Codec::Json, Codec::MessagePack, Codec::Protobuf] {
        let channel = Channel::builder()
            .codec(codec)
            .connect(server.local_addr())
            .await
            .expect("client connects");
        let users = UserServiceClient::new(channel);
        assert_eq!(users.get_user_id("fanly".to_owned()).await.unwrap(), 5);
        let ada = UserModel {
            user_id: 7,
            name: "ada".to_owned(),
            age: 36,
        };
        assert_eq!(users.get_user(ada.clone()).await.unwrap(), ada, "{codec}");
        assert!(users.get(vec![fanly(); 10]).await.unwrap());
        assert!(!users.get(Vec::new()).await.unwrap());
        assert_eq!(
            users.get_dictionary().await.unwrap(),
            HashMap::from([("key".to_owned(), "value".to_owned())])
        );
        assert_eq!(users.find(1).await.unwrap(), Ok(fanly()), "{codec}");
        let missing = users.find(9).await.unwrap().unwrap_err();
        assert_eq!(
            (missing.user_id, missing.reason.as_str()),
            (9, "no such user")
        );
    }
    server.shutdown().await;
}
