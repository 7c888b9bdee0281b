//! The tests of `writer.rs`: frames in order through a small pipe, a peer that stops reading,
//! the stream lane's limit and its one-at-a-time wake-ups, and batches split mid-frame.

use super::*;
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn writes_every_frame_in_order_through_a_small_pipe_then_closes() {
    // A 7-byte pipe forces partial writes and hand-offs to the writer.
    let (client, mut server) = tokio::io::duplex(7);
    let (sink, writer) = FrameSink::new(Box::pin(client));
    let writer = tokio::spawn(writer.run(None));
    let reader = tokio::spawn(async move {
        let mut out = String::new();
        server.read_to_string(&mut out).await.unwrap();
        out
    });
    for chunk in ["ab", "", "cdefgh", "ijklmnopq"] {
        sink.send(Bytes::from(chunk), Delivery::Now).await.unwrap();
    }
    sink.send_now(Bytes::from_static(b"rs"));
    sink.close();
    assert_eq!(reader.await.unwrap(), "abcdefghijklmnopqrs");
    writer.await.unwrap().unwrap();
    assert!(sink
        .send(Bytes::from_static(b"x"), Delivery::Background)
        .await
        .is_err());
}

#[tokio::test]
async fn a_peer_that_does_not_read_fails_the_writer_after_the_stall_limit() {
    let (client, _server) = tokio::io::duplex(16);
    let (sink, writer) = FrameSink::new(Box::pin(client));
    let writer = tokio::spawn(writer.run(Some(Duration::from_millis(50))));
    sink.send(Bytes::from(vec![0u8; 64]), Delivery::Background)
        .await
        .unwrap();
    let err = writer.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    assert!(sink
        .send(Bytes::from_static(b"x"), Delivery::Background)
        .await
        .is_err());
}

#[tokio::test]
async fn a_stream_waits_where_a_reply_still_gets_into_the_queue() {
    // Nobody reads the pipe and no writer runs: what is queued stays queued.
    let (client, _server) = tokio::io::duplex(16);
    let (sink, _writer) = FrameSink::new(Box::pin(client));
    let items = || Bytes::from(vec![0u8; MAX_QUEUED_STREAM_BYTES / 2 + 1]);
    sink.send_stream_items(items()).await.unwrap();
    let second = sink.send_stream_items(items());
    tokio::pin!(second);
    assert!(
        futures::poll!(second.as_mut()).is_pending(),
        "a stream's items wait past their share of the queue"
    );
    let reply = sink.send(items(), Delivery::Background);
    tokio::pin!(reply);
    assert!(
        futures::poll!(reply.as_mut()).is_ready(),
        "a reply is queued up to the whole queue's limit"
    );
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct CountingWaker(std::sync::atomic::AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test]
async fn waiting_streams_are_woken_one_at_a_time_and_all_get_through() {
    const STREAMS: usize = 50;
    let batch = MAX_QUEUED_STREAM_BYTES / 2 + 1;
    let (client, mut server) = tokio::io::duplex(64 * 1024);
    let (sink, writer) = FrameSink::new(Box::pin(client));
    // The writer is not running yet: the first batch fills the streams' share.
    sink.send_stream_items(Bytes::from(vec![1u8; batch]))
        .await
        .unwrap();
    let waker = Arc::new(CountingWaker::default());
    let mut waiting: Vec<_> = (0..STREAMS)
        .map(|_| Box::pin(sink.send_stream_items(Bytes::from(vec![2u8; batch]))))
        .collect();
    let counting = Waker::from(Arc::clone(&waker));
    let mut cx = Context::from_waker(&counting);
    for send in &mut waiting {
        assert!(send.as_mut().poll(&mut cx).is_pending());
    }
    let writer = tokio::spawn(writer.run(None));
    let total = (STREAMS + 1) * batch;
    let reader = tokio::spawn(async move {
        let mut read = vec![0u8; total];
        server.read_exact(&mut read).await.unwrap();
    });
    // The writer takes the first batch: one stream is woken, not all fifty.
    tokio::time::timeout(Duration::from_secs(10), async {
        while waker.0.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("taking the queue wakes a waiting stream");
    assert_eq!(waker.0.load(Ordering::Relaxed), 1);
    // Every stream gets in, each woken by the one before it or by the writer. (Each is
    // polled when woken, as its own task would be.)
    let all = futures::future::join_all(waiting);
    let sent = tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .expect("every waiting stream is woken in turn");
    assert!(sent.iter().all(Result::is_ok));
    tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("every batch is written")
        .unwrap();
    sink.close();
    writer.await.unwrap().unwrap();
}

#[test]
fn batch_advance_crosses_frame_boundaries() {
    let mut batch = FrameBatch::default();
    batch.push(Bytes::from_static(b"abc"));
    batch.push(Bytes::from_static(b""));
    batch.push(Bytes::from_static(b"de"));
    batch.advance(3);
    assert_eq!(batch.chunk(), b"de");
    batch.advance(1);
    assert_eq!(batch.chunk(), b"e");
    assert_eq!(batch.remaining(), 1);
}
