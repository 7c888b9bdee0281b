"""The bytes this package writes, against the dumps in the Wire protocol chapter."""

import wirecall
from wirecall.codecs import JSON, MSGPACK
from wirecall.wire import CodecId, FrameKind, client_hello, deadline_ms, encode_frame


def test_method_id_matches_the_worked_example():
    assert wirecall.method_id("UserService", "get_user") == 0x6CB7FB982DC9924B
    assert wirecall.method_id("UserService", "delete_user") == 0xFC569B3741C766AC
    assert wirecall.method_id("Accounts", "rename") == 0x0F7457D019E25107


def test_client_hello_offering_json_without_a_token():
    assert client_hello([CodecId.JSON]) == bytes.fromhex("57 43 41 4c 01 01 01 00")


def test_client_hello_with_a_token():
    assert client_hello([CodecId.JSON], b"s3cret") == bytes.fromhex(
        "57 43 41 4c 01 01 01 06 73 33 63 72 65 74"
    )


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
