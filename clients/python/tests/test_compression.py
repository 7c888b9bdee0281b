"""Negotiated compression (protocol version 5): the hello's offer, the server's choice and the
broken choices, compressed frames both ways, and hostile compressed frames, against scripted
peers; then the example server (the tests named ``test_example_server_...``)."""

import asyncio
import json
import os
import struct
import sys
import time
import tracemalloc

import pytest

zstandard = pytest.importorskip("zstandard")

import wirecall  # noqa: E402
from wirecall import aio  # noqa: E402
from wirecall.compression import (  # noqa: E402
    ALGORITHM_ZSTD,
    MISSES_BEFORE_BACKING_OFF,
    RETRY_EVERY,
    FrameCompression,
    check_compression_min_size,
    chosen_algorithm,
    compression_for,
    offered_algorithms,
    refuse_compressed_flag,
    zstd_available,
)
from wirecall.wire import (  # noqa: E402
    DEFAULT_MAX_FRAME_LENGTH,
    FLAG_COMPRESSED,
    FLAG_METADATA,
    FRAME_HEADER,
    CodecId,
    FrameHeader,
    FrameKind,
    ServerHello,
    client_hello,
    decode_extensions,
    decode_frame_header,
    decode_metadata,
    encode_credit,
    encode_frame,
    encode_metadata,
    server_frame_flags,
)

from conftest import FANLY, PATIENCE  # noqa: E402
from test_peer_behaviour import read_client_hello, scripted_server  # noqa: E402
from test_streams import Relay, relay  # noqa: E402,F401  (the relay fixture)
from test_version2 import read_frame  # noqa: E402

#: The chapter's "stream Item carrying 1,036 bytes": `{"value":"www...w"}` with 1,024 `w`,
#: compressed with zstd at level 3 (the bytes the Rust server sends, pinned by wire_spec.rs).
CHAPTER_ITEM = bytes.fromhex(
    "00 00 00 38 09 02 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00"
    "00 00 04 0c 28 b5 2f fd 60 0c 03 a5 00 00 68 7b"
    "22 76 61 6c 75 65 22 3a 22 77 22 7d 01 00 fc 2b"
    "e0 05"
)
CHAPTER_ITEM_CONTENT = b'{"value":"' + b"w" * 1024 + b'"}'

#: More than a compressed frame may announce under the default limit, and cheap to compress.
BOMB_SIZE = 64 * 1024 * 1024
#: What decompressing a hostile frame may allocate at most (tracemalloc's peak): the frames
#: below announce at most a few KiB, so anything near the bomb's size is a failure.
ALLOCATION_BOUND = 1024 * 1024


def run(scenario) -> None:
    """Runs `scenario()`, failing it rather than hanging when it takes over `PATIENCE`."""
    asyncio.run(asyncio.wait_for(scenario(), PATIENCE))


def zstd_frame(content: bytes, *, content_size: bool = True) -> bytes:
    """One zstd frame of `content`, made by zstandard itself rather than by the client."""
    return zstandard.ZstdCompressor(level=3, write_content_size=content_size).compress(content)


def compressed_payload(content: bytes, *, announced=None, data=None) -> bytes:
    """A compressed frame's payload: the uncompressed length (`announced`, or the true one),
    then `data` (or `content`'s zstd frame)."""
    announced = len(content) if announced is None else announced
    return struct.pack(">I", announced) + (zstd_frame(content) if data is None else data)


def header_for(kind: FrameKind, payload: bytes, flags: int = FLAG_COMPRESSED, request_id: int = 1) -> FrameHeader:
    return decode_frame_header(encode_frame(kind, request_id, payload=payload, flags=flags)[: FRAME_HEADER.size])


def accepted_v5(compression=b"\x01", codec_id=1, version=5, extensions=None):
    """A server hello accepting `codec_id`, choosing the `compression` extension's value
    (`None`: no extension), or carrying the raw `extensions` block."""
    if extensions is None:
        extensions = b"" if compression is None else bytes([3, len(compression)]) + compression
    return b"WCAL" + bytes([version, 0, codec_id, 1, codec_id]) + struct.pack(">H", len(extensions)) + extensions


# -- the hellos --------------------------------------------------------------------------------


def test_the_hello_offers_zstd_in_the_compression_extension():
    # The chapter's JSON-only hello, with the extension block growing by 03 01 01.
    assert client_hello([CodecId.JSON], compression=[ALGORITHM_ZSTD]) == bytes.fromhex(
        "57 43 41 4c 06 01 01 00 00 09 01 04 01 00 00 00 03 01 01"
    )


def test_a_hello_below_version_5_offers_no_compression():
    for version in (2, 3, 4):
        hello = client_hello([CodecId.JSON], version=version, compression=[ALGORITHM_ZSTD])
        assert hello == bytes([*b"WCAL", version]) + bytes.fromhex("01 01 00 00 06 01 04 01 00 00 00")


@pytest.mark.parametrize("algorithms", [[1, 1], list(range(1, 10))], ids=["repeated", "nine"])
def test_a_compression_offer_is_at_most_eight_different_ids(algorithms):
    with pytest.raises(ValueError, match="at most 8 compression algorithms, each once"):
        client_hello([CodecId.JSON], compression=algorithms)


def test_zstd_is_offered_by_default_when_zstandard_is_installed():
    assert zstd_available()
    assert offered_algorithms(None) == (ALGORITHM_ZSTD,)
    assert offered_algorithms(True) == (ALGORITHM_ZSTD,)
    assert offered_algorithms(False) == ()


def test_without_zstandard_nothing_is_offered_and_asking_for_it_fails_at_once(monkeypatch):
    # A None entry makes `import zstandard` raise ImportError, as a missing package does.
    monkeypatch.setitem(sys.modules, "zstandard", None)
    assert not zstd_available()
    assert offered_algorithms(None) == ()
    assert offered_algorithms(False) == ()
    with pytest.raises(ImportError, match=r"wirecall\[zstd\]"):
        offered_algorithms(True)
    with pytest.raises(ImportError, match="zstandard"):
        asyncio.run(aio.connect("127.0.0.1", 1, compression=True))


@pytest.mark.parametrize("bad", [-1, True, "1k", 1.5])
def test_compression_min_size_is_a_number_of_bytes(bad):
    with pytest.raises(ValueError, match="compression_min_size"):
        check_compression_min_size(bad)
    with pytest.raises(ValueError, match="compression_min_size"):
        asyncio.run(aio.connect("127.0.0.1", 1, compression_min_size=bad))


def test_connect_offers_zstd_unless_told_not_to(monkeypatch):
    offers = []

    async def record_offer(reader, writer):
        version, _, _, extensions = await read_client_hello(reader)
        offers.append((version, decode_extensions(extensions).get(3)))
        writer.write(accepted_v5(compression=None, version=min(version, 5)))
        await writer.drain()
        await reader.read()
        writer.close()

    async def connect(port, **options):
        client = await aio.connect("127.0.0.1", port, codecs=["json"], **options)
        assert client.compression is None  # this server chooses none
        await client.close()

    async def scenario():
        server, port = await scripted_server(record_offer)
        async with server:
            await connect(port)
            await connect(port, compression=True)
            await connect(port, compression=False)
            await connect(port, protocol_version=4)
            with monkeypatch.context() as without_zstandard:
                without_zstandard.setitem(sys.modules, "zstandard", None)
                await connect(port)

    run(scenario)
    assert offers == [(6, b"\x01"), (6, b"\x01"), (6, None), (4, None), (6, None)]


# -- the server's choice -------------------------------------------------------------------------


def server_hello(extensions, version=5) -> ServerHello:
    return ServerHello(b"WCAL", version, 0, 1, (1,), extensions)


def test_the_server_chooses_zstd_or_nothing():
    assert chosen_algorithm(server_hello({3: b"\x01"}), (ALGORITHM_ZSTD,)) == ALGORITHM_ZSTD
    assert chosen_algorithm(server_hello({}), (ALGORITHM_ZSTD,)) is None
    # An unknown extension beside it is skipped.
    assert chosen_algorithm(server_hello({1: bytes(4), 200: b"x", 3: b"\x01"}), (1,)) == ALGORITHM_ZSTD


BROKEN_CHOICES = [
    pytest.param({3: b"\x02"}, 5, (1,), "algorithm 2, which we did not offer", id="not-offered"),
    pytest.param({3: b"\x01"}, 5, (), "algorithm 1, which we did not offer", id="nothing-offered"),
    pytest.param({3: b"\x01\x01"}, 5, (1,), "names 2 algorithms", id="two-ids"),
    pytest.param({3: b""}, 5, (1,), "names 0 algorithms", id="empty"),
    pytest.param({3: b"\x01"}, 4, (1,), "compression on a version 4 connection", id="below-version-5"),
]


@pytest.mark.parametrize("extensions, version, offered, complaint", BROKEN_CHOICES)
def test_a_broken_choice_is_a_protocol_error(extensions, version, offered, complaint):
    with pytest.raises(wirecall.ProtocolError, match=complaint):
        chosen_algorithm(server_hello(extensions, version), offered)


def test_compression_announced_twice_is_a_malformed_block():
    with pytest.raises(ValueError, match="compression is announced twice"):
        decode_extensions(bytes.fromhex("03 01 01 03 01 01"))


@pytest.mark.parametrize(
    "hello, options, complaint",
    [
        (accepted_v5(b"\x02"), {}, "algorithm 2, which we did not offer"),
        (accepted_v5(b"\x01"), {"compression": False}, "we offered none"),
        (accepted_v5(b"\x01\x02"), {}, "names 2 algorithms"),
        (accepted_v5(b""), {}, "names 0 algorithms"),
        (accepted_v5(b"\x01", version=4), {}, "compression on a version 4 connection"),
        (accepted_v5(extensions=bytes.fromhex("03 01 01 03 01 01")), {}, "compression is announced twice"),
    ],
    ids=["not-offered", "nothing-offered", "two-ids", "empty", "below-version-5", "twice"],
)
def test_connect_refuses_a_server_hello_with_a_broken_choice(hello, options, complaint):
    async def answer(reader, writer):
        await read_client_hello(reader)
        writer.write(hello)
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(answer)
        async with server:
            with pytest.raises(wirecall.ProtocolError, match=complaint):
                await aio.connect("127.0.0.1", port, codecs=["json"], **options)

    run(scenario)


# -- receiving compressed frames -----------------------------------------------------------------


def zstd_connection(max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH, min_size: int = 1024) -> FrameCompression:
    return compression_for(ALGORITHM_ZSTD, max_frame_length=max_frame_length, min_size=min_size)


def test_the_chapter_item_decompresses_to_its_1036_bytes():
    header = decode_frame_header(CHAPTER_ITEM[: FRAME_HEADER.size])
    assert (header.length, header.kind, header.flags, header.request_id) == (56, FrameKind.ITEM, FLAG_COMPRESSED, 1)
    header, payload = zstd_connection().decompress(header, CHAPTER_ITEM[FRAME_HEADER.size :])
    assert payload == CHAPTER_ITEM_CONTENT
    # Handled from here on as the uncompressed frame: flag 02 cleared, the length its own.
    assert header == FrameHeader(22 + 1036, FrameKind.ITEM, 0, 1, 0, 0)


def test_compressing_the_chapter_item_gives_its_bytes():
    flags, payload = zstd_connection().compress(0, CHAPTER_ITEM_CONTENT)
    assert encode_frame(FrameKind.ITEM, 1, payload=payload, flags=flags) == CHAPTER_ITEM


def test_a_compressed_payload_may_start_with_a_metadata_block():
    connection = zstd_connection()
    uncompressed = encode_metadata({"tenant": "acme"}) + json.dumps({"value": "m" * 2000}).encode()
    flags, payload = connection.compress(FLAG_METADATA, uncompressed)
    assert flags == FLAG_METADATA | FLAG_COMPRESSED
    assert len(payload) < len(uncompressed) // 10
    header, restored = connection.decompress(header_for(FrameKind.RESPONSE, payload, flags), payload)
    assert header.flags == FLAG_METADATA
    assert restored == uncompressed
    assert decode_metadata(restored) == ({"tenant": "acme"}, json.dumps({"value": "m" * 2000}).encode())


@pytest.mark.parametrize("content", [b"", b"x", b"abc" * 5000], ids=["empty", "one-byte", "15000-bytes"])
@pytest.mark.parametrize("content_size", [True, False], ids=["size-stated", "size-omitted"])
def test_frames_with_or_without_their_content_size_decompress(content, content_size):
    payload = compressed_payload(content, data=zstd_frame(content, content_size=content_size))
    _, restored = zstd_connection().decompress(header_for(FrameKind.ITEM, payload), payload)
    assert restored == content


def test_an_uncompressed_length_exactly_at_the_limit_is_accepted_and_one_more_is_not():
    limit = 22 + 2000
    fits = compressed_payload(b"f" * 2000)
    assert zstd_connection(limit).decompress(header_for(FrameKind.ITEM, fits), fits)[1] == b"f" * 2000
    over = compressed_payload(b"f" * 2001)
    with pytest.raises(wirecall.ProtocolError, match="announcing 2001 bytes uncompressed, over the maximum frame length of 2022"):
        zstd_connection(limit).decompress(header_for(FrameKind.ITEM, over), over)


def lying_empty_frame() -> bytes:
    """A zstd frame whose header states 0 bytes, followed by a raw block of 5."""
    return bytes.fromhex("28 b5 2f fd 20 00") + bytes.fromhex("29 00 00") + b"hello"


def hostile_payloads():
    """(id, payload, complaint): compressed payloads a receiver must refuse."""
    content = b"abcdefgh" * 300  # 2,400 bytes
    frame = zstd_frame(content)
    return [
        ("shorter-than-4-bytes", b"\x00\x00\x04", "payload of 3 bytes, shorter than its 4-byte uncompressed length"),
        ("bomb-announcing-4-gib", compressed_payload(b"x", announced=2**32 - 1), "announcing 4294967295 bytes uncompressed, over"),
        ("bomb-announcing-the-limit", compressed_payload(bytes(BOMB_SIZE)), f"announcing {BOMB_SIZE} bytes uncompressed, over"),
        (
            "bomb-stating-its-size",
            compressed_payload(b"", announced=1000, data=zstd_frame(bytes(BOMB_SIZE))),
            f"its header states {BOMB_SIZE} bytes, the frame announces 1000",
        ),
        (
            "bomb-omitting-its-size",
            compressed_payload(b"", announced=1000, data=zstd_frame(bytes(BOMB_SIZE), content_size=False)),
            "did not decompress full frame",
        ),
        ("size-stated-larger", compressed_payload(content, announced=1000), "states 2400 bytes, the frame announces 1000"),
        ("size-stated-smaller", compressed_payload(content, announced=3000), "states 2400 bytes, the frame announces 3000"),
        (
            "shorter-output-without-a-stated-size",
            compressed_payload(content, announced=3000, data=zstd_frame(content, content_size=False)),
            "decompresses to 2400 bytes, the frame announces 3000",
        ),
        (
            "longer-output-without-a-stated-size",
            compressed_payload(content, announced=2399, data=zstd_frame(content, content_size=False)),
            "did not decompress full frame",
        ),
        ("truncated", compressed_payload(content, data=frame[:-3]), "not one zstd frame"),
        ("trailing-garbage", compressed_payload(content, data=frame + b"junk"), "4 bytes of unused data"),
        ("a-second-frame", compressed_payload(content, data=frame + frame), "unused data"),
        ("not-zstd", compressed_payload(content, data=b"\x00" * 40), "not the zstd magic number"),
        ("no-data", compressed_payload(content, data=b""), "starts with nothing"),
        ("skippable-frame", compressed_payload(b"", data=bytes.fromhex("50 2a 4d 18 00 00 00 00")), "zstd magic"),
        ("lying-empty-frame", compressed_payload(b"", announced=0, data=lying_empty_frame()), "Data corruption"),
        ("empty-frame-then-more", compressed_payload(b"", data=zstd_frame(b"") + b"x"), "followed by more data"),
    ]


HOSTILE = hostile_payloads()


@pytest.mark.parametrize("payload, complaint", [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_a_hostile_compressed_payload_is_refused_without_a_large_allocation(payload, complaint):
    connection = zstd_connection()
    header = header_for(FrameKind.RESPONSE, payload)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(wirecall.ProtocolError, match=complaint):
            connection.decompress(header, payload)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < ALLOCATION_BOUND
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    "kind", [FrameKind.ERROR, FrameKind.CANCEL, FrameKind.PING, FrameKind.PONG, FrameKind.END, FrameKind.CREDIT, FrameKind.HEAD]
)
def test_only_kinds_with_a_codec_payload_may_be_compressed(kind):
    payload = compressed_payload(b"x" * 2000)
    with pytest.raises(wirecall.ProtocolError, match=f"a compressed {kind.name} frame: only Request, Response, Notify, Open and Item"):
        zstd_connection().decompress(header_for(kind, payload), payload)
    with pytest.raises(wirecall.ProtocolError, match="only Request"):
        refuse_compressed_flag(kind, ALGORITHM_ZSTD)
    assert server_frame_flags(kind, 5, compressed=True) & FLAG_COMPRESSED == 0


def test_the_compressed_flag_without_negotiation_is_refused():
    payload = compressed_payload(b"x" * 2000)
    uncompressed = compression_for(None, max_frame_length=DEFAULT_MAX_FRAME_LENGTH)
    assert uncompressed.algorithm is None
    with pytest.raises(wirecall.ProtocolError, match="a compressed RESPONSE frame on a connection that negotiated no compression"):
        uncompressed.decompress(header_for(FrameKind.RESPONSE, payload), payload)


def test_the_flags_a_server_frame_may_carry_with_compression():
    assert server_frame_flags(FrameKind.RESPONSE, 5, compressed=True) == FLAG_METADATA | FLAG_COMPRESSED
    assert server_frame_flags(FrameKind.ITEM, 5, compressed=True) == FLAG_COMPRESSED
    assert server_frame_flags(FrameKind.END, 5, compressed=True) == FLAG_METADATA
    assert server_frame_flags(FrameKind.RESPONSE, 5) == FLAG_METADATA
    # Below version 5 there is no compression, whatever the caller says.
    assert server_frame_flags(FrameKind.ITEM, 4, compressed=True) == 0


# -- sending compressed frames -------------------------------------------------------------------


def test_payloads_under_the_minimum_size_go_as_they_are():
    assert zstd_connection().compress(0, b"a" * 1023) == (0, b"a" * 1023)
    flags, payload = zstd_connection().compress(0, b"a" * 1024)
    assert flags == FLAG_COMPRESSED and payload[:4] == struct.pack(">I", 1024)
    # A smaller minimum compresses smaller payloads.
    assert zstd_connection(min_size=0).compress(0, b"a" * 100)[0] == FLAG_COMPRESSED


def test_a_payload_is_sent_compressed_only_when_it_saves_a_sixteenth():
    noise = os.urandom(4096)
    assert zstd_connection().compress(0, noise) == (0, noise)
    # About 190 bytes saved of 4,096: under 256, a sixteenth.
    barely = noise[:3900] + bytes(196)
    assert zstd_connection().compress(FLAG_METADATA, barely) == (FLAG_METADATA, barely)
    # About 580 saved: over a sixteenth.
    enough = noise[:3500] + bytes(596)
    flags, payload = zstd_connection().compress(FLAG_METADATA, enough)
    assert flags == FLAG_METADATA | FLAG_COMPRESSED
    assert 16 * (len(enough) - len(payload)) >= len(enough)


def test_after_a_run_of_incompressible_payloads_only_one_in_32_is_tried():
    connection = zstd_connection()
    for _ in range(MISSES_BEFORE_BACKING_OFF):
        noise = os.urandom(2048)
        assert connection.compress(0, noise) == (0, noise)
    compressible = b"c" * 2048
    sent = [connection.compress(0, compressible)[0] for _ in range(RETRY_EVERY)]
    assert sent == [0] * (RETRY_EVERY - 1) + [FLAG_COMPRESSED]
    # One shrank: every payload is tried again.
    assert [connection.compress(0, compressible)[0] for _ in range(3)] == [FLAG_COMPRESSED] * 3


def test_each_failed_try_doubles_the_interval_up_to_one_in_1024():
    connection = zstd_connection()
    tried = 0
    for _ in range(MISSES_BEFORE_BACKING_OFF + 32 + 64 + 128):
        before = connection._misses
        noise = os.urandom(2048)
        connection.compress(0, noise)
        tried += connection._misses - before
    # Four in a row, then the 32nd, the 64th after it and the 128th after that.
    assert tried == MISSES_BEFORE_BACKING_OFF + 3


def test_without_negotiation_nothing_is_compressed():
    assert compression_for(None, max_frame_length=DEFAULT_MAX_FRAME_LENGTH).compress(0, b"a" * 5000) == (0, b"a" * 5000)


# -- against scripted peers ----------------------------------------------------------------------


def decompress_from_client(payload: bytes) -> bytes:
    """What the server reads from a compressed frame of the client, checked independently of
    the client's own code."""
    (announced,) = struct.unpack(">I", payload[:4])
    content = zstandard.ZstdDecompressor().decompress(payload[4:], max_output_size=announced)
    assert len(content) == announced
    return content


def test_a_compressed_response_and_compressed_stream_items_reach_the_caller():
    reply = {"value": "r" * 3000}
    item = {"value": "w" * 1024}

    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v5())
        header, _ = await read_frame(reader)
        assert header[1] == FrameKind.REQUEST
        uncompressed = encode_metadata({"served-by": "zstd"}) + json.dumps(reply).encode()
        response = compressed_payload(uncompressed)
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, response, FLAG_METADATA | FLAG_COMPRESSED))
        await writer.drain()
        opened, _ = await read_frame(reader)
        assert opened[1] == FrameKind.OPEN
        await read_frame(reader)  # the first Credit
        compressed_item = compressed_payload(json.dumps(item).encode())
        writer.write(
            encode_frame(FrameKind.ITEM, opened[3], payload=compressed_item, flags=FLAG_COMPRESSED)
            + encode_frame(FrameKind.ITEM, opened[3], payload=b'{"value":"small"}')
            + encode_frame(FrameKind.END, opened[3])
        )
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert client.compression == "zstd"
            assert client.protocol_version == 5
            assert await client.call_with_metadata("S", "big", {}) == ("r" * 3000, {"served-by": "zstd"})
            assert [value async for value in client.stream("S", "items")] == ["w" * 1024, "small"]
            await client.close()

    run(scenario)


def test_large_requests_notifies_opens_and_items_go_compressed_small_ones_do_not():
    seen = []
    large = "x" * 5000

    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v5())
        while True:
            try:
                header, payload = await read_frame(reader)
            except asyncio.IncompleteReadError:
                break
            kind, flags, request_id = FrameKind(header[1]), header[2], header[3]
            if flags & FLAG_COMPRESSED:
                payload = decompress_from_client(payload)
            if kind != FrameKind.CREDIT:
                seen.append((kind, flags, payload))
            if kind == FrameKind.REQUEST:
                writer.write(encode_frame(FrameKind.RESPONSE, request_id, header[4], 0, b'{"value":true}'))
            elif kind == FrameKind.OPEN:
                writer.write(encode_credit(request_id, 8))
            elif kind == FrameKind.END:
                writer.write(encode_frame(FrameKind.ITEM, request_id, payload=b'{"value":2}') + encode_frame(FrameKind.END, request_id))
            await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"], metadata={"tenant": "acme"})
            assert await client.call("S", "big", text=large) is True
            assert await client.call("S", "small", text="x") is True
            await client.notify("S", "told", text=large)
            assert await client.upload_with("S", "upload", {"label": large}, ["y" * 4000, "y"]) == 2
            await client.close()

    run(scenario)
    block = encode_metadata({"tenant": "acme"})
    compressed_with_metadata = FLAG_METADATA | FLAG_COMPRESSED
    assert seen == [
        (FrameKind.REQUEST, compressed_with_metadata, block + json.dumps({"text": large}, separators=(",", ":")).encode()),
        (FrameKind.REQUEST, FLAG_METADATA, block + b'{"text":"x"}'),
        (FrameKind.NOTIFY, compressed_with_metadata, block + json.dumps({"text": large}, separators=(",", ":")).encode()),
        (FrameKind.OPEN, compressed_with_metadata, block + json.dumps({"label": large}, separators=(",", ":")).encode()),
        (FrameKind.ITEM, FLAG_COMPRESSED, json.dumps({"value": "y" * 4000}, separators=(",", ":")).encode()),
        (FrameKind.ITEM, 0, b'{"value":"y"}'),
        (FrameKind.END, 0, b""),
    ]


def test_with_compression_off_nothing_is_offered_or_compressed():
    seen = []

    async def serve(reader, writer):
        _, _, _, extensions = await read_client_hello(reader)
        seen.append(decode_extensions(extensions).get(3))
        writer.write(accepted_v5(compression=None))
        header, payload = await read_frame(reader)
        seen.append((header[2], len(payload)))
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, json.dumps({"value": "r" * 3000}).encode()))
        await writer.drain()
        await reader.read()
        writer.close()

    def call_blocking(port):
        with wirecall.connect("127.0.0.1", port, codecs=["json"], compression=False) as client:
            assert client.compression is None
            assert client.call("S", "big", text="x" * 5000) == "r" * 3000

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            await asyncio.get_running_loop().run_in_executor(None, call_blocking, port)

    run(scenario)
    assert seen == [None, (0, len('{"text":""}') + 5000)]


def test_the_blocking_client_reads_a_compressed_reply():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v5())
        header, payload = await read_frame(reader)
        assert header[2] == FLAG_COMPRESSED
        arguments = json.loads(decompress_from_client(payload))
        writer.write(
            encode_frame(
                FrameKind.RESPONSE, header[3], header[4], 0, compressed_payload(json.dumps({"value": arguments}).encode()), FLAG_COMPRESSED
            )
        )
        await writer.drain()
        await reader.read()
        writer.close()

    def call_blocking(port):
        with wirecall.connect("127.0.0.1", port, codecs=["json"]) as client:
            assert client.compression == "zstd"
            assert client.call("S", "echo", text="e" * 4000) == {"text": "e" * 4000}

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            await asyncio.get_running_loop().run_in_executor(None, call_blocking, port)

    run(scenario)


def hostile_frames():
    """(id, server hello, frame for request 1, complaint): what closes the connection."""
    big = compressed_payload(b'{"value":"' + b"v" * 2000 + b'"}')
    return [
        ("flag-without-negotiation", accepted_v5(None), encode_frame(FrameKind.RESPONSE, 1, 0, 0, big, FLAG_COMPRESSED), "negotiated no compression"),
        ("flag-on-a-version-4-connection", accepted_v5(None, version=4), encode_frame(FrameKind.RESPONSE, 1, 0, 0, big, FLAG_COMPRESSED), "negotiated no compression"),
        ("flag-on-a-ping", accepted_v5(), encode_frame(FrameKind.PING, 1, payload=big, flags=FLAG_COMPRESSED), "compressed PING frame: only Request"),
        ("flag-on-an-error", accepted_v5(), encode_frame(FrameKind.ERROR, 1, payload=big, flags=FLAG_COMPRESSED), "compressed ERROR frame: only Request"),
        ("flag-on-an-end", accepted_v5(), encode_frame(FrameKind.END, 1, payload=big, flags=FLAG_COMPRESSED), "compressed END frame: only Request"),
        ("shorter-than-4-bytes", accepted_v5(), encode_frame(FrameKind.RESPONSE, 1, 0, 0, b"\x00\x01", FLAG_COMPRESSED), "shorter than its 4-byte"),
        (
            "bomb",
            accepted_v5(),
            encode_frame(FrameKind.RESPONSE, 1, 0, 0, compressed_payload(b"", announced=BOMB_SIZE, data=zstd_frame(bytes(BOMB_SIZE))), FLAG_COMPRESSED),
            f"announcing {BOMB_SIZE} bytes uncompressed, over the maximum frame length",
        ),
        (
            "corrupt",
            accepted_v5(),
            encode_frame(FrameKind.RESPONSE, 1, 0, 0, compressed_payload(b"x" * 100, data=zstd_frame(b"x" * 100)[:-2]), FLAG_COMPRESSED),
            "not one zstd frame",
        ),
        (
            "size-mismatch",
            accepted_v5(),
            encode_frame(FrameKind.RESPONSE, 1, 0, 0, compressed_payload(b"x" * 100, announced=99), FLAG_COMPRESSED),
            "states 100 bytes, the frame announces 99",
        ),
    ]


HOSTILE_FRAMES = hostile_frames()


@pytest.mark.parametrize("hello, frame, complaint", [case[1:] for case in HOSTILE_FRAMES], ids=[case[0] for case in HOSTILE_FRAMES])
def test_a_hostile_compressed_frame_closes_the_connection_and_fails_every_call(hello, frame, complaint):
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(hello)
        for _ in range(2):
            await read_frame(reader)
        writer.write(frame)
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            calls = [asyncio.ensure_future(client.call("S", "m")) for _ in range(2)]
            for call in calls:
                with pytest.raises(wirecall.ConnectionClosed, match=f"the server broke the protocol: .*{complaint}") as closed:
                    await call
                assert isinstance(closed.value.cause, wirecall.ProtocolError)
            assert client.is_closed
            with pytest.raises(wirecall.ConnectionClosed):
                await client.call("S", "m")
            await client.close()

    run(scenario)


# -- against the example server ----------------------------------------------------------------
#
# `pytest -k example clients/python/tests/test_compression.py` runs these alone.

BIG_USER = {"user_id": 7, "name": "z" * 8000, "age": 30}


def test_example_server_compresses_a_large_call_both_ways(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            assert client.protocol_version == 6
            assert client.compression == "zstd"
            assert await client.UserService.get_user(user=BIG_USER) == BIG_USER
            assert await client.UserService.get_user(user=FANLY) == FANLY
            renamed = [user async for user in client.UserFeed.rename([BIG_USER, FANLY], prefix="p" * 2000)]
            assert [user["name"] for user in renamed] == ["p" * 2000 + BIG_USER["name"], "p" * 2000 + "fanly"]

    run(scenario)


def test_example_server_without_compression(server, codec):
    with wirecall.connect(server.address, codecs=[codec], compression=False) as client:
        assert client.protocol_version == 6
        assert client.compression is None
        assert client.UserService.get_user(user=BIG_USER) == BIG_USER
        assert client.UserFeed.import_users([BIG_USER, FANLY]) == 2
    with wirecall.connect(server.address, codecs=[codec], protocol_version=4) as client:
        assert client.protocol_version == 4
        assert client.compression is None
        assert client.UserService.get_user(user=BIG_USER) == BIG_USER


def test_example_server_receives_large_frames_compressed(relay: Relay):  # noqa: F811
    get_user = wirecall.method_id("UserService", "get_user")
    with wirecall.connect(relay.address, codecs=["json"]) as client:
        assert client.compression == "zstd"
        assert client.call("UserService", "get_user", user=BIG_USER) == BIG_USER
        assert client.call("UserService", "get_user", user=FANLY) == FANLY
        assert client.upload_with("UserFeed", "import_users", {}, [BIG_USER]) == 1
    big_call, small_call = [frame for frame in relay.sent(FrameKind.REQUEST) if frame.method_id == get_user]
    assert big_call.flags == FLAG_COMPRESSED and len(big_call.payload) < 1000
    assert decompress_from_client(big_call.payload) == json.dumps({"user": BIG_USER}, separators=(",", ":")).encode()
    assert small_call.flags == 0
    (item,) = relay.sent(FrameKind.ITEM)
    assert item.flags == FLAG_COMPRESSED
    assert json.loads(decompress_from_client(item.payload)) == {"value": BIG_USER}
    with wirecall.connect(relay.address, codecs=["json"], compression=False) as client:
        assert client.call("UserService", "get_user", user=BIG_USER) == BIG_USER
    assert relay.sent(FrameKind.REQUEST)[-1].flags == 0
