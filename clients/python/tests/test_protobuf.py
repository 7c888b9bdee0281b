"""The Protobuf codec (codec 3) against the example server: every call shape it serves, the
reflection service itself over Protobuf, the bundled reflection descriptors, and payloads
that do not decode."""

import asyncio
import json
import struct
import sys
from pathlib import Path

import pytest

pytest.importorskip("google.protobuf")

from google.protobuf import descriptor_pb2  # noqa: E402

import wirecall  # noqa: E402
from wirecall import aio  # noqa: E402
from wirecall.protobuf import REFLECTION_METHODS, ProtobufCodec, reflection_descriptors  # noqa: E402
from wirecall.replies import Reply  # noqa: E402
from wirecall.typed import bytes_from_wire  # noqa: E402
from wirecall.schema import ServiceSchema  # noqa: E402

from wirecall.wire import FrameKind, encode_frame  # noqa: E402

from conftest import FANLY  # noqa: E402
from test_peer_behaviour import read_client_hello, scripted_server  # noqa: E402
from test_version2 import read_frame  # noqa: E402

NOT_FOUND = {"user_id": 42, "reason": "no such user"}


def descriptors_over(client: wirecall.Client, service: str) -> bytes:
    """`descriptors(service)` over a JSON or MessagePack connection, as bytes."""
    reply = client.call_with("wirecall.Reflection", "descriptors", {"service": service}, reply=Reply.RESULT)
    return bytes_from_wire(reply)


def test_every_user_service_method_asyncio(server):
    async def scenario():
        async with await aio.connect(server.address, codecs=["protobuf"]) as client:
            assert client.codec == "protobuf"
            users = client.UserService
            assert await users.get_user_id(name="fanly") == 5
            assert await users.get_user(user=FANLY) == FANLY
            assert await users.get(users=[FANLY, FANLY]) is True
            assert await users.get(users=[]) is False
            assert await users.get_dictionary() == {"key": "value"}
            assert await users.find(user_id=1) == FANLY
            with pytest.raises(wirecall.ApplicationError) as refused:
                await users.find(user_id=42)
            assert refused.value.error == NOT_FOUND

    asyncio.run(scenario())


def test_every_user_service_method_blocking_and_without_a_proxy(server):
    with wirecall.connect(server.address, codecs=["protobuf"]) as client:
        # No proxy: the client describes the service and fetches its messages on first use.
        assert client.call("UserService", "get_user_id", name="fanly") == 5
        assert client.call("UserService", "get_user", user=FANLY) == FANLY
        assert client.call("UserService", "find", user_id=1) == FANLY
        with pytest.raises(wirecall.ApplicationError) as refused:
            client.call("UserService", "find", user_id=42)
        assert refused.value.error == NOT_FOUND
        assert client.UserService.get_dictionary() == {"key": "value"}
        # A field left out takes its default, as proto3 reads an absent field.
        assert client.call("UserService", "get_user", user={"user_id": 1}) == {"user_id": 1, "name": "", "age": 0}


def test_one_way_calls_go_out_in_protobuf(server):
    async def scenario():
        async with await aio.connect(server.address, codecs=["protobuf"]) as client:
            await client.UserService.get_user.notify(user=FANLY)
            await client.notify_with("UserService", "get_user_id", {"name": "ada"}, deadline=1.0)
            await asyncio.sleep(0.2)
            assert not client.is_closed
            assert await client.UserService.get_user_id(name="fanly") == 5
            # Without the method's messages nothing can be written: it fails before sending.
            with pytest.raises(AttributeError, match="no method 'delete_user'"):
                await client.notify("UserService", "delete_user")

    asyncio.run(scenario())


def test_server_streams_in_protobuf(server):
    expected = [{"user_id": n, "name": f"user{n}", "age": 18 + n} for n in (1, 2, 3)]
    with wirecall.connect(server.address, codecs=["protobuf"]) as client:
        assert list(client.UserFeed.list_users(count=3)) == expected
        assert list(client.stream("UserFeed", "list_users", count=3)) == expected
        assert list(client.stream("UserFeed", "list_users", count=0)) == []

    async def scenario():
        async with await aio.connect(server.address, codecs=["protobuf"]) as client:
            assert [user async for user in client.stream("UserFeed", "list_users", count=2)] == expected[:2]
            assert [user async for user in client.UserFeed.list_users(count=3)] == expected

    asyncio.run(scenario())


def test_reflection_over_protobuf_equals_reflection_over_json(server):
    # The reflection replies cover most shapes the Protobuf form has: enums with data as
    # oneofs (unit, newtype and struct variants), optional fields, nested lists, u64s.
    with wirecall.connect(server.address, codecs=["json"]) as json_client:
        summaries = json_client.list_services()
        schemas = {
            summary["name"]: json_client.call("wirecall.Reflection", "describe", service=summary["name"])
            for summary in summaries
        }
    with wirecall.connect(server.address, codecs=["protobuf"]) as client:
        assert client.list_services() == summaries
        for name, schema in schemas.items():
            assert client.call("wirecall.Reflection", "describe", service=name) == schema
            assert client.service("wirecall.Reflection").describe(service=name) == schema
        with pytest.raises(wirecall.ApplicationError) as refused:
            client.call("wirecall.Reflection", "describe", service="Nope")
        assert refused.value.error == {"UnknownService": "Nope"}


def test_the_bundled_reflection_descriptors_and_methods_match_the_server(server):
    with wirecall.connect(server.address, codecs=["msgpack"]) as client:
        assert descriptors_over(client, "wirecall.Reflection") == reflection_descriptors()
    with wirecall.connect(server.address, codecs=["json"]) as client:
        own = client.call("wirecall.Reflection", "describe", service="wirecall.Reflection")
    keys = ("name", "args", "reply", "oneway", "server_stream", "upload")
    served = [{key: method[key] for key in keys} for method in own["methods"]]
    for method in served:
        method["args"] = [{"name": arg["name"], "ty": arg["ty"]} for arg in method["args"]]
    assert served == REFLECTION_METHODS


def test_descriptors_hold_each_methods_messages(server):
    with wirecall.connect(server.address, codecs=["json"]) as client:
        raw = descriptors_over(client, "UserFeed")
        with pytest.raises(wirecall.ApplicationError) as refused:
            descriptors_over(client, "Nope")
        assert refused.value.error == {"UnknownService": "Nope"}
    files = descriptor_pb2.FileDescriptorSet.FromString(raw).file
    assert files[0].name == "wirecall/wirecall.services.proto"
    assert files[0].package == "wirecall.services"
    messages = {message.name for message in files[0].message_type}
    for method in ("list_users", "import_users", "rename"):
        assert {f"UserFeed_{method}_Args", f"UserFeed_{method}_Reply"} <= messages
    assert {"UserFeed_import_users_Upload", "UserFeed_rename_Upload", "UserModel", "NotFound"} <= messages


def test_upload_items_are_the_methods_upload_message(server):
    # Uploads are sent by the stream code; the codec's part is each item's message.
    async def scenario():
        async with await aio.connect(server.address, codecs=["protobuf"]) as client:
            schema = await client.describe("UserFeed")
            assert schema is not None
            return client._codec, schema

    codec, schema = asyncio.run(scenario())
    encoded = codec.encode_item(FANLY, schema.method("import_users"))
    # field 1 (value), a UserModel: user_id = 1, name = "fanly", age = 18.
    assert encoded == bytes([0x0A, 0x0B, 0x08, 0x01, 0x12, 0x05]) + b"fanly" + bytes([0x18, 0x12])
    with pytest.raises(TypeError, match="takes no upload"):
        codec.encode_item(FANLY, schema.method("list_users"))


def proto_users(count: int, start: int = 1):
    return [{"user_id": n, "name": f"user{n}", "age": 18 + n % 50} for n in range(start, start + count)]


def test_uploads_and_bidirectional_streams_in_protobuf(server):
    sent = proto_users(50)
    expected = [{**user, "name": "new-" + user["name"]} for user in sent]

    async def async_items(items):
        for item in items:
            yield item

    async def scenario():
        async with await aio.connect(server.address, codecs=["protobuf"]) as client:
            # Without a proxy, the first use of the service fetches its messages.
            assert await client.upload("UserFeed", "import_users", sent) == 50
            assert await client.UserFeed.import_users(async_items(sent)) == 50
            assert await client.UserFeed.import_users([]) == 0
            with pytest.raises(wirecall.ApplicationError) as refused:
                await client.UserFeed.import_users([{"user_id": 0, "name": "zero", "age": 1}])
            assert refused.value.error == {"user_id": 0, "reason": "user id 0 is reserved"}
            assert [user async for user in client.bidi("UserFeed", "rename", sent, prefix="new-")] == expected
            assert [user async for user in client.UserFeed.rename(async_items(sent), prefix="new-")] == expected

    asyncio.run(scenario())
    with wirecall.connect(server.address, codecs=["protobuf"]) as client:
        assert client.upload_with("UserFeed", "import_users", {}, iter(sent)) == 50
        assert client.UserFeed.import_users(sent) == 50
        assert list(client.bidi_with("UserFeed", "rename", {"prefix": "new-"}, iter(sent))) == expected
        assert list(client.UserFeed.rename(sent, prefix="new-")) == expected


def test_a_reply_that_does_not_decode_is_a_decode_error():
    # The reflection service's messages are built in: no server is needed to read its replies.
    codec = ProtobufCodec()
    describe = codec.learnt_signature("wirecall.Reflection", "describe")
    assert describe is not None
    for payload in (b"\x0a\xff", b"\xff\xff\xff", b"\x0a\x02\x0a"):
        with pytest.raises(ValueError):
            codec.decode_reply_fields(payload, Reply.RESULT, describe)
    # A result reply with neither side set is an error too.
    with pytest.raises(ValueError, match="neither"):
        codec.decode_reply_fields(b"", Reply.RESULT, describe)


def test_bad_arguments_fail_before_anything_is_sent(server):
    with wirecall.connect(server.address, codecs=["protobuf"]) as client:
        with pytest.raises(TypeError):
            client.UserService.get_user(user="not a user")
        with pytest.raises(TypeError):
            client.call("UserService", "get_user_id", name=5)
        # The connection goes on.
        assert client.UserService.get_user_id(name="fanly") == 5


def test_protobuf_without_the_package_fails_at_connect(server, monkeypatch):
    monkeypatch.setitem(sys.modules, "wirecall.protobuf", None)
    with pytest.raises(ImportError, match=r"wirecall\[protobuf\]"):
        wirecall.connect(server.address, codecs=["protobuf"])


def test_protobuf_is_offered_only_when_asked(server):
    with wirecall.connect(server.address) as client:
        assert client.codec == "msgpack"
    with wirecall.connect(server.address, codecs=["protobuf", "json"]) as client:
        assert client.codec == "protobuf"


# -- every shape of the Protobuf form, against the Rust codec's bytes ---------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "tags_protobuf.json"


def length_delimited(field: int, payload: bytes) -> bytes:
    """Field `field` of a message, holding `payload` (a nested message)."""
    length, size = bytearray(), len(payload)
    while True:
        length.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            break
    return bytes([field << 3 | 2]) + bytes(length) + payload


def as_json_form(value):
    """A decoded value as JSON writes it: bytes as lists of numbers, map keys as strings."""
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, dict):
        return {str(key): as_json_form(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json_form(item) for item in value]
    return value


@pytest.fixture(scope="module")
def tags():
    """The Rust fixture service `Tags` (written by the runtime's `python_fixture_tests`):
    its schema, its descriptors, and sightings in JSON and in the Rust codec's Protobuf."""
    fixture = json.loads(FIXTURE.read_text())
    codec = ProtobufCodec()
    codec.learn_service(bytes(fixture["descriptors"]), ServiceSchema(fixture["schema"]))
    return codec, fixture["sightings"]


def test_rust_protobuf_reads_as_the_json_form(tags):
    # Structs, unit enums, enums with data (unit, struct, tuple and newtype variants), options
    # of options, lists of lists, maps with integer keys, tuples, arrays, bytes, chars,
    # Duration and SystemTime, a recursive Option<Box<_>>.
    codec, sightings = tags
    record = codec.learnt_signature("Tags", "record")
    for sighting in sightings:
        reply = length_delimited(1, bytes(sighting["protobuf"]))
        fields = codec.decode_reply_fields(reply, Reply.VALUE, record)
        assert as_json_form(fields["value"]) == sighting["json"]


def test_the_json_form_writes_the_rust_codecs_bytes(tags):
    codec, sightings = tags
    record = codec.learnt_signature("Tags", "record")
    for sighting in sightings:
        # `note` is empty, and proto3 leaves a default string out.
        encoded = codec.encode_arguments({"sighting": sighting["json"], "note": ""}, record)
        assert encoded == length_delimited(1, bytes(sighting["protobuf"]))


def test_results_unit_results_and_stream_items_read_by_their_reply_type(tags):
    codec, sightings = tags
    lookup = codec.learnt_signature("Tags", "lookup")
    found = codec.decode_reply_fields(length_delimited(1, bytes(sightings[0]["protobuf"])), Reply.RESULT, lookup)
    assert as_json_form(found) == {"ok": sightings[0]["json"], "err": None}
    assert codec.decode_reply_fields(length_delimited(2, b"gone"), Reply.RESULT, lookup) == {"ok": None, "err": "gone"}
    forget = codec.learnt_signature("Tags", "forget")
    assert codec.decode_reply_fields(b"", Reply.UNIT_RESULT, forget) == {"err": None}
    assert codec.decode_reply_fields(length_delimited(1, b"no"), Reply.UNIT_RESULT, forget) == {"err": "no"}
    watch = codec.learnt_signature("Tags", "watch")
    item = codec.decode_reply_fields(length_delimited(1, bytes(sightings[1]["protobuf"])), Reply.VALUE, watch)
    assert as_json_form(item["value"]) == sightings[1]["json"]


# -- scripted servers: what the client does with no reflection and with bad payloads -----------


def encode_reply(codec, service, method, fields):
    """A reply message of `service.method`, written by the client's own messages (a scripted
    server's answer)."""
    messages = codec._services[service]
    signature = codec.learnt_signature(service, method)
    message = messages._message_class(method, "Reply")()
    ok, err = signature.reply["Result"]["ok"], signature.reply["Result"]["err"]
    messages._walker.fill_fields(message, [("ok", {"Option": ok}), ("err", {"Option": err})], fields, 0)
    return message.SerializeToString()


def protobuf_server(answers, seen):
    """A version 2 server that accepts Protobuf and answers each method from `answers`
    (method id -> payload); other methods get UnknownMethod."""

    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(b"WCAL" + bytes([2, 0, 3, 1, 3]) + b"\x00\x00")
        while True:
            try:
                header, payload = await read_frame(reader)
            except asyncio.IncompleteReadError:
                break
            _, kind, _, request_id, method, _ = header
            seen.append(method)
            if method in answers:
                writer.write(encode_frame(FrameKind.RESPONSE, request_id, method, 0, answers[method]))
            else:
                error = struct.pack(">H", 1) + b"no service on this server has that method id"
                writer.write(encode_frame(FrameKind.ERROR, request_id, method, 0, error))
            await writer.drain()
        writer.close()

    return serve


def test_without_reflection_protobuf_calls_raise_no_schema_and_send_nothing():
    seen = []

    async def scenario():
        server, port = await scripted_server(protobuf_server({}, seen))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["protobuf"])
            with pytest.raises(wirecall.NoSchema, match="does not serve reflection"):
                await client.call("Tags", "record", note="x")
            with pytest.raises(wirecall.NoSchema):
                await client.Tags.ping()
            await client.close()

    asyncio.run(scenario())
    # Only the one describe went out.
    assert seen == [wirecall.method_id("wirecall.Reflection", "describe")]


def test_replies_that_do_not_decode_raise_decode_error(tags):
    fixture = json.loads(FIXTURE.read_text())
    codec = ProtobufCodec()
    describe = wirecall.method_id("wirecall.Reflection", "describe")
    descriptors = wirecall.method_id("wirecall.Reflection", "descriptors")
    record = wirecall.method_id("Tags", "record")
    lookup = wirecall.method_id("Tags", "lookup")
    answers = {
        describe: encode_reply(codec, "wirecall.Reflection", "describe", {"ok": fixture["schema"]}),
        descriptors: encode_reply(codec, "wirecall.Reflection", "descriptors", {"ok": bytes(fixture["descriptors"])}),
        record: b"\x0a\xff\xff",  # field 1, a length past the end
        lookup: b"\x12\x02\xff\xfe",  # err: a string that is not UTF-8
    }
    seen = []

    async def scenario():
        server, port = await scripted_server(protobuf_server(answers, seen))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["protobuf"])
            with pytest.raises(wirecall.DecodeError):
                await client.Tags.record(sighting=fixture["sightings"][0]["json"], note="")
            with pytest.raises(wirecall.DecodeError):
                await client.call("Tags", "lookup", place="dock")
            await client.close()

    asyncio.run(scenario())
    assert seen == [describe, descriptors, record, lookup]
