//! [`Frame`]: one frame, decoded, with its payload as shared bytes.

use bytes::{Bytes, BytesMut};

use super::error_body::ErrorBody;
use super::header::put_header;
use crate::method::MethodId;
use crate::wire::{ErrorCode, FrameKind, FLAG_METADATA, FRAME_OVERHEAD, HEADER_LEN};

/// One decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// What the frame is for.
    pub kind: FrameKind,
    /// Correlates requests with their responses; chosen by the caller.
    pub request_id: u64,
    /// The method called (requests and notifications) or answered.
    pub method: MethodId,
    /// Milliseconds the caller will wait for this request; 0 means no deadline.
    pub deadline_ms: u32,
    /// The flags byte: 0, or [`FLAG_METADATA`](crate::wire::FLAG_METADATA).
    pub flags: u8,
    /// The codec-encoded body (or an error body, see [`ErrorBody`]), after the metadata
    /// block when [`FLAG_METADATA`](crate::wire::FLAG_METADATA) is set.
    pub payload: Bytes,
}

impl Frame {
    /// A frame without payload.
    pub fn control(kind: FrameKind, request_id: u64) -> Self {
        Self {
            kind,
            request_id,
            method: MethodId::new(0),
            deadline_ms: 0,
            flags: 0,
            payload: Bytes::new(),
        }
    }

    /// An `Error` frame for `request_id` (0 for the whole connection).
    pub fn error(request_id: u64, method: MethodId, code: ErrorCode, message: &str) -> Self {
        Self {
            kind: FrameKind::Error,
            request_id,
            method,
            deadline_ms: 0,
            flags: 0,
            payload: ErrorBody::encode(code, message),
        }
    }

    /// This frame with `metadata` in front of its payload and [`FLAG_METADATA`] set; as it
    /// was when `metadata` is empty.
    pub fn with_metadata(mut self, metadata: &crate::Metadata) -> Self {
        if metadata.is_empty() {
            return self;
        }
        let mut payload = BytesMut::with_capacity(metadata.encoded_len() + self.payload.len());
        metadata.encode(&mut payload);
        payload.extend_from_slice(&self.payload);
        self.payload = payload.freeze();
        self.flags |= FLAG_METADATA;
        self
    }

    /// The whole frame as wire bytes.
    pub fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(FRAME_OVERHEAD + self.payload.len());
        put_header(
            &mut buf,
            HEADER_LEN + self.payload.len(),
            self.kind,
            self.flags,
            self.request_id,
            self.method,
            self.deadline_ms,
        );
        buf.extend_from_slice(&self.payload);
        buf.freeze()
    }
}
