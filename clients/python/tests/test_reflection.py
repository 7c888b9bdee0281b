"""The proxy learns services from the server's reflection service: argument names and order,
reply types (MessagePack replies read back into dicts), one-way methods, and errors that name
what is known."""

import asyncio
import struct

import msgpack
import pytest

import wirecall
from wirecall import aio
from wirecall.schema import REFLECTION_TYPES, ServiceSchema, TypeTable
from wirecall.wire import FrameKind, decode_error_payload, encode_frame

from conftest import FANLY
from test_peer_behaviour import read_client_hello, scripted_server
from test_version2 import accepted_v2, read_frame


def without_docs(value):
    if isinstance(value, dict):
        return {key: without_docs(item) for key, item in value.items() if key not in ("doc", "rust_path")}
    if isinstance(value, list):
        return [without_docs(item) for item in value]
    return value


# -- against the example server ---------------------------------------------------------------


def test_the_bundled_reflection_types_match_the_servers_self_description(server):
    with wirecall.connect(server.address, codecs=["json"]) as client:
        own = client.call("wirecall.Reflection", "describe", service="wirecall.Reflection")
    assert without_docs(own["types"]) == REFLECTION_TYPES


def test_a_schema_read_from_msgpack_equals_the_json_one(server):
    with wirecall.connect(server.address, codecs=["json"]) as json_client:
        by_json = {name: json_client.call("wirecall.Reflection", "describe", service=name)
                   for name in ("UserService", "UserFeed", "wirecall.Reflection")}
        summaries = json_client.list_services()
    with wirecall.connect(server.address, codecs=["msgpack"]) as msgpack_client:
        assert msgpack_client.list_services() == summaries
        for name, schema in by_json.items():
            # The raw reply is arrays; read by the reflection types, it is the JSON form, docs and all.
            raw = msgpack_client.call("wirecall.Reflection", "describe", service=name)
            assert isinstance(raw, list)
            assert msgpack_client.service("wirecall.Reflection").describe(service=name) == schema
    assert [summary["name"] for summary in summaries] == ["UserService", "UserFeed", "wirecall.Reflection"]


def test_the_schema_is_fetched_once_per_service(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            fetched = []
            original = client._fetch_schema

            async def counting(service):
                fetched.append(service)
                return await original(service)

            client._fetch_schema = counting
            users = client.UserService
            results = await asyncio.gather(*(users.get_user(user=FANLY) for _ in range(20)))
            assert results == [FANLY] * 20
            assert await users.find(user_id=1) == FANLY
            assert fetched == ["UserService"]
            schema = await client.describe("UserService")
            assert list(schema.methods) == ["get_user_id", "get_user", "get", "get_dictionary", "find"]
            assert schema.methods["find"].describe() == "(user_id: i32) -> Result<UserModel, NotFound>"

    asyncio.run(scenario())


def test_unknown_services_and_methods_raise_attribute_error_listing_the_known_ones(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with pytest.raises(AttributeError, match=r"no service 'UserServise'; it serves: UserService, UserFeed, wirecall.Reflection"):
            client.UserServise
        with pytest.raises(AttributeError, match=r"no method 'delete_user'; its methods are: get_user_id, get_user, get, get_dictionary, find"):
            client.UserService.delete_user
        assert "find" in dir(client.UserService)

    async def asynchronous():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            with pytest.raises(AttributeError, match="it serves: UserService"):
                await client.Nope.anything()
            # Known now: attribute access itself raises.
            with pytest.raises(AttributeError, match="it serves: UserService"):
                client.Nope
            with pytest.raises(AttributeError, match="its methods are"):
                await client.UserService.delete_user()
            with pytest.raises(AttributeError, match="its methods are"):
                client.UserService.delete_user

    asyncio.run(asynchronous())


def test_missing_and_unknown_arguments_raise_type_error_naming_them(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with pytest.raises(TypeError, match=r"UserService.get_user\(\) missing 'user' argument\(s\); it takes \(user: UserModel\) -> UserModel"):
            client.UserService.get_user()
        with pytest.raises(TypeError, match=r"unknown 'usr'"):
            client.UserService.get_user(user=FANLY, usr=FANLY)
        with pytest.raises(TypeError, match=r"missing 'user_id' and unknown 'id'"):
            client.UserService.find(id=1)
        assert client.UserService.get_dictionary() == {"key": "value"}


def test_metadata_and_timeouts_pass_through_the_proxy(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        users = client.service("UserService", timeout=5, metadata={"tenant": "acme"})
        assert users.find(user_id=1) == FANLY


# -- against a scripted server ----------------------------------------------------------------

SHAPES_TYPES = [
    {"name": "Level", "kind": {"Enum": {"values": [
        {"name": "Low", "number": 0, "other": False}, {"name": "High", "number": 5, "other": False}]}}},
    {"name": "Shape", "kind": {"OneOf": {"variants": [
        {"name": "Empty", "tag": 1, "shape": "Unit", "other": False},
        {"name": "Circle", "tag": 2, "shape": {"Newtype": "F64"}, "other": False},
        {"name": "Rect", "tag": 3, "shape": {"Fields": {"named": True, "fields": [
            {"name": "w", "ty": "U32"}, {"name": "h", "ty": "U32"}, {"name": "level", "ty": {"Named": "Level"}}]}}, "other": False},
        {"name": "Pair", "tag": 4, "shape": {"Fields": {"named": False, "fields": [
            {"name": "0", "ty": {"Named": "Level"}}, {"name": "1", "ty": "Duration"}]}}, "other": False},
    ]}}},
    {"name": "Drawing", "kind": {"Struct": {"fields": [
        {"name": "title", "ty": "String"},
        {"name": "shapes", "ty": {"List": {"Named": "Shape"}}},
        {"name": "levels", "ty": {"Map": {"key": "String", "value": {"Named": "Level"}}}},
        {"name": "taken", "ty": {"Option": "Timestamp"}},
        {"name": "corner", "ty": {"Tuple": ["I32", {"Named": "Level"}]}},
    ]}}},
]


def test_values_are_read_from_msgpack_by_their_types():
    table = TypeTable(SHAPES_TYPES)
    drawing = ["d", ["Empty", {"Circle": 1.5}, {"Rect": [2, 3, 5]}, {"Pair": [0, [7, 9]]}],
               {"a": 5}, [10, 20], [-1, 5]]
    assert table.from_msgpack(drawing, {"Named": "Drawing"}) == {
        "title": "d",
        "shapes": ["Empty", {"Circle": 1.5}, {"Rect": {"w": 2, "h": 3, "level": "High"}},
                   {"Pair": ["Low", {"secs": 7, "nanos": 9}]}],
        "levels": {"a": "High"},
        "taken": {"secs_since_epoch": 10, "nanos_since_epoch": 20},
        "corner": [-1, "High"],
    }
    # A shorter array (an older peer) leaves fields out; a longer one (a newer peer) is cut.
    assert table.from_msgpack(["d"], {"Named": "Drawing"}) == {"title": "d"}
    assert table.from_msgpack(["d", [], {}, None, [0, 0], "new"], {"Named": "Drawing"})["taken"] is None
    # A map keyed by field name reads too; an unknown enum number stays a number.
    assert table.from_msgpack({"title": "d", "levels": {"a": 0, "b": 9}}, {"Named": "Drawing"}) == {
        "title": "d", "levels": {"a": "Low", "b": 9}}
    assert table.from_msgpack({"Rect": {"w": 1, "level": 5}}, {"Named": "Shape"}) == {"Rect": {"w": 1, "level": "High"}}


SHAPES_SCHEMA = {
    "name": "Shapes", "doc": "", "codecs": ["msgpack", "json"],
    "methods": [
        {"name": "scale", "id": wirecall.method_id("Shapes", "scale"), "doc": "",
         "args": [{"name": "shape", "ty": {"Named": "Shape"}, "doc": ""}, {"name": "factor", "ty": "F64", "doc": ""},
                  {"name": "note", "ty": {"Option": "String"}, "doc": ""}],
         "reply": {"Value": {"Named": "Shape"}}, "oneway": False, "idempotent": False, "policy": ""},
        {"name": "log", "id": wirecall.method_id("Shapes", "log"), "doc": "",
         "args": [{"name": "line", "ty": "String", "doc": ""}],
         "reply": "Unit", "oneway": True, "idempotent": False, "policy": ""},
        {"name": "check", "id": wirecall.method_id("Shapes", "check"), "doc": "", "args": [],
         "reply": {"Result": {"ok": None, "err": {"Named": "Level"}}}, "oneway": False, "idempotent": False, "policy": ""},
    ],
    "types": [dict(definition, doc="", rust_path="shapes::" + definition["name"]) for definition in SHAPES_TYPES],
    "described": True,
}


def as_msgpack_form(value, type_ref, table_types):
    """The inverse of `from_msgpack` for the reflection types: what a Rust server writes."""
    # Encode the JSON-form schema the way rmp-serde would, by the reflection types.
    kinds = {definition["name"]: definition["kind"] for definition in table_types}
    if isinstance(type_ref, str):
        return value
    (name, inner), = type_ref.items()
    if value is None:
        return None
    if name in ("List", "Set"):
        return [as_msgpack_form(item, inner, table_types) for item in value]
    if name == "Option":
        return as_msgpack_form(value, inner, table_types)
    if name == "Named":
        (kind, body), = kinds[inner].items()
        if kind == "Struct":
            return [as_msgpack_form(value.get(field["name"]), field["ty"], table_types) for field in body["fields"]]
        if isinstance(value, str):
            return value
        (tag, carried), = value.items()
        variant = next(v for v in body["variants"] if v["name"] == tag)
        shape = variant["shape"]
        if "Newtype" in shape:
            return {tag: as_msgpack_form(carried, shape["Newtype"], table_types)}
        return {tag: [as_msgpack_form(carried.get(f["name"]), f["ty"], table_types) for f in shape["Fields"]["fields"]]}
    return value


def shapes_server(seen):
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(b"WCAL" + bytes([2, 0, 2, 1, 2, 0, 0]))  # accepted, MessagePack
        while True:
            try:
                header, payload = await read_frame(reader)
            except asyncio.IncompleteReadError:
                break
            _, kind, _, request_id, method, _ = header
            arguments = msgpack.unpackb(payload, raw=False)
            seen.append((FrameKind(kind).name, method, arguments))
            if method == wirecall.method_id("wirecall.Reflection", "describe"):
                schema = as_msgpack_form(SHAPES_SCHEMA, {"Named": "ServiceSchema"}, REFLECTION_TYPES)
                reply = [schema, None] if arguments == ["Shapes"] else [None, {"UnknownService": arguments[0]}]
            elif method == wirecall.method_id("Shapes", "scale"):
                reply = [{"Rect": [4, 6, 5]}]
            elif method == wirecall.method_id("Shapes", "check"):
                reply = [5]  # Err(Level::High): a Result<(), E> reply is one element
            else:
                continue
            writer.write(encode_frame(FrameKind.RESPONSE, request_id, method, 0, msgpack.packb(reply)))
            await writer.drain()
        writer.close()

    return serve


def test_msgpack_arguments_follow_the_schema_and_one_way_methods_are_notified():
    seen = []

    async def scenario():
        server, port = await scripted_server(shapes_server(seen))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["msgpack"])
            shapes = client.Shapes
            # Keyword arguments in any order travel in declaration order; `note` is optional.
            scaled = await shapes.scale(factor=2.0, shape={"Rect": {"w": 2, "h": 3, "level": "High"}})
            assert scaled == {"Rect": {"w": 4, "h": 6, "level": "High"}}
            assert await shapes.log(line="hello") is None
            with pytest.raises(wirecall.ApplicationError) as failed:
                await shapes.check()
            assert failed.value.error == "High"
            await client.close()

    asyncio.run(scenario())
    describe, scale, log, check = seen
    assert describe == ("REQUEST", wirecall.method_id("wirecall.Reflection", "describe"), ["Shapes"])
    assert scale == ("REQUEST", wirecall.method_id("Shapes", "scale"),
                     [{"Rect": {"w": 2, "h": 3, "level": "High"}}, 2.0, None])
    assert log == ("NOTIFY", wirecall.method_id("Shapes", "log"), ["hello"])
    assert check[0] == "REQUEST"


def test_without_reflection_calls_go_out_as_written():
    seen = []

    async def no_reflection(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v2())
        while True:
            try:
                header, payload = await read_frame(reader)
            except asyncio.IncompleteReadError:
                break
            _, _, _, request_id, method, _ = header
            seen.append(payload)
            if method in (wirecall.method_id("wirecall.Reflection", "describe"),
                          wirecall.method_id("wirecall.Reflection", "list_services")):
                error = struct.pack(">H", 1) + b"no service on this server has that method id"
                writer.write(encode_frame(FrameKind.ERROR, request_id, method, 0, error))
            else:
                writer.write(encode_frame(FrameKind.RESPONSE, request_id, method, 0, b'{"value":' + payload + b"}"))
            await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(no_reflection)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert await client.Anything.echo(b=1, a=2) == {"b": 1, "a": 2}
            assert await client.describe("Anything") is None
            assert await client.Other.echo(x=1) == {"x": 1}
            with pytest.raises(wirecall.UnknownMethod):
                await client.list_services()
            await client.close()

    asyncio.run(scenario())
    # One describe, then the calls; the second service does not ask again.
    assert seen == [b'{"service":"Anything"}', b'{"b":1,"a":2}', b'{"x":1}', b"{}"]
