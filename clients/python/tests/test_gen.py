"""Typed stubs: `python -m wirecall gen` against the example server and from schema files,
the generated classes calling every shape of method, their dataclasses' round trips, and
`mypy --strict` on the stubs and on programs that use them (one of which must fail)."""

import asyncio
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Tuple

import pytest

import wirecall
from wirecall import aio
from wirecall.typed import for_codec

from conftest import FANLY

SCHEMAS = Path(__file__).resolve().parent / "schemas"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
# Where the imported `wirecall` lives: the subprocesses (the generator, mypy) use the same one.
PACKAGE_ROOT = Path(wirecall.__file__).resolve().parents[1]

# Uploads and bidirectional streams need the client's `upload_with` / `bidi_with`; until the
# client has them, the stubs still generate calls to them, and only those calls are untested.


def subprocess_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env


def generate(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wirecall", "gen", *arguments],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def mypy(directory: Path, *files: Path) -> Tuple[int, List[str]]:
    """`mypy --strict` on `files` (run in `directory`, which holds the stubs); its exit status
    and its error lines."""
    env = dict(os.environ)
    if "site-packages" not in PACKAGE_ROOT.parts:
        # A source checkout on PYTHONPATH (mypy ignores PYTHONPATH); an installed package is
        # found through its py.typed.
        env["MYPYPATH"] = str(PACKAGE_ROOT)
    checked = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--config-file", str(PYPROJECT),
            "--cache-dir", str(directory / ".mypy_cache"), *map(str, files),
        ],
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    return checked.returncode, [line for line in checked.stdout.splitlines() if ": error:" in line]


def without_source_line(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("# Source:"))


@pytest.fixture(scope="module")
def stubs_directory(server, tmp_path_factory) -> Path:
    """The example server's stubs (`user_stubs.py`) and its schemas (`services.json`)."""
    directory = tmp_path_factory.mktemp("stubs")
    generated = generate(
        server.address, "-o", str(directory / "user_stubs.py"), "--save-schema", str(directory / "services.json")
    )
    assert generated.returncode == 0, generated.stderr
    return directory


@pytest.fixture(scope="module")
def stubs(stubs_directory) -> ModuleType:
    return load(stubs_directory / "user_stubs.py", "user_stubs")


@pytest.fixture(scope="module")
def oneway_stubs(stubs_directory) -> ModuleType:
    """Stubs from the example's schema with `get_user` marked one-way (the example has no
    one-way method; the server runs a Notify of any method and answers nothing)."""
    schemas = json.loads((stubs_directory / "services.json").read_text())
    for schema in schemas:
        for method in schema["methods"]:
            if method["name"] == "get_user":
                method["oneway"] = True
    (stubs_directory / "oneway.json").write_text(json.dumps(schemas))
    generated = generate("--schema", str(stubs_directory / "oneway.json"), "-o", str(stubs_directory / "oneway_stubs.py"))
    assert generated.returncode == 0, generated.stderr
    return load(stubs_directory / "oneway_stubs.py", "oneway_stubs")


@pytest.fixture(scope="module")
def every_type(tmp_path_factory) -> ModuleType:
    directory = tmp_path_factory.mktemp("every")
    generated = generate("--schema", str(SCHEMAS / "every_type.json"), "-o", str(directory / "every_type_stubs.py"))
    assert generated.returncode == 0, generated.stderr
    return load(directory / "every_type_stubs.py", "every_type_stubs")


# -- generation -------------------------------------------------------------------------------


def test_the_stubs_say_they_are_generated_and_from_what(stubs_directory, server):
    header = (stubs_directory / "user_stubs.py").read_text().splitlines()[:3]
    assert header[0] == "# Typed stubs for the wirecall services UserFeed, UserService."
    assert "python -m wirecall gen" in header[1] and "do not edit" in header[1]
    assert header[2] == f"# Source: the reflection of {server.address}"


def test_a_schema_file_generates_what_the_server_does(stubs_directory, server):
    from_file = generate("--schema", str(stubs_directory / "services.json"))
    assert from_file.returncode == 0, from_file.stderr
    from_server = (stubs_directory / "user_stubs.py").read_text()
    assert without_source_line(from_file.stdout) == without_source_line(from_server)
    # Generating again gives the same text: the output is deterministic.
    again = generate(server.address)
    assert again.stdout == from_server


def test_a_describe_json_file_and_a_service_filter(stubs_directory, tmp_path):
    schemas = json.loads((stubs_directory / "services.json").read_text())
    # `wirecall describe --json` prints one ServiceSchema object, not a list.
    one = next(schema for schema in schemas if schema["name"] == "UserService")
    (tmp_path / "users.json").write_text(json.dumps(one))
    generated = generate("--schema", str(tmp_path / "users.json"))
    assert generated.returncode == 0, generated.stderr
    assert "class UserServiceAsync(AsyncService):" in generated.stdout
    assert "UserFeed" not in generated.stdout
    filtered = generate("--schema", str(stubs_directory / "services.json"), "--service", "UserFeed")
    assert "class UserFeed(BlockingService):" in filtered.stdout and "class UserService(" not in filtered.stdout
    unknown = generate("--schema", str(stubs_directory / "services.json"), "--service", "Nope")
    assert unknown.returncode == 1 and "no schema for Nope" in unknown.stderr


def test_reflection_is_left_out_unless_asked_for(server):
    generated = generate(server.address, "--service", "wirecall.Reflection")
    assert generated.returncode == 0, generated.stderr
    assert "class ReflectionAsync(AsyncService):" in generated.stdout
    assert "wirecall.Reflection" not in generate(server.address).stdout.splitlines()[0]


def test_an_unreachable_server_is_an_error_not_a_traceback():
    generated = generate("127.0.0.1:1")
    assert generated.returncode == 1 and generated.stderr.startswith("python -m wirecall gen:")


# -- calls through the typed classes ------------------------------------------------------------


def test_blocking_calls_of_every_unary_shape(stubs, server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        users = stubs.UserService(client)
        fanly = stubs.UserModel(**FANLY)
        assert users.get_user_id(name="fanly") == 5
        assert users.get_user(user=fanly) == fanly
        assert users.get(users=[fanly, fanly]) is True
        assert users.get_dictionary() == {"key": "value"}
        assert users.find(user_id=1) == fanly
        with pytest.raises(stubs.UserServiceFindError) as raised:
            users.find(user_id=42)
        assert raised.value.error == stubs.NotFound(user_id=42, reason="no such user")
        assert isinstance(raised.value, wirecall.ApplicationError)
        assert raised.value.wire_error == {"user_id": 42, "reason": "no such user"} or codec == "msgpack"


def test_blocking_server_stream_yields_dataclasses(stubs, server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with stubs.UserFeed(client).list_users(count=3) as feed:
            assert feed.metadata() == {}
            assert feed.trailers() is None
            users = list(feed)
            assert feed.trailers() == {"listed": "3"}
    assert [user.name for user in users] == ["user1", "user2", "user3"]
    assert all(isinstance(user, stubs.UserModel) for user in users)


def test_async_calls_and_server_stream(stubs, server, codec):
    async def main() -> None:
        async with await aio.connect(server.address, codecs=[codec]) as client:
            users = stubs.UserServiceAsync(client, timeout=5.0, metadata={"tenant": "acme"})
            fanly = stubs.UserModel(**FANLY)
            assert await users.get_user(user=fanly) == fanly
            lengths = await asyncio.gather(*(users.get_user_id(name="x" * n) for n in range(5)))
            assert lengths == [0, 1, 2, 3, 4]
            with pytest.raises(stubs.UserServiceFindError) as raised:
                await users.find(user_id=7)
            assert raised.value.error.user_id == 7
            listed = stubs.UserFeedAsync(client).list_users(count=4)
            assert await listed.metadata() == {}
            names = [user.name async for user in listed]
            assert names == ["user1", "user2", "user3", "user4"]
            assert listed.trailers() == {"listed": "4"}
            async with stubs.UserFeedAsync(client).list_users(count=1000) as feed:
                first = await feed.__anext__()
            assert first.user_id == 1  # leaving the block cancelled the rest

    asyncio.run(main())


def test_one_way_methods_return_none(oneway_stubs, server):
    fanly = oneway_stubs.UserModel(**FANLY)
    with wirecall.connect(server.address) as client:
        assert oneway_stubs.UserService(client).get_user(user=fanly) is None
        assert oneway_stubs.UserService(client).get_user_id(name="ab") == 2  # the connection carries on

    async def main() -> None:
        async with await aio.connect(server.address) as client:
            assert await oneway_stubs.UserServiceAsync(client).get_user(user=fanly) is None

    asyncio.run(main())


def test_blocking_upload_and_bidirectional_stream(stubs, server, codec):
    users = [stubs.UserModel(user_id=n, name=f"u{n}", age=20) for n in (1, 2, 3)]
    with wirecall.connect(server.address, codecs=[codec]) as client:
        feed = stubs.UserFeed(client)
        assert feed.import_users(users) == 3
        with pytest.raises(stubs.UserFeedImportUsersError) as raised:
            feed.import_users([stubs.UserModel(user_id=0, name="zero", age=1)])
        assert raised.value.error == stubs.NotFound(user_id=0, reason="user id 0 is reserved")
        renamed = list(feed.rename(iter(users), prefix="new-"))
    assert [user.name for user in renamed] == ["new-u1", "new-u2", "new-u3"]


def test_async_upload_and_bidirectional_stream(stubs, server, codec):
    async def produce(count: int) -> Any:
        for n in range(1, count + 1):
            yield stubs.UserModel(user_id=n, name=f"u{n}", age=30)

    async def main() -> None:
        async with await aio.connect(server.address, codecs=[codec]) as client:
            feed = stubs.UserFeedAsync(client)
            assert await feed.import_users(produce(4)) == 4
            assert await feed.import_users([stubs.UserModel(user_id=9, name="n", age=1)]) == 1
            with pytest.raises(stubs.UserFeedImportUsersError):
                await feed.import_users([stubs.UserModel(user_id=0, name="zero", age=1)])
            names = [user.name async for user in feed.rename(produce(2), prefix="x-")]
            assert names == ["x-u1", "x-u2"]

    asyncio.run(main())


# -- dataclasses --------------------------------------------------------------------------------


def test_messages_round_trip_in_both_plain_forms(stubs):
    fanly = stubs.UserModel(**FANLY)
    assert fanly.to_wire() == FANLY
    assert stubs.UserModel.from_wire(fanly.to_wire()) == fanly
    # MessagePack read without reflection: a list of the fields in order.
    assert stubs.UserModel.from_wire([1, "fanly", 18]) == fanly
    # A peer with fewer fields (an older schema): the missing ones take Rust's defaults.
    assert stubs.UserModel.from_wire([1]) == stubs.UserModel(user_id=1, name="", age=0)


def every_type_record(module: ModuleType) -> Any:
    m = module
    return m.Record(
        flag=True, small=-3, big=2**63, ratio=0.5, letter="x", text="t", blob=b"\x00\xff",
        wait=datetime.timedelta(seconds=90, microseconds=5),
        at=datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc),
        maybe=m.AlphaItem(id=7), items=[m.AlphaItem(id=1), m.AlphaItem(id=2)], tags={"a", "b"},
        pair=("p", m.Level.High), grid=(1, 2, 3),
        by_id={1: m.ShapeCircle(1.5), 2: m.ShapeEmpty(), 3: m.ShapeRect(4, 5), 4: m.ShapePoly([(0, 1)], m.Level.None_)},
        switches={True: "on", False: "off"}, class_="keyword", shared=m.Shared(True), anything={"free": [1]}, from_wire_=8,
    )


def test_every_type_round_trips_through_json_and_msgpack_forms(every_type):
    record = every_type_record(every_type)
    # JSON: bytes as base64 (numbers below version 6), map keys as strings, all through the
    # json module.
    assert for_codec(record.to_wire(), "json", 5)["blob"] == [0, 255]
    as_numbers = json.loads(json.dumps(for_codec(record.to_wire(), "json", 5)))
    assert every_type.Record.from_wire(as_numbers) == record
    as_json = json.loads(json.dumps(for_codec(record.to_wire(), "json")))
    assert as_json["blob"] == "AP8=" and as_json["by_id"]["2"] == "Empty" and as_json["switches"] == {"true": "on", "false": "off"}
    assert as_json["wait"] == {"secs": 90, "nanos": 5000} and as_json["class"] == "keyword"
    assert as_json["from_wire"] == 8
    assert every_type.Record.from_wire(as_json) == record
    # MessagePack without reflection: messages as lists, enums by number, times as pairs.
    as_list = list(record.to_wire().values())
    as_list[7], as_list[8] = [90, 5000], [1704164645, 6000]
    as_list[12] = ["p", 5]
    assert every_type.Record.from_wire(as_list) == record


def test_enums_by_name_number_default_and_catch_all(every_type):
    level = every_type.Level
    assert level.from_wire("High") is level.High and level.from_wire(5) is level.High
    assert level.from_wire(None) is level.Low  # a missing field: the variant numbered 0
    assert level.from_wire("Louder") is level.Unknown and level.from_wire(42) is level.Unknown
    assert level.None_.to_wire() == "None"
    assert every_type.store_error_from_wire({"Missing": "k"}) == every_type.StoreErrorMissing("k")
    assert every_type.store_error_from_wire("ReadOnly") == every_type.StoreErrorReadOnly()
    with pytest.raises(ValueError):
        every_type.store_error_from_wire({"Other": 1})


def test_names_shared_by_two_services_do_not_collide(every_type):
    # `Item` differs between Alpha and Beta: each gets its service's name in front.
    assert every_type.AlphaItem(id=1).to_wire() == {"id": 1}
    assert every_type.BetaItem(name="b").to_wire() == {"name": "b"}
    assert not hasattr(every_type, "Item")
    # `Shared` is the same in both: generated once.
    assert "Shared" in every_type.__dict__ and not hasattr(every_type, "AlphaShared")
    # An argument named `items` next to an upload: the upload's parameter steps aside.
    assert "items_: Iterable[int], /, *, items: int" in Path(every_type.__file__).read_text()


# -- mypy ---------------------------------------------------------------------------------------

TYPED_PROGRAM = """
    import asyncio
    from typing import List

    import wirecall
    from wirecall import aio

    from user_stubs import NotFound, UserFeed, UserModel, UserService, UserServiceAsync, UserServiceFindError


    def blocking(address: str) -> List[str]:
        with wirecall.connect(address) as client:
            users = UserService(client)
            fanly: UserModel = users.get_user(user=UserModel(user_id=1, name="fanly", age=18))
            length: int = users.get_user_id(name=fanly.name)
            try:
                users.find(user_id=length)
            except UserServiceFindError as failure:
                missing: NotFound = failure.error
                print(missing.reason)
            return [user.name for user in UserFeed(client).list_users(count=3)]


    async def concurrent(address: str) -> None:
        async with await aio.connect(address) as client:
            users = UserServiceAsync(client, timeout=2.0)
            ages: List[int] = [user.age for user in await asyncio.gather(users.find(user_id=1), users.find(user_id=1))]
            print(ages)
"""

WRONG_PROGRAM = """
    import wirecall

    from user_stubs import UserService


    def wrong(address: str) -> None:
        with wirecall.connect(address) as client:
            UserService(client).get_user_id(name=42)
"""


def test_mypy_strict_passes_on_the_stubs_and_a_typed_program(stubs_directory):
    program = stubs_directory / "typed_program.py"
    program.write_text(textwrap.dedent(TYPED_PROGRAM))
    status, errors = mypy(stubs_directory, stubs_directory / "user_stubs.py", program)
    assert errors == []
    assert status == 0


def test_mypy_strict_passes_on_every_type(every_type):
    directory = Path(every_type.__file__).parent
    status, errors = mypy(directory, Path(every_type.__file__))
    assert errors == []
    assert status == 0


def test_mypy_refuses_a_wrong_argument_type(stubs_directory):
    program = stubs_directory / "wrong_program.py"
    program.write_text(textwrap.dedent(WRONG_PROGRAM))
    status, errors = mypy(stubs_directory, program)
    assert status == 1
    assert any("wrong_program.py" in error and "arg-type" in error and '"name"' in error for error in errors), errors


def test_bytes_from_wire_reads_every_form_the_wire_chapter_names():
    from wirecall.typed import bytes_from_wire

    for text in ("+/8=", "+/8", "-_8=", "-_8"):
        assert bytes_from_wire(text) == b"\xfb\xff", text
    assert bytes_from_wire([251, 255]) == bytes_from_wire(b"\xfb\xff") == b"\xfb\xff"
    assert bytes_from_wire("") == b""
    for text in ("a", "not base64!", "é"):
        with pytest.raises(ValueError, match="base64"):
            bytes_from_wire(text)
