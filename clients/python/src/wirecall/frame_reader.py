"""Whole frames out of the connection's byte stream, read a chunk at a time.

Reading each frame's header and payload with their own `readexactly` cost two awaits and two
buffer copies per frame, the largest share of a small stream item's cost in this client. Here
the socket is read in chunks of up to `CHUNK` bytes, and every frame a chunk holds is taken
from it without waiting. The header is looked at before its payload is waited for, so that the
caller checks the length (against `max_frame_length`) before it decides how much is buffered.
"""

import asyncio
from typing import Optional

from .wire import FRAME_HEADER, LENGTH_FIELD, FrameHeader

#: How much one read asks the socket for: large enough for many small frames at once.
CHUNK = 256 * 1024

_LENGTH_FIELD = LENGTH_FIELD.size


class FrameReader:
    """Frames from `reader`: `peek_header`, then `holds`/`fill` until the frame is in, `take`."""

    def __init__(self, reader: asyncio.StreamReader):
        self._reader = reader
        self._buffer = bytearray()
        # Where the next frame starts in `_buffer`; consumed bytes are dropped at the next fill.
        self._start = 0

    def peek_length(self) -> Optional[int]:
        """The next frame's length field, or None until its 4 bytes are buffered."""
        if len(self._buffer) - self._start < _LENGTH_FIELD:
            return None
        length: int = LENGTH_FIELD.unpack_from(self._buffer, self._start)[0]
        return length

    def peek_header(self) -> Optional[FrameHeader]:
        """The next frame's header, or None until its 26 bytes are buffered; consumes nothing."""
        if len(self._buffer) - self._start < FRAME_HEADER.size:
            return None
        return FrameHeader._make(FRAME_HEADER.unpack_from(self._buffer, self._start))

    def holds(self, header: FrameHeader) -> bool:
        """Whether the whole frame `header` starts is buffered."""
        return len(self._buffer) - self._start >= _LENGTH_FIELD + header.length

    def take(self, header: FrameHeader) -> bytes:
        """The payload of the frame `header` starts (buffered: see `holds`), consuming it."""
        payload_start = self._start + FRAME_HEADER.size
        self._start += _LENGTH_FIELD + header.length
        return bytes(self._buffer[payload_start : self._start])

    async def fill(self) -> None:
        """Reads what the socket has (at least one byte), or raises `IncompleteReadError` at
        its end."""
        if self._start:
            del self._buffer[: self._start]
            self._start = 0
        chunk = await self._reader.read(CHUNK)
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(self._buffer), None)
        self._buffer += chunk
