"""The client hello and the server's answer (Handshake)."""

import asyncio
from dataclasses import dataclass
from typing import Optional, Sequence

from . import errors
from .codecs import Codec, codec_name
from .compression import chosen_algorithm
from .wire import (
    COMPRESSION_VERSION,
    EXTENSIONS_LENGTH,
    MAGIC,
    MAX_EXTENSIONS_LENGTH,
    METADATA_VERSION,
    MIN_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    SERVER_HELLO_HEAD,
    HelloStatus,
    ServerHello,
    announced_max_frame_length,
    client_hello,
    decode_extensions,
)


@dataclass(frozen=True)
class Negotiated:
    """What an accepted handshake settled: the codec, the connection's protocol version, the
    largest frame the server accepts (`None`: it announced nothing), and the compression
    algorithm both sides may use (`None`: nothing is compressed)."""

    codec: Codec
    version: int
    server_max_frame_length: Optional[int]
    compression: Optional[int] = None


class RetryWithVersion(Exception):
    """The server refused our version naming an older one we speak: open a new connection and
    send a hello of `version` (Versions)."""

    def __init__(self, version: int):
        super().__init__(f"retry with protocol version {version}")
        self.version = version


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
    extensions = {}
    if version >= METADATA_VERSION:
        try:
            (length,) = EXTENSIONS_LENGTH.unpack(await reader.readexactly(EXTENSIONS_LENGTH.size))
            if length > MAX_EXTENSIONS_LENGTH:
                raise errors.ProtocolError(
                    f"the server hello's extension block is {length} bytes, over {MAX_EXTENSIONS_LENGTH}"
                )
            block = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            raise errors.ProtocolError("the server hello ends before its extension block") from None
        try:
            extensions = decode_extensions(block)
        except ValueError as bad:
            raise errors.ProtocolError(f"the server hello's extension block is malformed: {bad}") from None
    return ServerHello(magic, version, status, codec, supported, extensions)


async def negotiate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    offered: Sequence[Codec],
    token: bytes,
    *,
    version: int = PROTOCOL_VERSION,
    max_frame_length: Optional[int] = None,
    compression: Sequence[int] = (),
) -> Negotiated:
    """Sends a hello of protocol `version` offering `offered` (most preferred first),
    announcing `max_frame_length` and, from version 5 on, offering the `compression`
    algorithms; returns what was settled, or raises the refusal as a `NegotiationError`, or
    `RetryWithVersion` when an older server names a version we speak."""
    if version < COMPRESSION_VERSION:
        compression = ()
    writer.write(
        client_hello(
            [codec.id for codec in offered],
            token,
            version=version,
            max_frame_length=max_frame_length,
            compression=compression,
        )
    )
    await writer.drain()
    hello = await read_server_hello(reader)
    if (
        hello.status == HelloStatus.UNSUPPORTED_VERSION
        and MIN_PROTOCOL_VERSION <= hello.version < version
    ):
        raise RetryWithVersion(hello.version)
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
    # From the offer, not a table: a Protobuf codec carries its connection's messages.
    chosen = next((codec for codec in offered if codec.id == hello.codec), None)
    if chosen is None:
        raise errors.ProtocolError(
            f"the server chose {codec_name(hello.codec)}, which we did not offer ({offered_names})"
        )
    # The connection's version is the lower of the two sides': never above ours.
    if not MIN_PROTOCOL_VERSION <= hello.version <= version:
        raise errors.ProtocolError(
            f"the server accepted with protocol version {hello.version}; we offered {version}"
        )
    return Negotiated(
        chosen,
        hello.version,
        announced_max_frame_length(hello.extensions),
        chosen_algorithm(hello, compression),
    )
