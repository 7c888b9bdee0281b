//! `wirecall call` and `describe` on methods that take an upload (client and bidirectional
//! streaming), against a real server serving the shared `Feed` fixture: the upload read as
//! JSON lines from standard input or `--upload FILE` and sent while it is still being read,
//! lines that are not JSON or items of the wrong type with their exit codes, and an answer
//! that comes before the end of the input.

use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt as _;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use wirecall::{RunningServer, Server, Streaming};
use wirecall_test_support::feed::{FeedImpl, FeedServer};
use wirecall_test_support::{eventually, PATIENCE};

mod output;
use output::{assert_exit, stderr, stdout};

/// A sum that lets the test see how its upload ended, which the `Feed` fixture does not.
#[wirecall::service]
trait Tally {
    /// The sum of the uploaded numbers.
    async fn total(&self, numbers: Streaming<u64>) -> u64;
}

/// How the last `total` call's upload ended, as the server saw it.
#[derive(Clone, Default)]
struct WatchedTally {
    /// The upload was read to its End.
    ended: Arc<AtomicBool>,
    /// The handler was dropped while it waited for more (the call was cancelled).
    cut_off: Arc<AtomicBool>,
}

/// Sets its flag when dropped, unless the handler got to its end first.
struct CutOffGuard(Option<Arc<AtomicBool>>);

impl Drop for CutOffGuard {
    fn drop(&mut self) {
        if let Some(cut_off) = self.0.take() {
            cut_off.store(true, Ordering::SeqCst);
        }
    }
}

impl Tally for WatchedTally {
    async fn total(&self, mut numbers: Streaming<u64>) -> u64 {
        let mut guard = CutOffGuard(Some(Arc::clone(&self.cut_off)));
        let mut total = 0;
        while let Some(n) = numbers.next().await {
            total += n;
        }
        guard.0 = None;
        self.ended.store(true, Ordering::SeqCst);
        total
    }
}

async fn serve() -> RunningServer {
    Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts")
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_wirecall"))
        .args(args)
        .env_remove("WIRECALL_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary runs")
}

/// Runs `wirecall ARGS` to its end, with `input` on standard input and then its end.
async fn wirecall(args: &[&str], input: &str) -> Output {
    let mut child = spawn(args);
    let mut stdin = child.stdin.take().unwrap();
    // The command may stop reading early (a refused line): a broken pipe here is its answer.
    let _ = stdin.write_all(input.as_bytes()).await;
    drop(stdin);
    finish(child).await
}

async fn finish(child: Child) -> Output {
    tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("the command ends")
        .unwrap()
}

/// A running command fed one line at a time, its output read one line at a time.
struct Session {
    child: Child,
    input: ChildStdin,
    output: Lines<BufReader<ChildStdout>>,
}

impl Session {
    fn start(args: &[&str]) -> Self {
        let mut child = spawn(args);
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            input,
            output,
        }
    }

    async fn send_line(&mut self, line: &str) {
        self.input
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.input.flush().await.unwrap();
    }

    /// The next line of output, waiting for it (with the shared patience).
    async fn next_line(&mut self) -> Option<String> {
        tokio::time::timeout(PATIENCE, self.output.next_line())
            .await
            .expect("a line of output")
            .unwrap()
    }
}

#[track_caller]
fn assert_stderr_has(output: &Output, expected: &str) {
    let text = stderr(output);
    assert!(text.contains(expected), "`{expected}` missing from: {text}");
}

/// A `Tick` as its JSON line.
fn tick(n: u64) -> String {
    format!(r#"{{"n":{n},"body":[]}}"#)
}

#[tokio::test]
async fn describe_marks_uploads_with_their_item_type() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let output = wirecall(&["describe", &addr, "Feed"], "").await;
    assert_exit(&output, 0);
    let text = stdout(&output);
    for line in [
        "  sum() -> u64  [upload: stream u64]\n",
        "  sum_until(limit: u64) -> Result<u64, Refused>  [upload: stream u64]\n",
        "  doubled() -> stream Tick  [upload: stream Tick]\n",
    ] {
        assert!(text.contains(line), "`{line}` missing from:\n{text}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_stream_sums_the_lines_of_standard_input() {
    let server = serve().await;
    let addr = server.local_addr().to_string();

    // Blank and whitespace-only lines are skipped; the last line needs no newline.
    let sum = wirecall(&["call", &addr, "Feed.sum"], "1\n2\n\n   \n39").await;
    assert_exit(&sum, 0);
    assert_eq!(stdout(&sum), "42\n");

    let nothing = wirecall(&["call", &addr, "Feed.sum"], "").await;
    assert_exit(&nothing, 0);
    assert_eq!(stdout(&nothing), "0\n");

    // Arguments beside the upload; a `Result` reply is printed as a unary call's.
    let until = wirecall(
        &["call", &addr, "Feed.sum_until", r#"{"limit":100}"#],
        "10\n20\n30\n",
    )
    .await;
    assert_exit(&until, 0);
    assert_eq!(stdout(&until), "60\n");
    server.shutdown().await;
}

#[tokio::test]
async fn an_upload_is_read_from_a_file_and_the_arguments_from_standard_input() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wirecall-cli-upload-{}.jsonl", std::process::id()));
    std::fs::write(&path, "5\n6\n7\n").unwrap();
    let path_text = path.to_str().unwrap();

    let output = wirecall(
        &["call", &addr, "Feed.sum_until", "--upload", path_text],
        r#"{"limit":100}"#,
    )
    .await;
    let _ = std::fs::remove_file(&path);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "18\n");

    let missing = wirecall(
        &[
            "call",
            &addr,
            "Feed.sum",
            "--upload",
            "/no/such/upload.jsonl",
        ],
        "",
    )
    .await;
    assert_exit(&missing, 1);
    assert_stderr_has(&missing, "cannot open --upload /no/such/upload.jsonl");
    server.shutdown().await;
}

#[tokio::test]
async fn a_bidirectional_stream_prints_each_item_as_one_json_line() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let input = [tick(1), tick(2), tick(5)].join("\n");
    let output = wirecall(&["call", &addr, "Feed.doubled"], &input).await;
    assert_exit(&output, 0);
    let numbers: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["n"].clone())
        .collect();
    assert_eq!(numbers, [2, 4, 10]);
    server.shutdown().await;
}

/// Each doubled tick is printed before the next line is even written, so items flow both
/// ways while the input is open; the end of the input then ends the call.
#[tokio::test]
async fn a_bidirectional_stream_answers_each_line_before_the_input_ends() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let mut session = Session::start(&["call", &addr, "Feed.doubled", "--timeout", "60s"]);
    for n in [1, 2, 3] {
        session.send_line(&tick(n)).await;
        let line = session.next_line().await.expect("a line per tick");
        let item: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(item["n"], n * 2, "{line}");
    }
    drop(session.input);
    assert_eq!(session.output.next_line().await.unwrap(), None);
    let output = finish(session.child).await;
    assert_exit(&output, 0);
    server.shutdown().await;
}

/// A line that is not JSON cancels the call instead of ending the upload, so the server does
/// not answer for the lines before it: nothing is printed.
#[tokio::test]
async fn a_line_that_is_not_json_ends_the_call_naming_its_line() {
    let server = serve().await;
    let addr = server.local_addr().to_string();

    let sum = wirecall(&["call", &addr, "Feed.sum"], "1\n\nseven\n4\n").await;
    assert_exit(&sum, 1);
    assert_eq!(stdout(&sum), "", "no total for a part of the upload");
    assert_stderr_has(
        &sum,
        "line 3 of standard input is not JSON (expected value at column 1); the upload of \
         Feed.sum takes one JSON value per line, each a u64",
    );

    let doubled = wirecall(
        &["call", &addr, "Feed.doubled"],
        &format!("{}\n{{\"n\":2,\n", tick(1)),
    )
    .await;
    assert_exit(&doubled, 1);
    assert_stderr_has(&doubled, "line 2 of standard input is not JSON");
    assert_stderr_has(&doubled, "each a Tick");
    server.shutdown().await;
}

/// End to end, the server sees the call cut off while it waits for more, never the upload's
/// End: a total for part of the input would be a wrong answer, not an error. (The unit tests
/// of `upload.rs` pin that the items stop without ending; here the process's exit may race
/// an End out of the picture, so this test checks the outcome, not the mechanism.)
#[tokio::test]
async fn a_line_that_is_not_json_cancels_the_call_instead_of_ending_the_upload() {
    let tally = WatchedTally::default();
    let server = Server::builder()
        .serve(TallyServer::new(tally.clone()))
        .bind("127.0.0.1:0")
        .await
        .expect("server starts");
    let addr = server.local_addr().to_string();
    let output = wirecall(
        &["call", &addr, "Tally.total"],
        "1
2
seven
",
    )
    .await;
    assert_exit(&output, 1);
    assert_stderr_has(&output, "line 3 of standard input is not JSON");
    eventually("the server drops the handler", || {
        tally.cut_off.load(Ordering::SeqCst)
    })
    .await;
    assert!(
        !tally.ended.load(Ordering::SeqCst),
        "the upload was ended, not cancelled"
    );
    server.shutdown().await;
}

/// JSON of the wrong type reaches the server, which refuses it: the call fails with its
/// `BadRequest` and the reason, as any call the server refuses.
#[tokio::test]
async fn an_item_of_the_wrong_type_is_refused_by_the_server() {
    let server = serve().await;
    let addr = server.local_addr().to_string();

    let sum = wirecall(&["call", &addr, "Feed.sum"], "1\n\"seven\"\n").await;
    assert_exit(&sum, 4);
    assert_eq!(stdout(&sum), "", "no total for a part of the upload");
    assert_stderr_has(&sum, "error BadRequest (code 2)");
    assert_stderr_has(&sum, "an upload item did not decode");
    assert_stderr_has(&sum, "expected u64");

    let doubled = wirecall(&["call", &addr, "Feed.doubled"], r#"{"n":"one","body":[]}"#).await;
    assert_exit(&doubled, 4);
    assert_stderr_has(
        &doubled,
        "the stream of Feed.doubled failed before its first item: error BadRequest (code 2)",
    );
    assert_stderr_has(&doubled, "an upload item did not decode");
    server.shutdown().await;
}

/// The server answers `sum_until` as soon as the sum passes the limit: the command prints
/// the answer and ends although its input is still open (and nothing more will come).
#[tokio::test]
async fn an_answer_before_the_end_of_the_input_ends_the_command() {
    let server = serve().await;
    let addr = server.local_addr().to_string();
    let mut session = Session::start(&[
        "call",
        &addr,
        "Feed.sum_until",
        r#"{"limit":10}"#,
        "--timeout",
        "60s",
    ]);
    session.send_line("7").await;
    session.send_line("8").await;
    let Session { child, input, .. } = session;
    let output = finish(child).await;
    drop(input);
    assert_exit(&output, 5);
    assert_stderr_has(&output, r#""reason": "the sum passed 10""#);
    assert_stderr_has(&output, "Feed.sum_until returned an error");
    server.shutdown().await;
}

#[tokio::test]
async fn standard_input_carries_either_the_upload_or_the_arguments() {
    let server = serve().await;
    let addr = server.local_addr().to_string();

    let both = wirecall(&["call", &addr, "Feed.sum_until", "-"], "1\n").await;
    assert_exit(&both, 1);
    assert_stderr_has(
        &both,
        "standard input carries the upload of Feed.sum_until, so it cannot carry the arguments",
    );

    let no_upload = wirecall(
        &[
            "call",
            &addr,
            "Feed.add",
            r#"{"a":1,"b":2}"#,
            "--upload",
            "-",
        ],
        "",
    )
    .await;
    assert_exit(&no_upload, 1);
    assert_stderr_has(&no_upload, "Feed.add takes no upload; drop `--upload`");

    // `bench` reads an upload by the same rules.
    let bench = wirecall(&["bench", &addr, "Feed.sum_until", "-"], "1\n").await;
    assert_exit(&bench, 1);
    assert_stderr_has(
        &bench,
        "standard input carries the upload of Feed.sum_until, so it cannot carry the arguments",
    );
    server.shutdown().await;
}
