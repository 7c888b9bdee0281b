"""Opening the byte stream: TCP, optionally TLS with ALPN ``wirecall`` (Connection life cycle)."""

import asyncio
import socket
import ssl
from typing import Optional, Tuple, Union

from .errors import TlsError

#: The ALPN protocol id both sides announce (Security chapter, TLS).
ALPN_PROTOCOL = "wirecall"

TlsOption = Union[None, bool, ssl.SSLContext]


def client_tls_context(ca_file: Optional[str] = None) -> ssl.SSLContext:
    """A context that verifies the server against `ca_file` (or the system's CAs) and offers
    ALPN ``wirecall``; TLS 1.2 or newer, as rustls requires."""
    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols([ALPN_PROTOCOL])
    return context


async def open_stream(
    host: str,
    port: int,
    *,
    tls: TlsOption = None,
    tls_ca: Optional[str] = None,
    server_name: Optional[str] = None,
) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connects; with TLS, the handshake runs before anything wirecall sends.

    TLS is on when `tls` is true or an `ssl.SSLContext`, or when `tls_ca` is given.
    `server_name` is the name expected in the server's certificate (default: `host`).
    """
    context: Optional[ssl.SSLContext] = None
    if isinstance(tls, ssl.SSLContext):
        context = tls
    elif tls or tls_ca is not None:
        context = client_tls_context(tls_ca)
    if context is None:
        reader, writer = await asyncio.open_connection(host, port)
    else:
        try:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=context, server_hostname=server_name or host
            )
        except ssl.SSLError as failed:
            raise TlsError(f"TLS with {host}:{port} failed: {failed}") from failed
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        # The Rust implementation sets TCP_NODELAY on both ends: small frames go out at once.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return reader, writer
