"""The sender's side of a stream's credit: how many more Items the server allows the client to
send on an upload (Credit (flow control)).

The server grants credit with Credit frames; the client spends one per Item it sends and waits,
without holding up the rest of the connection, while it has none. The count kept here is the
client's view of the outstanding credit: it can only be lower than the server's (an Item in
flight is spent here and not yet received there), so checking the limit on it never refuses an
honest server.
"""

import asyncio
from typing import Optional

from . import errors
from .wire import MAX_STREAM_CREDIT


class SendCredit:
    """The Items the client may still send on one stream."""

    def __init__(self, request_id: int):
        self._request_id = request_id
        self._available = 0
        #: Wakes the upload's sender waiting for credit.
        self._waiter: "Optional[asyncio.Future[None]]" = None

    @property
    def available(self) -> int:
        """Granted and not yet spent."""
        return self._available

    def grant(self, granted: int) -> None:
        """A Credit frame's grant (already checked to be 1 or more); `ProtocolError` when it
        takes the outstanding credit past the protocol's limit."""
        total = self._available + granted
        if total > MAX_STREAM_CREDIT:
            raise errors.ProtocolError(
                f"a Credit frame took stream {self._request_id}'s outstanding credit to {total}, "
                f"over the limit of {MAX_STREAM_CREDIT}"
            )
        self._available = total
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait(self) -> None:
        """Returns once there is credit for one Item. The stream's end stops the waiting task
        (its sender is cancelled), so there is no end to wait for here."""
        while self._available == 0:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def spend(self) -> None:
        """One Item is going out."""
        if self._available == 0:
            raise RuntimeError(f"an Item on stream {self._request_id} without credit")
        self._available -= 1
