//! `WIRECALL_POLICY` and `WIRECALL_POLICY_FILE` as the `wirecall` binary honours them, against
//! a real server: a method's run-time policy bounds its calls whatever the command (`call` of
//! a unary method or a server stream, `bench`), exactly as it bounds a Rust client's, and a
//! policy that does not parse is a bad-input error before anything is dialled.

use std::process::{Output, Stdio};

use tokio::process::Command;
use wirecall::{RunningServer, Server};
use wirecall_test_support::feed::{FeedImpl, FeedServer};
use wirecall_test_support::{UserServiceServer, Users};

mod output;
use output::{assert_exit, stderr};

async fn server() -> RunningServer {
    Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .serve(FeedServer::new(FeedImpl::default()))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts")
}

/// Runs `wirecall ARGS` with exactly the policy variables in `env` set.
async fn wirecall(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wirecall"));
    command
        .args(args)
        .env_remove("WIRECALL_TOKEN")
        .env_remove("WIRECALL_POLICY")
        .env_remove("WIRECALL_POLICY_FILE")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    command.output().await.expect("the binary runs")
}

const SLEEP_HALF_A_SECOND: [&str; 2] = ["UserService.sleep", r#"{"millis": 500}"#];

#[tokio::test]
async fn a_policy_timeout_fails_a_call_that_passes_without_it() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let call = [
        "call",
        &addr,
        SLEEP_HALF_A_SECOND[0],
        SLEEP_HALF_A_SECOND[1],
    ];

    assert_exit(&wirecall(&call, &[]).await, 0);

    let bounded = wirecall(
        &call,
        &[("WIRECALL_POLICY", "UserService.sleep timeout=50ms")],
    )
    .await;
    assert_exit(&bounded, 4);
    assert!(
        stderr(&bounded).contains("call failed: no reply within 50ms"),
        "{}",
        stderr(&bounded)
    );

    // A policy for another method leaves this one alone.
    let elsewhere = wirecall(
        &call,
        &[("WIRECALL_POLICY", "UserService.find timeout=50ms")],
    )
    .await;
    assert_exit(&elsewhere, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_policy_file_applies_and_the_variable_goes_over_it() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let path = std::env::temp_dir().join(format!("wirecall-cli-policy-{}.txt", std::process::id()));
    std::fs::write(
        &path,
        "# slow calls fail fast\nUserService.* timeout=50ms\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let call = [
        "call",
        &addr,
        SLEEP_HALF_A_SECOND[0],
        SLEEP_HALF_A_SECOND[1],
    ];

    let from_file = wirecall(&call, &[("WIRECALL_POLICY_FILE", file)]).await;
    assert_exit(&from_file, 4);
    assert!(
        stderr(&from_file).contains("no reply within 50ms"),
        "{}",
        stderr(&from_file)
    );

    let overridden = wirecall(
        &call,
        &[
            ("WIRECALL_POLICY_FILE", file),
            ("WIRECALL_POLICY", "UserService.sleep timeout=5s"),
        ],
    )
    .await;
    assert_exit(&overridden, 0);
    std::fs::remove_file(&path).unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn streams_and_bench_calls_go_through_the_policy_too() {
    let server = server().await;
    let addr = server.local_addr().to_string();

    // Without the policy, `endless` would run until `--timeout` (10 s).
    let stream = wirecall(
        &["call", &addr, "Feed.endless", "{}"],
        &[("WIRECALL_POLICY", "Feed.endless timeout=100ms")],
    )
    .await;
    assert_exit(&stream, 4);
    assert!(
        stderr(&stream).contains("the stream of Feed.endless failed after")
            && stderr(&stream).contains("no reply within 100ms"),
        "{}",
        stderr(&stream)
    );

    let bench = wirecall(
        &[
            "bench",
            &addr,
            SLEEP_HALF_A_SECOND[0],
            SLEEP_HALF_A_SECOND[1],
            "--calls",
            "4",
        ],
        &[("WIRECALL_POLICY", "UserService.sleep timeout=50ms")],
    )
    .await;
    assert_exit(&bench, 4);
    assert!(
        stderr(&bench).contains("no reply within 50ms"),
        "{}",
        stderr(&bench)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_policy_that_does_not_parse_is_bad_input_named_as_in_rust() {
    // Nothing listens here: the policy is read before anything is dialled.
    let addr = "127.0.0.1:1";
    let call = ["call", addr, SLEEP_HALF_A_SECOND[0], SLEEP_HALF_A_SECOND[1]];

    let malformed = wirecall(
        &call,
        &[("WIRECALL_POLICY", "UserService.sleep timeout=soon")],
    )
    .await;
    assert_exit(&malformed, 1);
    assert!(
        stderr(&malformed).starts_with(
            "wirecall: invalid configuration: WIRECALL_POLICY, line 1: `timeout=soon`: "
        ),
        "{}",
        stderr(&malformed)
    );

    let unknown_key = wirecall(
        &call,
        &[("WIRECALL_POLICY", "UserService.sleep deadline=1s")],
    )
    .await;
    assert_exit(&unknown_key, 1);
    assert!(
        stderr(&unknown_key).contains("unknown key `deadline`; the keys are timeout"),
        "{}",
        stderr(&unknown_key)
    );

    let missing_file = wirecall(
        &["list", addr],
        &[("WIRECALL_POLICY_FILE", "/nonexistent/policies.txt")],
    )
    .await;
    assert_exit(&missing_file, 1);
    assert!(
        stderr(&missing_file).contains(
            "could not read the policy file /nonexistent/policies.txt: No such file or directory"
        ) && stderr(&missing_file).contains("check WIRECALL_POLICY_FILE"),
        "{}",
        stderr(&missing_file)
    );
}
