//! A stream call's `tracing` span on the client: opened with the stream, entered while it is
//! polled, and closed when it is dropped, with the items it yielded and how it ended.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use wirecall::{method_id, Channel, Server};
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer};
use wirecall_test_support::{eventually, quiet_panics_starting_with};

/// The fields of one client `wirecall.call` span of a stream, as last recorded.
#[derive(Clone, Debug, Default)]
struct StreamSpan {
    fields: HashMap<String, String>,
    closed: bool,
}

impl Visit for StreamSpan {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}").trim_matches('"').to_owned();
        self.fields.insert(field.name().to_owned(), text);
    }
}

/// How a span names a method of `Feed`: by its id.
fn feed_method(name: &str) -> String {
    method_id("Feed", name).to_string()
}

/// Keeps the client's stream spans, by span id.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<HashMap<u64, StreamSpan>>>);

impl Recorder {
    fn client_stream_of(&self, method: &str) -> Option<StreamSpan> {
        let method = feed_method(method);
        self.client_streams()
            .into_iter()
            .find(|span| span.fields.get("method") == Some(&method))
    }

    fn client_streams(&self) -> Vec<StreamSpan> {
        let spans = self.0.lock().unwrap();
        spans
            .values()
            .filter(|span| {
                span.fields.get("side").map(String::as_str) == Some("client")
                    && span.fields.get("stream").map(String::as_str) == Some("true")
            })
            .cloned()
            .collect()
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        if attrs.metadata().name() == "wirecall.call" {
            let mut span = StreamSpan::default();
            attrs.record(&mut span);
            self.0.lock().unwrap().insert(id.into_u64(), span);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(span) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(span);
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        if let Some(span) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            span.closed = true;
        }
    }
}

#[tokio::test]
async fn a_client_stream_span_covers_the_stream_and_records_how_it_ended() {
    let recorder = Recorder::default();
    let _subscriber =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let feed = FeedClient::new(Channel::connect(server.local_addr()).await.unwrap());

    // Read to its end: 5 items, then `ok`, and the span closes once the stream is dropped.
    let mut numbers = feed.numbers(5).await.unwrap();
    let mut taken = 0;
    while let Some(item) = numbers.next().await {
        item.unwrap();
        taken += 1;
    }
    assert_eq!(taken, 5);
    let spans = recorder.client_streams();
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(spans[0].fields.get("method"), Some(&feed_method("numbers")));
    assert_eq!(spans[0].fields.get("items").map(String::as_str), Some("5"));
    assert_eq!(
        spans[0].fields.get("outcome").map(String::as_str),
        Some("ok")
    );
    assert!(!spans[0].closed, "the stream is still held: {spans:#?}");
    drop(numbers);
    assert!(recorder.client_streams()[0].closed);

    // Dropped half-way: `cancelled`, with the items taken so far.
    let mut endless = feed.endless().await.unwrap();
    for _ in 0..3 {
        endless.next().await.unwrap().unwrap();
    }
    drop(endless);
    eventually("the endless stream's span", || {
        recorder.client_streams().len() == 2
    })
    .await;
    let cancelled = recorder
        .client_stream_of("endless")
        .expect("the endless stream's span");
    assert_eq!(
        cancelled.fields.get("outcome").map(String::as_str),
        Some("cancelled")
    );
    assert_eq!(cancelled.fields.get("items").map(String::as_str), Some("3"));
    assert!(cancelled.closed);

    // Ended by the server's error: `error`, and the error itself.
    quiet_panics_starting_with("feed panicked");
    let mut failing = feed.panics_after(2).await.unwrap();
    let mut last = None;
    while let Some(item) = failing.next().await {
        last = Some(item);
    }
    assert!(matches!(last, Some(Err(_))), "{last:?}");
    let failed = recorder
        .client_stream_of("panics_after")
        .expect("the failing stream's span");
    assert_eq!(
        failed.fields.get("outcome").map(String::as_str),
        Some("error")
    );
    assert_eq!(failed.fields.get("items").map(String::as_str), Some("2"));
    assert!(
        failed
            .fields
            .get("error")
            .is_some_and(|e| e.contains("panic")),
        "{failed:#?}"
    );
}
