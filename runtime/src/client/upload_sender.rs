//! What a stream's slot in the pending table keeps of its upload: the credit the server
//! grants, and the signal that stops the task sending the upload (`upload.rs`).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::stream::credit::SendCredit;

/// What a stream's slot keeps of its upload: the credit the server grants (its `Credit`
/// frames add to it), and the signal that stops the sending task.
pub(super) struct UploadSender {
    pub(super) credit: Arc<SendCredit>,
    pub(super) stop: CancellationToken,
}

impl UploadSender {
    pub(super) fn new() -> Self {
        Self {
            credit: Arc::new(SendCredit::default()),
            stop: CancellationToken::new(),
        }
    }
}

impl Drop for UploadSender {
    fn drop(&mut self) {
        // The stream's slot is gone: nobody waits for the upload any more.
        self.stop.cancel();
    }
}
