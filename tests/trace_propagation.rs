//! Trace context propagation: a client span and the server span of the same call, and the
//! calls a handler makes in turn, share one W3C trace id, recorded on the `wirecall.call`
//! spans that any tracing subscriber sees.

use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use wirecall::{CallContext, Channel, Server};

/// The fields of one `wirecall.call` span.
#[derive(Clone, Debug, Default)]
struct CallSpan {
    side: String,
    method: String,
    trace_id: Option<String>,
    span_id: Option<String>,
}

impl Visit for CallSpan {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "side" => self.side = value.to_owned(),
            "method" => self.method = value.to_owned(),
            "trace_id" => self.trace_id = Some(value.to_owned()),
            "span_id" => self.span_id = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}").trim_matches('"').to_owned();
        self.record_str(field, &text);
    }
}

/// Keeps every `wirecall.call` span it sees.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<CallSpan>>>);

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        if attrs.metadata().name() == "wirecall.call" {
            let mut span = CallSpan::default();
            attrs.record(&mut span);
            self.0.lock().unwrap().push(span);
        }
    }
}

#[wirecall::service]
trait Relay {
    /// Calls itself `depth` more times through a client made inside the handler's process.
    async fn hop(&self, depth: u32) -> Option<String>;
}

struct RelayImpl {
    downstream: Arc<OnceLock<Channel>>,
}

impl Relay for RelayImpl {
    async fn hop(&self, depth: u32) -> Option<String> {
        if depth > 0 {
            let channel = self
                .downstream
                .get()
                .expect("set before the first call")
                .clone();
            RelayClient::new(channel).hop(depth - 1).await.unwrap();
        }
        CallContext::with_current(|call| call.trace().map(|t| t.trace_id_hex())).flatten()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_span_and_its_server_spans_share_one_trace() {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(recorder.clone()))
        .unwrap();

    let downstream = Arc::new(OnceLock::new());
    let server = Server::builder()
        .serve(RelayServer::new(RelayImpl {
            downstream: Arc::clone(&downstream),
        }))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    // The handler's own calls: no `trace(true)`, they join the trace of the call they serve.
    downstream
        .set(Channel::connect(server.local_addr()).await.unwrap())
        .unwrap();

    let traced = Channel::builder()
        .trace(true)
        .connect(server.local_addr())
        .await
        .unwrap();
    let seen_by_handler = RelayClient::new(traced).hop(1).await.unwrap();

    let spans = recorder.0.lock().unwrap().clone();
    let calls: Vec<&CallSpan> = spans.iter().filter(|s| s.trace_id.is_some()).collect();
    assert_eq!(
        calls.len(),
        4,
        "two calls, each seen by both sides: {spans:#?}"
    );
    let trace_id = calls[0].trace_id.clone().unwrap();
    assert_eq!(trace_id.len(), 32);
    assert!(
        calls
            .iter()
            .all(|s| s.trace_id.as_deref() == Some(trace_id.as_str())),
        "one trace: {calls:#?}"
    );
    assert_eq!(seen_by_handler.as_deref(), Some(trace_id.as_str()));
    let mut span_ids: Vec<&str> = calls.iter().filter_map(|s| s.span_id.as_deref()).collect();
    span_ids.sort_unstable();
    span_ids.dedup();
    assert_eq!(span_ids.len(), 4, "every span has its own id: {calls:#?}");
    assert_eq!(
        calls.iter().filter(|s| s.side == "server").count(),
        2,
        "{calls:#?}"
    );

    // A call outside any trace, on a channel without `trace(true)`, starts none.
    let before = recorder.0.lock().unwrap().len();
    let plain = RelayClient::new(Channel::connect(server.local_addr()).await.unwrap());
    assert_eq!(plain.hop(0).await.unwrap(), None);
    let spans = recorder.0.lock().unwrap();
    assert!(spans[before..].iter().all(|s| s.trace_id.is_none()));
    assert!(spans[before..].iter().any(|s| s.method == "hop"));
}
