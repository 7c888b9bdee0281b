//! `wirecall call` and `describe` on server-streaming methods, against a real server serving
//! the shared `Feed` fixture: items printed one JSON line each as they arrive, the application
//! error and a failed stream with their exit codes, the whole-stream deadline, and `| head`;
//! and a stream's metadata and trailers on stderr.

use std::process::{Output, Stdio};
use std::sync::atomic::Ordering;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use wirecall::{RunningServer, Server};
use wirecall_test_support::feed::{FeedImpl, FeedServer};
use wirecall_test_support::{eventually, quiet_panics_starting_with, PATIENCE};

mod output;
use output::{assert_exit, stderr, stdout};

async fn serve(feed: FeedImpl) -> RunningServer {
    Server::builder()
        .serve(FeedServer::new(feed))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts")
}

/// Runs `wirecall ARGS` to its end, with nothing on standard input.
async fn wirecall(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wirecall"))
        .args(args)
        .env_remove("WIRECALL_TOKEN")
        .stdin(Stdio::null())
        .output()
        .await
        .expect("the binary runs")
}

/// A stream and a unary call that send metadata back.
#[wirecall::service]
pub trait Tallied {
    /// `0..count`, with the reply metadata `unit: item` and the trailer `count: <count>`.
    async fn tally(&self, count: u64) -> wirecall::Streaming<u64>;
    /// One, with the reply metadata `unit: one`.
    async fn one(&self) -> u64;
}

struct Tally;

impl Tallied for Tally {
    async fn tally(&self, count: u64) -> wirecall::Streaming<u64> {
        wirecall::CallContext::with_current(|call| {
            call.set_reply_metadata("unit", "item").ok();
            call.set_trailer("count", count.to_string()).ok();
        });
        wirecall::Streaming::from_iter(0..count)
    }

    async fn one(&self) -> u64 {
        wirecall::CallContext::with_current(|call| call.set_reply_metadata("unit", "one").ok());
        1
    }
}

/// Each stdout line as JSON.
fn lines(output: &Output) -> Vec<serde_json::Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// Metadata and trailers go to stderr, so that stdout keeps only the answer.
#[tokio::test]
async fn reply_metadata_and_trailers_are_printed_on_stderr() {
    let server = Server::builder()
        .serve(TalliedServer::new(Tally))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts");
    let addr = server.local_addr().to_string();
    let output = wirecall(&["call", &addr, "Tallied.tally", r#"{"count":2}"#]).await;
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "0\n1\n");
    assert_eq!(stderr(&output), "metadata unit: item\ntrailer count: 2\n");

    let output = wirecall(&["call", &addr, "Tallied.one", "{}"]).await;
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "1\n");
    assert_eq!(stderr(&output), "metadata unit: one\n");
    server.shutdown().await;
}

#[tokio::test]
async fn describe_marks_server_streams_with_their_item_type() {
    let server = serve(FeedImpl::default()).await;
    let addr = server.local_addr().to_string();
    let output = wirecall(&["describe", &addr, "Feed"]).await;
    assert_exit(&output, 0);
    let text = stdout(&output);
    for line in [
        "  numbers(count: u64) -> stream u64\n",
        "  ticks(count: u64, body_len: u32, fail_at: u64) -> stream Result<Tick, Refused>\n",
        "  add(a: u64, b: u64) -> u64\n",
    ] {
        assert!(text.contains(line), "`{line}` missing from:\n{text}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn call_prints_each_item_of_a_stream_as_one_json_line() {
    let server = serve(FeedImpl::default()).await;
    let addr = server.local_addr().to_string();

    let numbers = wirecall(&["call", &addr, "Feed.numbers", r#"{"count":4}"#]).await;
    assert_exit(&numbers, 0);
    assert_eq!(stdout(&numbers), "0\n1\n2\n3\n");

    let empty = wirecall(&["call", &addr, "Feed.numbers", r#"{"count":0}"#]).await;
    assert_exit(&empty, 0);
    assert_eq!(stdout(&empty), "");

    // Items of `Result<Tick, Refused>`: the `ok` value, as `call` prints a unary result.
    let ticks = wirecall(&[
        "call",
        &addr,
        "Feed.ticks",
        r#"{"count":3,"body_len":2,"fail_at":99}"#,
    ])
    .await;
    assert_exit(&ticks, 0);
    let items = lines(&ticks);
    assert_eq!(items.len(), 3, "{}", stdout(&ticks));
    for (n, item) in items.iter().enumerate() {
        assert_eq!(item["n"], n as u64, "{item}");
        assert!(
            item.get("ok").is_none(),
            "the ok value, not the message: {item}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn an_application_error_item_ends_the_output_with_exit_code_5() {
    let server = serve(FeedImpl::default()).await;
    let addr = server.local_addr().to_string();
    let output = wirecall(&[
        "call",
        &addr,
        "Feed.ticks",
        r#"{"count":5,"body_len":0,"fail_at":2}"#,
    ])
    .await;
    assert_exit(&output, 5);
    let numbers: Vec<_> = lines(&output)
        .iter()
        .map(|item| item["n"].clone())
        .collect();
    assert_eq!(numbers, [0, 1]);
    let text = stderr(&output);
    assert!(text.contains(r#""reason": "item 2 refused""#), "{text}");
    assert!(text.contains("Feed.ticks returned an error"), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_failed_stream_says_how_far_it_got_and_exits_with_4() {
    quiet_panics_starting_with("feed panicked");
    let server = serve(FeedImpl::default()).await;
    let addr = server.local_addr().to_string();

    let panicked = wirecall(&["call", &addr, "Feed.panics_after", r#"{"after":2}"#]).await;
    assert_exit(&panicked, 4);
    assert_eq!(stdout(&panicked), "0\n1\n");
    assert!(
        stderr(&panicked).contains(
            "the stream of Feed.panics_after failed after 2 items: error HandlerPanicked (code 3)"
        ),
        "{}",
        stderr(&panicked)
    );

    let refused = wirecall(&["call", &addr, "Feed.numbers", r#"{"count":"four"}"#]).await;
    assert_exit(&refused, 4);
    assert!(
        stderr(&refused).contains(
            "the stream of Feed.numbers failed before its first item: error BadRequest (code 2)"
        ),
        "{}",
        stderr(&refused)
    );

    // `bench` reads each stream to its end, so a stream that fails fails its first call,
    // before any figure is printed.
    let bench = wirecall(&["bench", &addr, "Feed.panics_after", r#"{"after":2}"#]).await;
    assert_exit(&bench, 4);
    assert!(
        stderr(&bench).contains("error HandlerPanicked (code 3)"),
        "{}",
        stderr(&bench)
    );
    assert_eq!(stdout(&bench), "");
    server.shutdown().await;
}

/// `--timeout` bounds the whole stream, not its first item: an endless stream is cut off
/// with the deadline's error after the items it printed, and the server's producer stops.
#[tokio::test]
async fn the_timeout_bounds_the_whole_stream() {
    let feed = FeedImpl::default();
    let stats = feed.stats.clone();
    let server = serve(feed).await;
    let addr = server.local_addr().to_string();
    let output = wirecall(&["call", &addr, "Feed.endless", "{}", "--timeout", "300ms"]).await;
    assert_exit(&output, 4);
    assert!(stdout(&output).starts_with("0\n1\n"), "items came first");
    let text = stderr(&output);
    assert!(
        text.contains("the stream of Feed.endless failed after"),
        "{text}"
    );
    eventually("the server drops the producer", || {
        stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    server.shutdown().await;
}

/// Items reach stdout while the stream is open (an endless stream has no last item to wait
/// for), and `| head -2` closes the pipe: the command stops quietly and the server stops
/// producing.
#[tokio::test]
async fn items_are_printed_as_they_arrive_and_a_closed_pipe_ends_the_stream() {
    let feed = FeedImpl::default();
    let stats = feed.stats.clone();
    let server = serve(feed).await;
    let addr = server.local_addr().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wirecall"))
        .args(["call", &addr, "Feed.endless", "{}", "--timeout", "60s"])
        .env_remove("WIRECALL_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut reader = BufReader::new(child.stdout.take().unwrap()).lines();
    for expected in ["0", "1"] {
        let line = tokio::time::timeout(PATIENCE, reader.next_line())
            .await
            .expect("a line while the stream is open")
            .unwrap();
        assert_eq!(line.as_deref(), Some(expected));
    }
    drop(reader);
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("the command ends once its stdout is closed")
        .unwrap();
    assert_exit(&output, 0);
    assert_eq!(stderr(&output), "");
    eventually("the server drops the producer", || {
        stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    server.shutdown().await;
}
