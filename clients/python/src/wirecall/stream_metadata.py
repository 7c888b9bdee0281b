"""A stream's reply metadata and trailers, the caller's side (protocol version 4, Stream
metadata and trailers).

A unary reply carries its metadata on its one frame; a stream's answer is many frames, so the
server may open its half with a Head frame (its **reply metadata**, before any item) and end
it with **trailers** on its End or Error frame. `StreamReplyMetadata` records both for one
stream as the connection's reader hands them over; an upload's one reply gets the two as one
set (`reply_metadata`). Below version 4 the server sends neither: the reply metadata is then
empty, and a stream that ends with the server's End or Error has empty trailers.
"""

from typing import Dict, Optional

from . import errors
from .wire import FLAG_METADATA, decode_metadata


def decode_head(request_id: int, flags: int, payload: bytes) -> Dict[str, str]:
    """A Head frame's metadata. Raises `ProtocolError` when the frame lacks the metadata flag,
    its block is malformed, or bytes follow the block: the stream fails, not the connection."""
    if not flags & FLAG_METADATA:
        raise errors.ProtocolError(f"the Head of stream {request_id} lacks the metadata flag")
    try:
        metadata, rest = decode_metadata(payload)
    except ValueError as bad:
        raise errors.ProtocolError(f"the Head of stream {request_id} is malformed: {bad}") from None
    if rest:
        raise errors.ProtocolError(
            f"the Head of stream {request_id} has {len(rest)} bytes after its metadata block"
        )
    return metadata


class StreamReplyMetadata:
    """What the server sent for one stream besides its items: its reply metadata, once its
    first frame on the stream has come, and its trailers, once it has ended the stream."""

    def __init__(self, request_id: int):
        self._request_id = request_id
        #: The Head's metadata, ``{}`` once an item or the end came first; `None` before the
        #: server's first frame on the stream.
        self.head: Optional[Dict[str, str]] = None
        #: The trailers of the server's End or Error (``{}`` when it sent none); `None` until
        #: then, and for good when the stream ended otherwise (its deadline, a Cancel, the
        #: connection's end).
        self.trailers: Optional[Dict[str, str]] = None

    def check_head_allowed(self) -> None:
        """Raises `ProtocolError`, which closes the connection, when the stream already had
        its Head or an item: a Head comes at most once, before the first item."""
        if self.head is not None:
            raise errors.ProtocolError(
                f"the server sent a Head on stream {self._request_id} after its Head or an item"
            )

    def item_arrived(self) -> None:
        """An Item came: a stream without a Head before it has empty reply metadata."""
        if self.head is None:
            self.head = {}

    def reply_metadata(self) -> Dict[str, str]:
        """The reply metadata and the trailers as one set, the trailers winning for a key in
        both: an upload's reply metadata (Stream metadata and trailers)."""
        return {**(self.head or {}), **(self.trailers or {})}
