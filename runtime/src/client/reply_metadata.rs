//! Reading the metadata a server sent back with a reply, without changing the generated
//! client's method signatures: wrap the call in [`with_reply_metadata`].

use std::cell::RefCell;
use std::future::Future;

use crate::metadata::Metadata;

thread_local! {
    /// Where the reply being decoded on this thread leaves its metadata, while a
    /// `with_reply_metadata` future is polled.
    static CAPTURE: RefCell<Option<Metadata>> = const { RefCell::new(None) };
}

/// Runs `call` and returns its output with the metadata of the replies it received (merged,
/// later replies winning; empty when the server sent none or speaks protocol version 1).
///
/// ```no_run
/// # async fn f(channel: wirecall_runtime::Channel) -> Result<(), wirecall_runtime::Error> {
/// # static ECHO: wirecall_runtime::client::Method = wirecall_runtime::client::Method::new("Echo", "echo");
/// let (reply, metadata) = wirecall_runtime::client::reply_metadata::with_reply_metadata(
///     channel.call::<_, String>(&ECHO, "hi".to_owned()),
/// )
/// .await;
/// println!("{:?} served by {:?}", reply?, metadata.get("served-by"));
/// # Ok(())
/// # }
/// ```
pub async fn with_reply_metadata<F: Future>(call: F) -> (F::Output, Metadata) {
    let mut call = std::pin::pin!(call);
    let mut captured = Some(Metadata::new());
    let output = std::future::poll_fn(|cx| {
        // Our slot is current only while our call is polled, so nested captures each see
        // their own replies.
        let outer = CAPTURE.with(|slot| slot.replace(captured.take()));
        let polled = call.as_mut().poll(cx);
        captured = CAPTURE.with(|slot| slot.replace(outer));
        polled
    })
    .await;
    (output, captured.unwrap_or_default())
}

/// Hands a reply's metadata to the innermost `with_reply_metadata` being polled, if any.
pub(crate) fn deliver(metadata: Metadata) {
    CAPTURE.with(|slot| {
        if let Some(captured) = slot.borrow_mut().as_mut() {
            // Both sides checked the limits; a merge past them keeps what fits.
            let _ = captured.merge(&metadata);
        }
    });
}
