"""The client hello and the server's answer (Handshake)."""

import asyncio
from typing import Sequence

from . import errors
from .codecs import CODECS_BY_ID, Codec, codec_name
from .wire import (
    MAGIC,
    SERVER_HELLO_HEAD,
    HelloStatus,
    ServerHello,
    client_hello,
)


#: The first byte of a TLS alert or handshake record: a TLS server answering a plain hello.
TLS_RECORD_TYPES = (0x15, 0x16)


def not_wirecall(answer: bytes) -> errors.NotWirecall:
    if answer[:1] and answer[0] in TLS_RECORD_TYPES:
        return errors.NotWirecall("the server speaks TLS: connect with TLS (tls=True or tls_ca=...)")
    return errors.NotWirecall(f"the server's answer does not start with WCAL: {answer[:16]!r}")


async def read_server_hello(reader: asyncio.StreamReader) -> ServerHello:
    try:
        head = await reader.readexactly(SERVER_HELLO_HEAD.size)
    except asyncio.IncompleteReadError as closed:
        # The magic is checked first even in a short answer, so that a non-wirecall server is
        # reported as such rather than as a closed connection.
        if closed.partial and not MAGIC.startswith(closed.partial[: len(MAGIC)]):
            raise not_wirecall(closed.partial) from None
        raise errors.ConnectionClosed("the server closed the connection during the handshake") from None
    magic, version, status, codec, count = SERVER_HELLO_HEAD.unpack(head)
    if magic != MAGIC:
        raise not_wirecall(head)
    try:
        supported = tuple(await reader.readexactly(count))
    except asyncio.IncompleteReadError:
        raise errors.ProtocolError("the server hello ends before its codec list") from None
    return ServerHello(magic, version, status, codec, supported)


async def negotiate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    offered: Sequence[Codec],
    token: bytes,
) -> Codec:
    """Sends the hello offering `offered` (most preferred first) and returns the chosen codec,
    or raises the refusal as a `NegotiationError`."""
    writer.write(client_hello([codec.id for codec in offered], token))
    await writer.drain()
    hello = await read_server_hello(reader)
    offered_names = [codec.name for codec in offered]
    supported_names = [codec_name(codec_id) for codec_id in hello.supported]
    if hello.status != HelloStatus.ACCEPTED:
        try:
            name = HelloStatus(hello.status).name
        except ValueError:
            name = f"unknown status {hello.status}"
        refusal = errors.REFUSAL_CLASSES.get(hello.status, errors.NegotiationRefused)
        raise refusal(
            f"the server refused the connection: {name} (we offered {offered_names}, "
            f"the server allows {supported_names or 'nothing it reveals'})",
            offered=offered_names,
            supported=supported_names,
            status=hello.status,
        )
    # The server must choose one of ours; anything else is a broken server.
    chosen = CODECS_BY_ID.get(hello.codec)
    if chosen is None or chosen not in offered:
        raise errors.ProtocolError(
            f"the server chose {codec_name(hello.codec)}, which we did not offer ({offered_names})"
        )
    return chosen
