"""The bytes this package writes, against the dumps in the Wire protocol chapter."""

import wirecall
from wirecall.codecs import JSON, MSGPACK
import pytest

from wirecall.wire import (
    FLAG_METADATA,
    PROTOCOL_VERSION,
    STREAM_METADATA_VERSION,
    CodecId,
    FrameKind,
    client_hello,
    deadline_ms,
    decode_extensions,
    encode_credit,
    decode_metadata,
    encode_extensions,
    encode_frame,
    encode_metadata,
    kind_exists,
    server_frame_flags,
)


def test_method_id_matches_the_worked_example():
    assert wirecall.method_id("UserService", "get_user") == 0x6CB7FB982DC9924B
    assert wirecall.method_id("UserService", "delete_user") == 0xFC569B3741C766AC
    assert wirecall.method_id("Accounts", "rename") == 0x0F7457D019E25107


def test_client_hello_offering_json_without_a_token():
    # The chapter's "A client offering only JSON" dump: version 5, max_frame_len 16 MiB.
    assert client_hello([CodecId.JSON]) == bytes.fromhex("57 43 41 4c 06 01 01 00 00 06 01 04 01 00 00 00")


def test_client_hello_with_a_token():
    assert client_hello([CodecId.JSON], b"s3cret") == bytes.fromhex(
        "57 43 41 4c 06 01 01 06 73 33 63 72 65 74 00 06 01 04 01 00 00 00"
    )


def test_client_hello_offering_the_rust_default_list():
    hello = client_hello([CodecId.MSGPACK, CodecId.PROTOBUF, CodecId.JSON])
    assert hello == bytes.fromhex("57 43 41 4c 06 03 02 03 01 00 00 06 01 04 01 00 00 00")


def test_version_1_hello_has_no_extension_block():
    # The worked example's hello, which servers of version 2 and later still accept.
    assert client_hello([CodecId.JSON], version=1) == bytes.fromhex("57 43 41 4c 01 01 01 00")


def test_a_hello_announces_its_own_frame_limit():
    hello = client_hello([CodecId.JSON], max_frame_length=1024)
    assert hello[-6:] == bytes.fromhex("01 04 00 00 04 00")


def test_stream_frame_kinds_and_a_credit_frame():
    # Streams (version 3): Open 8, Item 9, End 10, Credit 11; a Credit's payload is a u32.
    assert [FrameKind.OPEN, FrameKind.ITEM, FrameKind.END, FrameKind.CREDIT] == [8, 9, 10, 11]
    assert encode_credit(5, 32) == bytes.fromhex(
        "00 00 00 1a 0b 00 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 20"
    )
    for bad in (0, 65537):
        with pytest.raises(ValueError, match="1 to 65536"):
            encode_credit(1, bad)


def test_head_is_kind_12_and_exists_from_version_4_with_the_metadata_flag():
    # Stream metadata and trailers (version 4): a Head is an unknown kind below version 4, and
    # carries flag 01; an End carries trailers from version 3's flag on.
    assert FrameKind.HEAD == 12
    assert [kind_exists(FrameKind.HEAD, version) for version in (1, 2, 3, 4)] == [False, False, False, True]
    assert [kind_exists(FrameKind.ITEM, version) for version in (2, 3, 4)] == [False, True, True]
    assert server_frame_flags(FrameKind.HEAD, 4) == server_frame_flags(FrameKind.END, 4) == 0x01
    assert server_frame_flags(FrameKind.ITEM, 4) == server_frame_flags(FrameKind.RESPONSE, 1) == 0
    assert STREAM_METADATA_VERSION == 4
    assert PROTOCOL_VERSION == 6


def test_a_codec_offered_twice_is_refused_before_sending():
    with pytest.raises(ValueError, match="once"):
        client_hello([CodecId.JSON, CodecId.JSON])


def test_extension_blocks_round_trip_and_unknown_types_are_kept_to_be_skipped():
    block = encode_extensions({1: bytes.fromhex("01000000"), 200: b"future"})
    assert block[:2] == bytes.fromhex("00 0e")
    assert decode_extensions(block[2:]) == {1: bytes.fromhex("01000000"), 200: b"future"}


@pytest.mark.parametrize(
    "block, complaint",
    [
        (bytes.fromhex("01 04 01 00 00"), "runs past"),
        (bytes.fromhex("01 04 01 00 00 00 07"), "stray byte"),
        (bytes.fromhex("01 04 00 00 00 05"), "under 22"),
        (bytes.fromhex("01 02 00 40"), "4 bytes"),
        (bytes.fromhex("01 04 01 00 00 00 01 04 01 00 00 00"), "twice"),
        (bytes(1025), "over 1024"),
    ],
)
def test_malformed_extension_blocks_are_refused(block, complaint):
    with pytest.raises(ValueError, match=complaint):
        decode_extensions(block)


# The chapter's "Metadata (version 2)" dump: the JSON call find(1) with tenant: acme.
FIND_WITH_TENANT = bytes.fromhex(
    "00 00 00 32 01 01 00 00 00 00 00 00 00 01 4f e2 40 24 eb af 9a ea 00 00 00 00"
    "00 01 06 74 65 6e 61 6e 74 00 04 61 63 6d 65 7b"
    "22 75 73 65 72 5f 69 64 22 3a 31 7d"
)


def test_a_metadata_request_matches_the_chapter_byte_for_byte():
    payload = encode_metadata({"tenant": "acme"}) + JSON.encode_arguments({"user_id": 1})
    frame = encode_frame(
        FrameKind.REQUEST, 1, wirecall.method_id("UserService", "find"), 0, payload, FLAG_METADATA
    )
    assert frame == FIND_WITH_TENANT


def test_the_chapter_metadata_block_decodes():
    metadata, rest = decode_metadata(FIND_WITH_TENANT[26:])
    assert metadata == {"tenant": "acme"}
    assert rest == b'{"user_id":1}'


def test_metadata_repeated_key_keeps_the_last_value_and_empty_values_are_fine():
    block = bytes.fromhex("00 02") + b"\x01a\x00\x01x" + b"\x01a\x00\x00"
    assert decode_metadata(block) == ({"a": ""}, b"")


@pytest.mark.parametrize(
    "metadata, complaint",
    [
        ({"Tenant": "acme"}, "a-z"),
        ({"": "x"}, "1 to 255"),
        ({"k" * 256: "x"}, "1 to 255"),
        ({"tenant id": "x"}, "a-z"),
        ({"tenant": 7}, "str"),
        ({"big": "x" * 65536}, "65535"),
        ({f"k{i}": "" for i in range(65)}, "64 entries"),
        ({f"k{i}": "x" * 200 for i in range(41)}, "8192"),
    ],
)
def test_metadata_over_the_limits_is_refused(metadata, complaint):
    with pytest.raises(ValueError, match=complaint):
        encode_metadata(metadata)


def test_metadata_at_the_limits_is_accepted():
    sixty_four = {f"k{i}": "" for i in range(64)}
    assert decode_metadata(encode_metadata(sixty_four))[0] == sixty_four
    # 2 + 63 entries of (1 + 3 + 2 + 124): the block is exactly 8192 bytes; one more is over.
    full = {f"k{i:02d}": "v" * 124 for i in range(63)}
    assert len(encode_metadata(full)) == 8192
    full["k00"] += "v"
    with pytest.raises(ValueError, match="8193 bytes, over 8192"):
        encode_metadata(full)


@pytest.mark.parametrize(
    "block, complaint",
    [
        (b"\x00", "count"),
        (bytes.fromhex("00 41"), "over 64"),
        (bytes.fromhex("00 01 00 00 00"), "bad metadata key"),
        (bytes.fromhex("00 01 01 41 00 00"), "bad metadata key"),
        (bytes.fromhex("00 01 01 61 00 05 61"), "past the payload"),
        (bytes.fromhex("00 02 01 61 00 00"), "past the payload"),
        (bytes.fromhex("00 01 01 61 00 01 ff"), "UTF-8"),
    ],
)
def test_malformed_metadata_blocks_are_refused(block, complaint):
    with pytest.raises(ValueError, match=complaint):
        decode_metadata(block)


def test_ping_and_cancel_frames():
    assert encode_frame(FrameKind.PING, 7) == bytes.fromhex("00000016 05 00 0000000000000007 0000000000000000 00000000")
    assert encode_frame(FrameKind.CANCEL, 2) == bytes.fromhex("00000016 04 00 0000000000000002 0000000000000000 00000000")


def test_json_request_of_the_worked_example():
    payload = JSON.encode_arguments({"user": {"user_id": 1, "name": "fanly", "age": 18}})
    frame = encode_frame(FrameKind.REQUEST, 1, wirecall.method_id("UserService", "get_user"), 30_000, payload)
    assert len(frame) == 72
    assert frame[:26] == bytes.fromhex("00000044 01 00 0000000000000001 6cb7fb982dc9924b 00007530")
    assert frame[26:] == b'{"user":{"user_id":1,"name":"fanly","age":18}}'


def test_msgpack_arguments_are_an_array_in_declaration_order():
    assert MSGPACK.encode_arguments({"user_id": 7, "name": "ada"}) == bytes.fromhex("92 07 a3 61 64 61")
    assert MSGPACK.encode_arguments({}) == bytes.fromhex("90")


def test_msgpack_result_reply_of_the_chapter():
    fields = MSGPACK.decode_reply_fields(bytes.fromhex("92 93 07 a3 61 64 61 12 c0"), wirecall.Reply.AUTO)
    assert fields == {"ok": [7, "ada", 18], "err": None}


def test_a_tiny_timeout_is_a_deadline_of_one_millisecond_never_zero():
    assert deadline_ms(0.0001) == 1
    assert deadline_ms(30) == 30_000


def test_addresses_split_into_host_and_port():
    from wirecall.aio import split_address

    assert split_address("127.0.0.1:7000") == ("127.0.0.1", 7000)
    assert split_address("[::1]:7000") == ("::1", 7000)
    assert split_address("localhost:1") == ("localhost", 1)


def test_json_writes_nan_and_the_infinities_as_strings():
    payload = JSON.encode_arguments(
        {"value": float("nan"), "history": [float("inf"), 1.5, (float("-inf"),)], "n": 2}
    )
    assert payload == b'{"value":"NaN","history":["Infinity",1.5,["-Infinity"]],"n":2}'
