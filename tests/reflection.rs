//! Reflection: the schemas `#[service]` and `#[message]` derive, the built-in reflection
//! service in every codec and behind the server's token and authorisation hook, and the
//! `.proto` export checked by `protoc` against real Protobuf payloads.

// Some fields and variants are left undocumented on purpose: their schemas have no doc.
#![allow(missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use wirecall::client::Method;
use wirecall::reflect::{
    proto_file, ReflectionClient, ReflectionError, ReplySchema, ServiceSchema, TypeKind, TypeRef,
    VariantShape, REFLECTION_SERVICE,
};
use wirecall::{method_id, Channel, Codec, ErrorCode, RunningServer, Server};

/// Where a tag was seen.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct Sighting {
    /// The place's name.
    pub place: String,
    pub at: std::time::SystemTime,
    pub after: Duration,
    pub confidence: Option<f64>,
    pub scores: Vec<u32>,
    pub raw: Vec<u8>,
    pub blob: Bytes,
    pub labels: BTreeMap<String, Vec<i64>>,
    pub pair: (u16, String),
    pub digest: [u8; 4],
    pub colour: Colour,
    pub event: Event,
    pub parent: Option<Box<Sighting>>,
    pub maybe: Option<Option<i32>>,
    pub grid: Vec<Vec<i8>>,
    pub counts: HashMap<u64, Option<bool>>,
    pub initial: char,
}

/// A colour.
#[wirecall::message]
#[derive(Clone, Copy, PartialEq)]
pub enum Colour {
    /// The default.
    Red,
    Blue = 5,
    #[wirecall(other)]
    Unknown = 9,
}

/// What happened.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub enum Event {
    Started,
    /// Moved somewhere.
    Moved {
        to: String,
        steps: u32,
    },
    Tagged(Colour),
    Pair(i32, String),
}

/// Tags and their sightings.
#[wirecall::service]
pub trait Tags {
    /// Records a sighting and echoes it.
    #[idempotent]
    async fn record(&self, sighting: Sighting, note: String) -> Sighting;
    /// Looks a sighting up.
    async fn lookup(&self, place: String) -> Result<Sighting, String>;
    async fn forget(&self, place: String) -> Result<(), String>;
    #[oneway]
    async fn ping(&self);
}

struct TagStore;

impl Tags for TagStore {
    async fn record(&self, mut sighting: Sighting, note: String) -> Sighting {
        sighting.place = format!("{} ({note})", sighting.place);
        sighting
    }
    async fn lookup(&self, place: String) -> Result<Sighting, String> {
        Err(format!("no sighting at {place}"))
    }
    async fn forget(&self, _place: String) -> Result<(), String> {
        Ok(())
    }
    async fn ping(&self) {}
}

async fn server() -> RunningServer {
    Server::builder()
        .serve(TagsServer::new(TagStore))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts")
}

async fn describe(server: &RunningServer, codec: Codec, service: &str) -> ServiceSchema {
    let channel = Channel::builder()
        .codec(codec)
        .connect(server.local_addr())
        .await
        .expect("connects");
    ReflectionClient::new(channel)
        .describe(service.to_owned())
        .await
        .expect("call succeeds")
        .expect("service is known")
}

#[tokio::test]
async fn list_services_names_each_service_and_reflection_itself() {
    let server = server().await;
    let client = ReflectionClient::connect(server.local_addr())
        .await
        .unwrap();
    let services = client.list_services().await.unwrap();
    let names: Vec<&str> = services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Tags", REFLECTION_SERVICE]);
    assert_eq!(services[0].summary, "Tags and their sightings.");
    assert_eq!(services[0].methods, ["record", "lookup", "forget", "ping"]);
    server.shutdown().await;
}

#[tokio::test]
async fn describe_gives_methods_marks_docs_and_every_named_type() {
    let server = server().await;
    let schema = describe(&server, Codec::MessagePack, "Tags").await;
    assert!(schema.described);
    assert_eq!(schema.codecs, ["msgpack", "protobuf", "json"]);
    let record = schema.method("record").unwrap();
    assert_eq!(record.id, method_id("Tags", "record").get());
    assert_eq!(record.doc, "Records a sighting and echoes it.");
    assert!(record.idempotent && !record.oneway);
    let arg_names: Vec<&str> = record.args.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(arg_names, ["sighting", "note"]);
    assert_eq!(record.args[0].ty, TypeRef::Named("Sighting".into()));
    assert_eq!(
        record.reply,
        ReplySchema::Value(TypeRef::Named("Sighting".into()))
    );
    assert_eq!(
        schema.method("forget").unwrap().reply,
        ReplySchema::Result {
            ok: None,
            err: TypeRef::String
        }
    );
    let ping = schema.method("ping").unwrap();
    assert!(ping.oneway && !ping.idempotent);

    let names: Vec<&str> = schema.types.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["Sighting", "Colour", "Event"],
        "each type once, in order of use"
    );
    let sighting = schema.type_def("Sighting").unwrap();
    assert_eq!(sighting.rust_path, "reflection::Sighting");
    let TypeKind::Struct { fields } = &sighting.kind else {
        panic!("a struct")
    };
    let field = |name: &str| &fields.iter().find(|f| f.name == name).unwrap().ty;
    assert_eq!(fields[0].doc, "The place's name.");
    assert_eq!(field("at"), &TypeRef::Timestamp);
    assert_eq!(
        field("confidence"),
        &TypeRef::Option(Box::new(TypeRef::F64))
    );
    assert_eq!(field("raw"), &TypeRef::List(Box::new(TypeRef::U8)));
    assert_eq!(field("blob"), &TypeRef::Bytes);
    assert_eq!(
        field("parent"),
        &TypeRef::Option(Box::new(TypeRef::Named("Sighting".into()))),
        "Box is transparent and a recursive type refers to itself"
    );
    assert_eq!(
        field("pair"),
        &TypeRef::Tuple(vec![TypeRef::U16, TypeRef::String])
    );
    assert_eq!(
        field("digest"),
        &TypeRef::Array {
            element: Box::new(TypeRef::U8),
            len: 4
        }
    );

    let TypeKind::Enum { values } = &schema.type_def("Colour").unwrap().kind else {
        panic!("a protobuf enum")
    };
    let values: Vec<(&str, i32, bool)> = values
        .iter()
        .map(|v| (v.name.as_str(), v.number, v.other))
        .collect();
    assert_eq!(
        values,
        [("Red", 0, false), ("Blue", 5, false), ("Unknown", 9, true)]
    );

    let TypeKind::OneOf { variants } = &schema.type_def("Event").unwrap().kind else {
        panic!("a oneof")
    };
    assert_eq!(variants[1].doc, "Moved somewhere.");
    assert_eq!(
        variants.iter().map(|v| v.tag).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert!(
        matches!(&variants[1].shape, VariantShape::Fields { named: true, fields } if fields.len() == 2)
    );
    assert_eq!(
        variants[2].shape,
        VariantShape::Newtype(TypeRef::Named("Colour".into()))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn every_codec_carries_the_same_schema() {
    let server = server().await;
    let json = describe(&server, Codec::Json, "Tags").await;
    assert_eq!(json, describe(&server, Codec::MessagePack, "Tags").await);
    assert_eq!(json, describe(&server, Codec::Protobuf, "Tags").await);
    // The reflection service describes itself too.
    let own = describe(&server, Codec::Protobuf, REFLECTION_SERVICE).await;
    assert!(own.method("describe").unwrap().idempotent);
    assert!(own.type_def("ServiceSchema").is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn describing_an_unknown_service_is_an_application_error() {
    let server = server().await;
    let client = ReflectionClient::connect(server.local_addr())
        .await
        .unwrap();
    let reply = client.describe("Nope".into()).await.unwrap();
    assert_eq!(reply, Err(ReflectionError::UnknownService("Nope".into())));
    server.shutdown().await;
}

/// The encoded descriptor set of `service`, asked in `codec`.
async fn descriptors(
    server: &RunningServer,
    codec: Codec,
    service: &str,
) -> Result<Bytes, ReflectionError> {
    let channel = Channel::builder()
        .codec(codec)
        .connect(server.local_addr())
        .await
        .expect("connects");
    ReflectionClient::new(channel)
        .descriptors(service.to_owned())
        .await
        .expect("call succeeds")
}

#[tokio::test]
async fn descriptors_hold_a_services_messages_in_every_codec() {
    let server = server().await;
    let set = descriptors(&server, Codec::Protobuf, "Tags")
        .await
        .expect("Tags speaks Protobuf");
    let contains = |needle: &[u8]| set.windows(needle.len()).any(|window| window == needle);
    assert!(contains(b"wirecall/wirecall.services.proto"));
    assert!(contains(b"Tags_record_Args"));
    for codec in [Codec::Json, Codec::MessagePack] {
        assert_eq!(descriptors(&server, codec, "Tags").await, Ok(set.clone()));
    }
    // The reflection service has descriptors too: a Protobuf client calls it with them.
    let own = descriptors(&server, Codec::Json, REFLECTION_SERVICE)
        .await
        .expect("reflection speaks Protobuf");
    assert!(own
        .windows(b"wirecall_Reflection_descriptors_Reply".len())
        .any(|window| window == b"wirecall_Reflection_descriptors_Reply"));
    assert_eq!(
        descriptors(&server, Codec::Json, "Nope").await,
        Err(ReflectionError::UnknownService("Nope".into()))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn reflection_can_be_turned_off() {
    let server = Server::builder()
        .serve(TagsServer::new(TagStore))
        .reflection(false)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let client = ReflectionClient::connect(server.local_addr())
        .await
        .unwrap();
    let error = client.list_services().await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::UnknownMethod), "{error}");
    server.shutdown().await;
}

#[tokio::test]
async fn reflection_obeys_the_token_and_the_authorisation_hook() {
    let server = Server::builder()
        .serve(TagsServer::new(TagStore))
        .token("s3cret-token-for-reflection")
        .authorize(|_, target| target.service != REFLECTION_SERVICE)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    // No token: the connection is refused before any call.
    assert!(ReflectionClient::connect(server.local_addr())
        .await
        .is_err());
    let channel = Channel::builder()
        .token("s3cret-token-for-reflection")
        .connect(server.local_addr())
        .await
        .unwrap();
    let error = ReflectionClient::new(channel.clone())
        .list_services()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::PermissionDenied), "{error}");
    // The service itself is still allowed.
    let reply = TagsClient::new(channel).forget("x".into()).await.unwrap();
    assert_eq!(reply, Ok(()));
    server.shutdown().await;
}

#[tokio::test]
async fn call_raw_carries_json_by_argument_name() {
    let server = server().await;
    let channel = Channel::builder()
        .codec(Codec::Json)
        .connect(server.local_addr())
        .await
        .unwrap();
    let reply = channel
        .call_raw(
            &Method::new("Tags", "lookup"),
            Codec::Json,
            Bytes::from_static(br#"{"place":"dock"}"#),
        )
        .await
        .unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["err"], "no sighting at dock");
    let error = channel
        .call_raw(
            &Method::new("Tags", "lookup"),
            Codec::Json,
            Bytes::from_static(b"[not json"),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::BadRequest), "{error}");
    server.shutdown().await;
}

/// Runs protoc with `args`, feeding `input`; returns stdout, failing with protoc's stderr.
fn protoc(dir: &std::path::Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    let protoc =
        protoc_bin_vendored::protoc_bin_path().expect("a vendored protoc for this platform");
    let well_known = protoc_bin_vendored::include_path().expect("protoc's bundled .proto files");
    let mut child = Command::new(protoc)
        .current_dir(dir)
        .args(["-I", "."])
        .arg("-I")
        .arg(well_known)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the vendored protoc runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "protoc {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[tokio::test]
async fn the_proto_export_compiles_and_decodes_real_payloads_both_ways() {
    let server = server().await;
    let client = ReflectionClient::connect(server.local_addr())
        .await
        .unwrap();
    let mut schemas = Vec::new();
    for summary in client.list_services().await.unwrap() {
        schemas.push(client.describe(summary.name).await.unwrap().unwrap());
    }
    let file = proto_file(&schemas, "acme.tags").expect("exports");
    let dir = std::env::temp_dir().join(format!("wirecall-proto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tags.proto"), &file).unwrap();
    protoc(&dir, &["--descriptor_set_out=/dev/null", "tags.proto"], b"");

    // A request written by protoc from text, sent as is over the Protobuf codec...
    let args_text = r#"
        sighting {
          place: "dock"
          at { seconds: 1700000000 nanos: 5 }
          after { seconds: 3 }
          confidence: 0.5
          scores: [1, 2, 300]
          raw: "\001\002"
          blob: "xyz"
          labels { key: "a" value { values: [-1, 7] } }
          pair { f0: 65535 f1: "p" }
          digest: "\336\255\276\357"
          colour: COLOUR_BLUE
          event { moved { to: "shed" steps: 12 } }
          parent { place: "gate" colour: COLOUR_UNKNOWN event { tagged: COLOUR_BLUE } }
          maybe { }
          grid { values: [-3, 4] } grid { }
          counts { key: 9 value: true }
          initial: 955
        }
        note: "n"
    "#;
    let args = protoc(
        &dir,
        &["--encode=acme.tags.Tags_record_Args", "tags.proto"],
        args_text.as_bytes(),
    );
    let channel = Channel::builder()
        .codec(Codec::Protobuf)
        .connect(server.local_addr())
        .await
        .unwrap();
    let reply = channel
        .call_raw(
            &Method::new("Tags", "record"),
            Codec::Protobuf,
            Bytes::from(args),
        )
        .await
        .expect("the server decodes protoc's bytes");
    // ...and the server's reply read back by protoc.
    let text = String::from_utf8(protoc(
        &dir,
        &["--decode=acme.tags.Tags_record_Reply", "tags.proto"],
        &reply,
    ))
    .unwrap();
    for expected in [
        r#"place: "dock (n)""#,
        "seconds: 1700000000",
        "confidence: 0.5",
        "scores: 300",
        r#"raw: "\001\002""#,
        r#"blob: "xyz""#,
        "values: -1",
        "f0: 65535",
        r#"digest: "\336\255\276\357""#,
        "colour: COLOUR_BLUE",
        r#"to: "shed""#,
        "steps: 12",
        r#"place: "gate""#,
        "colour: COLOUR_UNKNOWN",
        "tagged: COLOUR_BLUE",
        "maybe {\n",
        "values: -3",
        "key: 9",
        "initial: 955",
    ] {
        assert!(
            text.contains(expected),
            "`{expected}` missing from:\n{text}\n{file}"
        );
    }

    // The Rust side agrees with protoc: the same call through the typed client.
    let typed = TagsClient::new(channel);
    let error = typed.lookup("dock".into()).await.unwrap();
    assert_eq!(error.unwrap_err(), "no sighting at dock");
    if std::env::var_os("WIRECALL_PRINT_PROTO").is_some() {
        println!("{file}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
}

#[test]
fn the_json_schema_names_every_method_and_type() {
    let schema = TagsServer::new(TagStore);
    let schema = wirecall::Service::schema(&schema);
    let document = wirecall::reflect::json_schema(&schema);
    let defs = document["$defs"].as_object().unwrap();
    for name in [
        "Sighting",
        "Colour",
        "Event",
        "record.args",
        "record.reply",
        "forget.reply",
    ] {
        assert!(defs.contains_key(name), "{name} missing");
    }
    assert_eq!(
        defs["Colour"]["enum"],
        serde_json::json!(["Red", "Blue", "Unknown"])
    );
    assert_eq!(
        defs["record.args"]["properties"]["sighting"]["$ref"],
        "#/$defs/Sighting"
    );
    assert_eq!(
        defs["Sighting"]["properties"]["maybe"]["anyOf"][0]["maxItems"], 1,
        "Option<Option<T>> is null or a one-element array"
    );
}
