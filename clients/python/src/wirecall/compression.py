"""Negotiated compression (Compression (version 5)): what the hello offers, what the server's
hello may choose, and the compressed payloads of a connection's frames, both ways.

A compressed frame sets flag 0x02, and its payload is the uncompressed length (u32 BE) then one
zstd frame. zstd comes from the optional `zstandard` package (the `zstd` extra): without it
the client offers nothing, and a server never compresses what it sends to us.

Everything read from the peer is bounded before it sizes anything: the uncompressed length is
checked against our frame limit first, and the zstd frame may not produce more than it.
"""

import struct
from typing import Dict, Optional, Sequence, Tuple

from . import errors
from .wire import (
    COMPRESSIBLE_KINDS,
    COMPRESSION_VERSION,
    EXTENSION_COMPRESSION,
    FLAG_COMPRESSED,
    HEADER_AFTER_LENGTH,
    FrameHeader,
    FrameKind,
    ServerHello,
)

#: Algorithm id 1, the only one the protocol defines: zstd (RFC 8878).
ALGORITHM_ZSTD = 1
ALGORITHM_NAMES: Dict[int, str] = {ALGORITHM_ZSTD: "zstd"}

#: Payloads shorter than this go uncompressed: the zstd frame's own overhead eats the savings.
#: As the Rust implementation's default (`Compression::min_size`).
DEFAULT_COMPRESSION_MIN_SIZE = 1024
#: zstd's fastest regular level, the Rust default: on text it compresses about as well as 3, faster.
ZSTD_LEVEL = 1

#: A compressed payload starts with its uncompressed length.
UNCOMPRESSED_LENGTH = struct.Struct(">I")
#: The magic number every zstd frame starts with (RFC 8878, section 3.1.1); skippable frames
#: and anything else are not "one zstd frame".
ZSTD_MAGIC = bytes.fromhex("28 b5 2f fd")

#: After this many payloads in a row that did not shrink enough, only one payload in
#: `RETRY_EVERY` is tried, then one in twice as many after each try that fails again, up to
#: one in `RETRY_AT_LEAST_EVERY`, until one shrinks: incompressible traffic then costs little
#: more than those attempts (as the Rust implementation does).
MISSES_BEFORE_BACKING_OFF = 4
RETRY_EVERY = 32
RETRY_AT_LEAST_EVERY = 1024


def algorithm_name(algorithm: Optional[int]) -> Optional[str]:
    """``"zstd"`` for id 1; `None` for no compression."""
    if algorithm is None:
        return None
    return ALGORITHM_NAMES.get(algorithm, f"algorithm {algorithm}")


def zstd_available() -> bool:
    """Whether the `zstandard` package can be imported (the `zstd` extra is installed)."""
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return False
    return True


def offered_algorithms(compression: Optional[bool]) -> Tuple[int, ...]:
    """The algorithms the hello offers for the `compression` option: `None` offers zstd when
    `zstandard` is installed, `False` nothing, and `True` zstd, raising `ImportError` at once
    when `zstandard` is missing (as asking for Protobuf without `protobuf` does)."""
    if compression is False:
        return ()
    if zstd_available():
        return (ALGORITHM_ZSTD,)
    if compression is True:
        raise ImportError(
            "compression=True needs the zstandard package: pip install 'wirecall[zstd]' "
            "(or leave compression at its default, which compresses only when zstandard is installed)"
        )
    return ()


def check_compression_min_size(min_size: int) -> None:
    """Raises `ValueError` unless `min_size` is a number of bytes, 0 or more."""
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 0:
        raise ValueError(f"compression_min_size is a number of bytes, 0 or more, not {min_size!r}")


def chosen_algorithm(hello: ServerHello, offered: Sequence[int]) -> Optional[int]:
    """The algorithm an `Accepted` server hello chose, or `None` when it sent no `compression`
    extension (then nothing is compressed either way).

    Raises `ProtocolError` for a broken server: an empty choice or more than one id, an
    algorithm we did not offer, or a choice on a connection below version 5.
    """
    value = hello.extensions.get(EXTENSION_COMPRESSION)
    if value is None:
        return None
    if hello.version < COMPRESSION_VERSION:
        raise errors.ProtocolError(
            f"the server chose compression on a version {hello.version} connection; "
            f"compression exists from version {COMPRESSION_VERSION} on"
        )
    if len(value) != 1:
        raise errors.ProtocolError(
            f"the server's compression extension names {len(value)} algorithms {list(value)}; "
            "it must name exactly the one it chose"
        )
    algorithm = value[0]
    if algorithm not in offered:
        raise errors.ProtocolError(
            f"the server chose compression algorithm {algorithm}, which we did not offer "
            f"({list(offered) or 'we offered none'})"
        )
    return algorithm


def refuse_compressed_flag(kind: FrameKind, algorithm: Optional[int]) -> None:
    """Raises the `ProtocolError` that names why a frame of `kind` may not set the compressed
    flag here, if it may not: no algorithm was negotiated, or the kind carries no codec payload."""
    if algorithm is None:
        raise _not_negotiated(kind)
    if kind not in COMPRESSIBLE_KINDS:
        raise errors.ProtocolError(
            f"a compressed {kind.name} frame: only Request, Response, Notify, Open and Item frames may be compressed"
        )


def _not_negotiated(kind: FrameKind) -> errors.ProtocolError:
    return errors.ProtocolError(f"a compressed {kind.name} frame on a connection that negotiated no compression")


class FrameCompression:
    """A connection's compression: this one compresses nothing, for a connection that
    negotiated no algorithm; `compression_for` makes the right one."""

    algorithm: Optional[int] = None

    def compress(self, flags: int, payload: bytes) -> Tuple[int, bytes]:
        """The flags and payload to send for an outgoing Request, Notify, Open or Item:
        compressed when it pays, else as given."""
        return flags, payload

    def decompress(self, header: FrameHeader, payload: bytes) -> Tuple[FrameHeader, bytes]:
        """A received compressed frame as if it had arrived uncompressed, flag 0x02 cleared.
        Raises `ProtocolError` for any violation; the connection is then lost."""
        raise _not_negotiated(FrameKind(header.kind))


class ZstdFrameCompression(FrameCompression):
    """zstd both ways, for a connection that negotiated algorithm 1.

    `max_frame_length` is our receive limit: the uncompressed length of a frame we receive
    must fit it. `min_size` is the smallest payload worth compressing."""

    algorithm = ALGORITHM_ZSTD

    def __init__(self, max_frame_length: int, min_size: int = DEFAULT_COMPRESSION_MIN_SIZE):
        import zstandard

        self._compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        self._decompressor = zstandard.ZstdDecompressor()
        self._max_frame_length = max_frame_length
        self._min_size = min_size
        # Payloads in a row that did not shrink enough, and those skipped since backing off.
        self._misses = 0
        self._skipped = 0

    def compress(self, flags: int, payload: bytes) -> Tuple[int, bytes]:
        if len(payload) < self._min_size or self._backing_off():
            return flags, payload
        compressed: bytes = UNCOMPRESSED_LENGTH.pack(len(payload)) + self._compressor.compress(payload)
        # Sent compressed only when it saves at least 1/16 of the payload: below that the
        # receiver's work buys too little.
        if 16 * (len(payload) - len(compressed)) < len(payload):
            self._misses += 1
            return flags, payload
        self._misses = 0
        return flags | FLAG_COMPRESSED, compressed

    def _backing_off(self) -> bool:
        """Whether to skip this payload: after a run of misses, all but one in `RETRY_EVERY`,
        doubling after each further miss up to `RETRY_AT_LEAST_EVERY`."""
        if self._misses < MISSES_BEFORE_BACKING_OFF:
            return False
        failed_tries = min(self._misses - MISSES_BEFORE_BACKING_OFF, 5)
        interval = min(RETRY_EVERY << failed_tries, RETRY_AT_LEAST_EVERY)
        self._skipped += 1
        if self._skipped < interval:
            return True
        self._skipped = 0
        return False

    def decompress(self, header: FrameHeader, payload: bytes) -> Tuple[FrameHeader, bytes]:
        kind = FrameKind(header.kind)
        refuse_compressed_flag(kind, self.algorithm)
        if len(payload) < UNCOMPRESSED_LENGTH.size:
            raise errors.ProtocolError(
                f"a compressed {kind.name} frame with a payload of {len(payload)} bytes, "
                f"shorter than its {UNCOMPRESSED_LENGTH.size}-byte uncompressed length"
            )
        (uncompressed_length,) = UNCOMPRESSED_LENGTH.unpack_from(payload)
        # Checked before anything is allocated: a small frame must not announce a large
        # allocation beyond our limit (a compression bomb).
        if HEADER_AFTER_LENGTH + uncompressed_length > self._max_frame_length:
            raise errors.ProtocolError(
                f"a compressed {kind.name} frame announcing {uncompressed_length} bytes uncompressed, "
                f"over the maximum frame length of {self._max_frame_length}"
            )
        data = payload[UNCOMPRESSED_LENGTH.size :]
        uncompressed = self._decompress_bounded(kind, data, uncompressed_length)
        header = header._replace(
            length=HEADER_AFTER_LENGTH + len(uncompressed), flags=header.flags & ~FLAG_COMPRESSED
        )
        return header, uncompressed

    def _decompress_bounded(self, kind: FrameKind, data: bytes, uncompressed_length: int) -> bytes:
        """`data` as exactly one zstd frame producing exactly `uncompressed_length` bytes,
        never allocating more than that for its output."""
        import zstandard

        def corrupt(why: str) -> errors.ProtocolError:
            return errors.ProtocolError(f"a compressed {kind.name} frame whose data is not one zstd frame: {why}")

        if not data.startswith(ZSTD_MAGIC):
            raise corrupt(f"it starts with {data[:4].hex(' ') or 'nothing'}, not the zstd magic number")
        try:
            # The frame header may state the content size: zstandard then sizes its output by
            # it, whatever bound it is given, so a stated size must be the announced one.
            stated: int = zstandard.get_frame_parameters(data).content_size
            if stated == zstandard.CONTENTSIZE_UNKNOWN:
                # Without a stated size the output buffer is the bound: decompressing stops
                # with an error as soon as the data would produce more. A bound of 0 would
                # mean "no bound", so an empty payload gets a 1-byte buffer.
                output: bytes = self._decompressor.decompress(
                    data, max_output_size=max(uncompressed_length, 1), allow_extra_data=False
                )
            elif stated != uncompressed_length:
                raise corrupt(f"its header states {stated} bytes, the frame announces {uncompressed_length}")
            elif stated == 0:
                # zstandard's one-shot call returns b"" for a stated size of 0 without reading
                # the rest; the streaming one checks the frame and what follows it.
                reader = self._decompressor.decompressobj()
                output = reader.decompress(data)
                if not reader.eof or reader.unused_data:
                    raise corrupt("it is truncated or followed by more data")
            else:
                output = self._decompressor.decompress(data, allow_extra_data=False)
        except zstandard.ZstdError as broken:
            raise corrupt(str(broken)) from None
        if len(output) != uncompressed_length:
            raise corrupt(f"it decompresses to {len(output)} bytes, the frame announces {uncompressed_length}")
        return output


def compression_for(
    algorithm: Optional[int], *, max_frame_length: int, min_size: int = DEFAULT_COMPRESSION_MIN_SIZE
) -> FrameCompression:
    """The compression of a connection that negotiated `algorithm` (`None`: none)."""
    if algorithm == ALGORITHM_ZSTD:
        return ZstdFrameCompression(max_frame_length, min_size)
    return FrameCompression()
