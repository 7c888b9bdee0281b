//! The JSON mapping, one description for the gateway and its OpenAPI document: the
//! `every_type` example's services behind the gateway over real HTTP. Replies are what the
//! document says (`Result<Option<T>, E>` as `T | null`, NaN as `"NaN"`), arguments the
//! document refuses are refused with a 400 naming where (unknown names, an `f32` past its
//! range, an enum name the server does not know, a set with an element twice), and the
//! document says what the gateway takes (closed argument objects, required struct-variant
//! fields, tuple lengths, integer map keys, non-finite floats, components per service when
//! two services define a type of the same name).

#[path = "../examples/every_type/services.rs"]
#[allow(dead_code)]
mod services;

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use services::{lab, weather};
use wirecall::{Channel, Codec, RunningServer, Server};
use wirecall_gateway::Gateway;
use wirecall_test_support::PATIENCE;

struct Fixture {
    server: RunningServer,
    http: SocketAddr,
}

async fn fixture() -> Fixture {
    let server = Server::builder()
        .serve(weather::WeatherServer::new(weather::Station))
        .serve(lab::LabServer::new(lab::Bench))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .codec(Codec::Json)
        .connect(server.local_addr())
        .await
        .unwrap();
    let gateway = Gateway::builder().build(channel).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = listener.local_addr().unwrap();
    tokio::spawn(gateway.serve(listener));
    Fixture { server, http }
}

/// POSTs a JSON body; the status and the body, parsed (`null` for an empty one).
async fn post(fixture: &Fixture, path: &str, body: &str) -> (u16, Value) {
    let (status, text) = post_text(fixture, path, body).await;
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    };
    (status, body)
}

/// POSTs a JSON body; the status and the body as text.
async fn post_text(fixture: &Fixture, path: &str, body: &str) -> (u16, String) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("http://{}{path}", fixture.http))
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, client.request(request))
        .await
        .expect("the response starts within the patience")
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn openapi(fixture: &Fixture) -> Value {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let uri = format!("http://{}/openapi.json", fixture.http);
    let response = client.get(uri.parse().unwrap()).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// A 400 whose message names `part`.
fn assert_refused_naming(answer: (u16, Value), part: &str) {
    let (status, body) = answer;
    assert_eq!(status, 400, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(part), "`{part}` not in {body}");
}

#[tokio::test]
async fn a_result_of_an_option_answers_the_option_itself() {
    let fixture = fixture().await;
    let (status, body) = post(&fixture, "/Weather/latest", r#"{"station": ""}"#).await;
    assert_eq!(
        (status, body),
        (200, Value::Null),
        "Ok(None) is null, not [null]"
    );
    let (status, body) = post(&fixture, "/Weather/latest", r#"{"station": "pier"}"#).await;
    assert_eq!(status, 200);
    assert_eq!(body["station"], "pier", "Ok(Some(r)) is r, not [r]: {body}");
    assert_eq!(body["taken"], json!({"secs": 1, "nanos": 500_000_000}));
    let (status, body) = post(&fixture, "/Weather/latest", r#"{"station": "nowhere"}"#).await;
    assert_eq!(
        (status, &body["value"]["station"]),
        (422, &json!("nowhere"))
    );
    let document = openapi(&fixture).await;
    let ok = &document["paths"]["/Weather/latest"]["post"]["responses"]["200"]["content"]
        ["application/json"]["schema"];
    assert_eq!(
        ok,
        &json!({"anyOf": [{"$ref": "#/components/schemas/Weather.Reading"}, {"type": "null"}]})
    );
    // An `Option<Option<T>>` argument is `null` or `[value]`, as the document says.
    let nested = &document["paths"]["/Lab/depth"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"]["properties"]["nested"];
    assert_eq!(
        nested["anyOf"][0]["prefixItems"][0]["anyOf"][1]["type"],
        "null"
    );
    for (args, depth) in [
        ("{}", 0),
        (r#"{"nested": null}"#, 0),
        (r#"{"nested": [null]}"#, 1),
    ] {
        assert_eq!(
            post(&fixture, "/Lab/depth", args).await,
            (200, json!(depth))
        );
    }
    assert_eq!(
        post(&fixture, "/Lab/depth", r#"{"nested": [7]}"#).await,
        (200, json!(2))
    );
    assert_refused_naming(
        post(&fixture, "/Lab/depth", r#"{"nested": 7}"#).await,
        "nested",
    );
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn a_stream_of_results_of_options_answers_the_options_themselves() {
    let fixture = fixture().await;
    let (status, body) = post_text(
        &fixture,
        "/Weather/survey",
        r#"{"stations": ["", "pier", "nowhere"]}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let lines: Vec<Value> = body
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        Value::Null,
        "Ok(None) is null, not [null]: {body}"
    );
    assert_eq!(lines[1]["station"], "pier", "Ok(Some(r)) is r: {body}");
    assert_eq!(lines[2]["error"]["value"]["station"], "nowhere", "{body}");
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn floats_are_numbers_or_the_non_finite_names_and_an_f32_stays_in_range() {
    let fixture = fixture().await;
    let segment = r#"{"shape": {"Segment": [1, 2]}}"#;
    assert_eq!(
        post(&fixture, "/Lab/area", segment).await,
        (200, json!("NaN"))
    );
    let document = openapi(&fixture).await;
    let area = &document["paths"]["/Lab/area"]["post"]["responses"]["200"]["content"]
        ["application/json"]["schema"];
    assert_eq!(area["oneOf"][0]["type"], "number");
    assert_eq!(
        area["oneOf"][1]["enum"],
        json!(["NaN", "Infinity", "-Infinity"])
    );
    let f32_field = &document["components"]["schemas"]["Everything"]["properties"]["an_f32"];
    assert_eq!(f32_field["oneOf"][0]["maximum"], json!(3.4028235e38));

    let everything = |an_f32: &str| format!(r#"{{"all": {{"an_f32": {an_f32}}}}}"#);
    assert_refused_naming(
        post(&fixture, "/Lab/echo", &everything("1e39")).await,
        "an_f32",
    );
    assert_refused_naming(
        post(&fixture, "/Lab/echo", &everything("-1e39")).await,
        "an_f32",
    );
    let (status, body) = post(&fixture, "/Lab/echo", &everything("3.4028235e38")).await;
    assert_eq!((status, &body["an_f32"]), (200, &json!(3.4028235e38)));
    let (status, body) = post(&fixture, "/Lab/echo", &everything(r#""-Infinity""#)).await;
    assert_eq!((status, &body["an_f32"]), (200, &json!("-Infinity")));
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn two_services_with_a_type_of_the_same_name_get_a_component_each() {
    let fixture = fixture().await;
    let document = openapi(&fixture).await;
    let components = &document["components"]["schemas"];
    assert!(components.get("Reading").is_none(), "no shared `Reading`");
    assert!(components["Weather.Reading"]["properties"]["celsius"].is_object());
    assert!(components["Lab.Reading"]["properties"]["sample"].is_object());
    assert!(components["Lab.Reading"]["properties"]
        .get("celsius")
        .is_none());
    let watch = &document["paths"]["/Weather/watch"]["post"]["responses"]["200"]["content"]
        ["application/x-ndjson"]["schema"]["anyOf"][0]["$ref"];
    assert_eq!(watch, "#/components/schemas/Weather.Reading");
    let check = &document["paths"]["/Lab/check"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"]["properties"]["reading"]["$ref"];
    assert_eq!(check, "#/components/schemas/Lab.Reading");
    // A name only one service defines keeps its plain name.
    assert!(components["Everything"].is_object());
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn the_document_says_what_the_gateway_refuses() {
    let fixture = fixture().await;
    let document = openapi(&fixture).await;
    let divide = &document["paths"]["/Lab/divide"]["post"]["requestBody"];
    assert_eq!(divide["required"], true);
    assert_eq!(
        divide["content"]["application/json"]["schema"]["additionalProperties"],
        false
    );
    assert_refused_naming(post(&fixture, "/Lab/divide", r#"{"c": 1}"#).await, "c");
    assert_refused_naming(post(&fixture, "/Lab/divide", "").await, "empty");

    let components = &document["components"]["schemas"];
    let shape = &components["Shape"]["oneOf"];
    let rect = &shape[2]["properties"]["Rect"];
    assert_eq!(rect["required"], json!(["w", "h"]));
    let segment = &shape[3]["properties"]["Segment"];
    assert_eq!(
        (&segment["minItems"], &segment["maxItems"]),
        (&json!(2), &json!(2))
    );
    let area = |shape: &str| format!(r#"{{"shape": {shape}}}"#);
    assert_refused_naming(
        post(&fixture, "/Lab/area", &area(r#"{"Rect": {"w": 2}}"#)).await,
        "h",
    );
    assert_refused_naming(
        post(&fixture, "/Lab/area", &area(r#"{"Segment": [1]}"#)).await,
        "Segment",
    );
    assert_refused_naming(
        post(&fixture, "/Lab/area", &area(r#"{"Dot": null}"#)).await,
        "Shape",
    );
    assert_eq!(
        post(
            &fixture,
            "/Lab/area",
            &area(r#"{"Rect": {"w": 2, "h": 3}}"#)
        )
        .await,
        (200, json!(6.0))
    );

    let by_id = &components["Everything"]["properties"]["by_id"]["propertyNames"]["pattern"];
    assert!(by_id.as_str().unwrap().starts_with("^(0|[1-9]"), "{by_id}");
    let echo = |field: &str, value: &str| format!(r#"{{"all": {{"{field}": {value}}}}}"#);
    for key in ["x", "-1", "4294967296", "01"] {
        let body = echo("by_id", &format!(r#"{{"{key}": "v"}}"#));
        assert_refused_naming(post(&fixture, "/Lab/echo", &body).await, "by_id");
    }
    let (status, body) = post(
        &fixture,
        "/Lab/echo",
        &echo("by_offset", r#"{"-128": true}"#),
    )
    .await;
    assert_eq!((status, &body["by_offset"]), (200, &json!({"-128": true})));
    assert_refused_naming(
        post(&fixture, "/Lab/echo", &echo("ids", "[1, 1]")).await,
        "ids",
    );
    assert_refused_naming(
        post(&fixture, "/Lab/echo", &echo("some_bytes", r#""ab""#)).await,
        "some_bytes",
    );
    assert_refused_naming(
        post(&fixture, "/Lab/echo", &echo("wait", "[1, 0]")).await,
        "wait",
    );
    assert_refused_naming(
        post(&fixture, "/Lab/echo", &echo("reading", "[]")).await,
        "reading",
    );
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn an_integer_with_a_zero_fraction_is_that_integer() {
    let fixture = fixture().await;
    // JSON Schema's `integer` admits 436.0; the gateway sends it on as 436.
    let answer = post(&fixture, "/Lab/divide", r#"{"a": 436.0, "b": 2e0}"#).await;
    assert_eq!(answer, (200, json!(218)));
    assert_refused_naming(post(&fixture, "/Lab/divide", r#"{"a": 436.5}"#).await, "a");
    let (status, body) = post(
        &fixture,
        "/Lab/echo",
        r#"{"all": {"a_u8": 255.0, "rgb": [1.0, 2, 3]}}"#,
    )
    .await;
    assert_eq!(
        (status, &body["a_u8"], &body["rgb"]),
        (200, &json!(255), &json!([1, 2, 3]))
    );
    assert_refused_naming(
        post(&fixture, "/Lab/echo", r#"{"all": {"a_u8": 256.0}}"#).await,
        "a_u8",
    );
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn an_enum_takes_only_the_names_the_server_knows_though_it_has_a_catch_all() {
    let fixture = fixture().await;
    let document = openapi(&fixture).await;
    let kind = &document["components"]["schemas"]["Kind"];
    assert_eq!(kind["enum"], json!(["Water", "Soil", "Unknown"]));
    let check = |kind: &str| format!(r#"{{"reading": {{"sample": 1, "kind": "{kind}"}}}}"#);
    assert_eq!(
        post(&fixture, "/Lab/check", &check("Soil")).await,
        (200, Value::Null)
    );
    assert_refused_naming(post(&fixture, "/Lab/check", &check("Lava")).await, "kind");
    fixture.server.shutdown().await;
}
