//! `wirecall bench` on server streams and uploads, against a real server serving the shared
//! `Feed` fixture: every stream read to its end and every upload sent whole, with the item
//! counts the report gives. (Unary `bench` is in `cli.rs`, beside the other commands.)

use std::process::Output;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use wirecall::{RunningServer, Server};
use wirecall_test_support::feed::{FeedImpl, FeedServer};

mod output;
use output::{assert_exit, stderr, stdout};

async fn serve() -> RunningServer {
    Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts")
}

/// Runs `wirecall ARGS` to its end, with `input` on standard input and then its end.
async fn wirecall(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wirecall"))
        .args(args)
        .env_remove("WIRECALL_TOKEN")
        .env_remove("WIRECALL_POLICY")
        .env_remove("WIRECALL_POLICY_FILE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().unwrap();
    // The command may stop reading early (a refused line): a broken pipe here is its answer.
    let _ = stdin.write_all(input.as_bytes()).await;
    drop(stdin);
    child.wait_with_output().await.unwrap()
}

/// Fails unless the report has a line that starts (after its indent) with `label` and
/// contains each of `figures`.
#[track_caller]
fn assert_reports(output: &Output, label: &str, figures: &[&str]) {
    let text = stdout(output);
    let found = text.lines().any(|line| {
        line.trim_start().starts_with(label) && figures.iter().all(|f| line.contains(f))
    });
    assert!(found, "no `{label}` line with {figures:?} in:\n{text}");
}

#[tokio::test]
async fn bench_reads_every_stream_to_its_end_and_counts_the_items() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let output = wirecall(
        &[
            "bench",
            &addr,
            "Feed.numbers",
            r#"{"count": 25}"#,
            "--calls",
            "6",
            "--concurrency",
            "4",
        ],
        "",
    )
    .await;
    assert_exit(&output, 0);
    assert!(
        stdout(&output).starts_with("Feed.numbers: 6 streams, 4 open at once, 1 connection"),
        "{}",
        stdout(&output)
    );
    assert_reports(&output, "throughput", &["streams/s", "items/s"]);
    assert_reports(&output, "item gap", &["min", "p50", "p99", "max"]);
    assert_reports(&output, "stream", &["min", "p50", "max"]);
    assert_reports(&output, "ok 6", &["errors 0", "items 150"]);
    server.shutdown().await;
}

#[tokio::test]
async fn bench_uploads_the_items_of_standard_input_in_every_call() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let output = wirecall(
        &[
            "bench",
            &addr,
            "Feed.sum",
            "--calls",
            "5",
            "--concurrency",
            "2",
        ],
        "1\n2\n\n3\n4\n",
    )
    .await;
    assert_exit(&output, 0);
    assert!(
        stdout(&output).starts_with("Feed.sum: 5 uploads of 4 items, 2 in flight, 1 connection"),
        "{}",
        stdout(&output)
    );
    assert_reports(&output, "throughput", &["uploads/s", "items/s sent"]);
    assert_reports(&output, "latency", &["min", "p50", "max"]);
    // A client-streaming method answers each upload with one item.
    assert_reports(
        &output,
        "ok 5",
        &["errors 0", "items sent 20", "items received 5"],
    );
    server.shutdown().await;
}

#[tokio::test]
async fn bench_of_a_bidirectional_method_counts_the_items_of_each_answer() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let path =
        std::env::temp_dir().join(format!("wirecall-cli-bench-{}.jsonl", std::process::id()));
    std::fs::write(
        &path,
        "{\"n\":1,\"body\":[]}\n{\"n\":2,\"body\":[7]}\n{\"n\":3,\"body\":[]}\n",
    )
    .unwrap();
    let output = wirecall(
        &[
            "bench",
            &addr,
            "Feed.doubled",
            "--upload",
            path.to_str().unwrap(),
            "--calls",
            "4",
        ],
        "",
    )
    .await;
    std::fs::remove_file(&path).unwrap();
    assert_exit(&output, 0);
    assert_reports(
        &output,
        "ok 4",
        &["errors 0", "items sent 12", "items received 12"],
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_line_that_is_not_json_stops_the_bench_before_any_call() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let output = wirecall(&["bench", &addr, "Feed.sum", "--calls", "5"], "1\nlots\n").await;
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("line 2 of standard input is not JSON"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    server.shutdown().await;
}
