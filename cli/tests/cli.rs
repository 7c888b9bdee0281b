//! The `wirecall` binary end to end, against servers in this process: every subcommand, the
//! error codes and exit codes, token, TLS, metadata and deadlines.

use std::process::Output;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use wirecall::reflect::ServiceSchema;
use wirecall::{RunningServer, Server, ServerTlsConfig};
// The shared `UserService` fixture: the service every command here talks to.
use wirecall_test_support::{UserServiceServer, Users};

mod output;
use output::{assert_exit, stderr, stdout};

async fn server() -> RunningServer {
    Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts")
}

/// Runs `wirecall ARGS`, with `stdin` as standard input.
async fn wirecall(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wirecall"))
        .args(args)
        .env_remove("WIRECALL_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    child.wait_with_output().await.unwrap()
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", stdout(output)))
}

#[tokio::test]
async fn list_and_describe_learn_the_service_by_reflection() {
    let server = server().await;
    let addr = server.local_addr().to_string();

    let list = wirecall(&["list", &addr], "").await;
    assert_exit(&list, 0);
    let text = stdout(&list);
    assert!(
        text.starts_with("UserService  -- Users, by id and by name.\n  get_user_id\n"),
        "{text}"
    );
    assert!(text.contains("wirecall.Reflection"), "{text}");

    let describe = wirecall(&["describe", &addr, "UserService"], "").await;
    assert_exit(&describe, 0);
    let text = stdout(&describe);
    for line in [
        "  get_user_id(name: String) -> i32  [idempotent]",
        "  find(user_id: i32) -> Result<UserModel, NotFound>",
        "  poke(note: String)  [one-way]",
        "  // The user's name.\n  name: String,",
    ] {
        assert!(text.contains(line), "`{line}` missing from:\n{text}");
    }

    // Over every codec, the JSON form is the schema the server has.
    for codec in ["json", "msgpack", "protobuf"] {
        let output = wirecall(
            &["describe", &addr, "UserService", "--json", "--codec", codec],
            "",
        )
        .await;
        assert_exit(&output, 0);
        let schema: ServiceSchema = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(
            schema,
            wirecall::Service::schema(&UserServiceServer::new(Users::default()))
        );
    }

    let unknown = wirecall(&["describe", &addr, "Nope"], "").await;
    assert_exit(&unknown, 1);
    assert!(stderr(&unknown).contains("no service named `Nope`; it serves: UserService"));
    server.shutdown().await;
}

#[tokio::test]
async fn call_takes_arguments_inline_from_stdin_and_from_a_file() {
    let server = server().await;
    let addr = server.local_addr().to_string();

    let inline = wirecall(
        &[
            "call",
            &addr,
            "UserService.get_user_id",
            r#"{"name":"fanly"}"#,
        ],
        "",
    )
    .await;
    assert_exit(&inline, 0);
    assert_eq!(json(&inline), 5);

    let user = r#"{"user":{"user_id":7,"name":"ada","age":36}}"#;
    let piped = wirecall(&["call", &addr, "UserService.get_user"], user).await;
    assert_exit(&piped, 0);
    assert_eq!(
        json(&piped),
        serde_json::json!({"user_id": 7, "name": "ada", "age": 36})
    );

    let path = std::env::temp_dir().join(format!("wirecall-cli-args-{}.json", std::process::id()));
    std::fs::write(&path, r#"{"user_id": 1}"#).unwrap();
    let from_file = wirecall(
        &[
            "call",
            &addr,
            "UserService.find",
            &format!("@{}", path.display()),
        ],
        "",
    )
    .await;
    std::fs::remove_file(&path).unwrap();
    assert_exit(&from_file, 0);
    assert_eq!(json(&from_file)["name"], "fanly");

    let oneway = wirecall(&["call", &addr, "UserService.poke", r#"{"note":"hi"}"#], "").await;
    assert_exit(&oneway, 0);
    assert!(stderr(&oneway).contains("one-way"));
    server.shutdown().await;
}

#[tokio::test]
async fn failures_have_their_own_exit_codes_and_print_the_wire_code() {
    let server = server().await;
    let addr = server.local_addr().to_string();

    // 5: the method's own error, printed as JSON.
    let app = wirecall(
        &["call", &addr, "UserService.find", r#"{"user_id": 9}"#],
        "",
    )
    .await;
    assert_exit(&app, 5);
    assert!(stderr(&app).contains(r#""user_id": 9"#), "{}", stderr(&app));

    // 4: the server refused the call with a wirecall error code.
    let bad = wirecall(
        &["call", &addr, "UserService.find", r#"{"user_id": "nine"}"#],
        "",
    )
    .await;
    assert_exit(&bad, 4);
    assert!(
        stderr(&bad).contains("error BadRequest (code 2)"),
        "{}",
        stderr(&bad)
    );
    let panicked = wirecall(&["call", &addr, "UserService.explode", "{}"], "").await;
    assert_exit(&panicked, 4);
    assert!(
        stderr(&panicked).contains("error HandlerPanicked (code 3)"),
        "{}",
        stderr(&panicked)
    );
    let slow = wirecall(
        &[
            "call",
            &addr,
            "UserService.sleep",
            r#"{"millis": 2000}"#,
            "--timeout",
            "100ms",
        ],
        "",
    )
    .await;
    assert_exit(&slow, 4);
    assert!(
        stderr(&slow).contains("no reply within 100ms"),
        "{}",
        stderr(&slow)
    );

    // 1: input the tool can tell is wrong before calling.
    for (args, message) in [
        (
            r#"{"id": 9}"#,
            "unknown argument `id`; find takes {user_id: i32}",
        ),
        ("[9]", "must be a JSON object keyed by argument name"),
        ("{", "the arguments are not JSON"),
    ] {
        let output = wirecall(&["call", &addr, "UserService.find", args], "").await;
        assert_exit(&output, 1);
        assert!(stderr(&output).contains(message), "{}", stderr(&output));
    }
    let no_method = wirecall(&["call", &addr, "UserService.nope", "{}"], "").await;
    assert_exit(&no_method, 1);
    assert!(
        stderr(&no_method)
            .contains("its methods are: get_user_id, get_user, get, get_dictionary, find,"),
        "{}",
        stderr(&no_method)
    );
    let msgpack = wirecall(
        &[
            "call",
            &addr,
            "UserService.find",
            "{}",
            "--codec",
            "msgpack",
        ],
        "",
    )
    .await;
    assert_exit(&msgpack, 1);

    // 2: the command line itself.
    assert_exit(&wirecall(&["call"], "").await, 2);

    // 3: nothing to connect to.
    server.shutdown().await;
    let refused = wirecall(&["list", &addr], "").await;
    assert_exit(&refused, 3);
    assert!(
        stderr(&refused).contains("cannot connect to"),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn metadata_travels_with_the_call() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let output = wirecall(
        &[
            "call",
            &addr,
            "UserService.metadata",
            r#"{"key":"tenant"}"#,
            "--metadata",
            "tenant=acme",
            "--metadata",
            "x=y",
        ],
        "",
    )
    .await;
    assert_exit(&output, 0);
    assert_eq!(json(&output), "acme");
    server.shutdown().await;
}

#[tokio::test]
async fn token_and_tls_are_honoured() {
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .token("cli-token-0123456789")
        .tls(ServerTlsConfig::new(ca.cert.pem(), ca.key_pair.serialize_pem()).unwrap())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let ca_path = std::env::temp_dir().join(format!("wirecall-cli-ca-{}.pem", std::process::id()));
    std::fs::write(&ca_path, ca.cert.pem()).unwrap();
    let ca_path = ca_path.display().to_string();

    let plain = wirecall(&["list", &addr, "--token", "cli-token-0123456789"], "").await;
    assert_exit(&plain, 3);
    let no_token = wirecall(
        &[
            "list",
            &addr,
            "--tls-ca",
            &ca_path,
            "--server-name",
            "localhost",
        ],
        "",
    )
    .await;
    assert_exit(&no_token, 3);
    let ok = wirecall(
        &[
            "call",
            &addr,
            "UserService.get_user_id",
            r#"{"name":"tls"}"#,
            "--tls-ca",
            &ca_path,
            "--server-name",
            "localhost",
            "--token",
            "cli-token-0123456789",
        ],
        "",
    )
    .await;
    assert_exit(&ok, 0);
    assert_eq!(json(&ok), 3);
    std::fs::remove_file(&ca_path).unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn proto_and_bench_work_from_reflection_alone() {
    let server = server().await;
    let addr = server.local_addr().to_string();

    let proto = wirecall(&["proto", &addr, "--package", "acme.users"], "").await;
    assert_exit(&proto, 0);
    let text = stdout(&proto);
    assert!(text.contains("package acme.users;"), "{text}");
    assert!(
        text.contains("rpc get_user_id(UserService_get_user_id_Args)"),
        "{text}"
    );
    assert!(
        text.contains("message UserModel {\n  // The user's id.\n  int32 user_id = 1;"),
        "{text}"
    );

    let bench = wirecall(
        &[
            "bench",
            &addr,
            "UserService.get_user_id",
            r#"{"name":"fanly"}"#,
            "--calls",
            "300",
            "--concurrency",
            "8",
        ],
        "",
    )
    .await;
    assert_exit(&bench, 0);
    let text = stdout(&bench);
    assert!(text.contains("300 calls, 8 in flight"), "{text}");
    assert!(text.contains("throughput"), "{text}");
    assert!(text.contains("p99 "), "{text}");
    assert!(text.contains("ok 300  errors 0"), "{text}");
    server.shutdown().await;
}

/// `wirecall list ADDR | grep -q X` closes the pipe as soon as it has seen enough: the
/// CLI must stop quietly there, not panic on the failed write.
#[tokio::test]
async fn a_closed_stdout_ends_the_command_quietly() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    for args in [
        vec!["list", addr.as_str()],
        vec!["describe", addr.as_str(), "UserService"],
        vec!["proto", addr.as_str()],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wirecall"))
            .args(&args)
            .env_remove("WIRECALL_TOKEN")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary runs");
        // Close the read end before the command has its answer to print.
        drop(child.stdout.take());
        let output = child.wait_with_output().await.unwrap();
        assert_exit(&output, 0);
        assert_eq!(stderr(&output), "", "{args:?}");
    }
}
