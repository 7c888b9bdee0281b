"""One-way calls and closing."""

import asyncio

import pytest

import wirecall
from wirecall import aio

from conftest import FANLY


def test_notify_gets_no_reply_and_the_connection_goes_on(server, codec):
    # The example has no #[oneway] method, but a Notify may name any method: the server runs
    # it and discards the reply. Nothing may come back, not even for an unknown method.
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            await client.UserService.get_user.notify(user=FANLY)
            await client.notify("UserService", "delete_user")
            await client.notify_with("UserService", "get_user_id", {"name": "ada"}, deadline=1.0)
            # A stray reply would fail this call's id routing or the connection.
            assert await client.UserService.get_user_id(name="fanly") == 5
            # The wait is the assertion: no reply is to come, and one that did within 0.2 s
            # would break the connection or the call below.
            await asyncio.sleep(0.2)
            assert not client.is_closed
            assert await client.UserService.get_dictionary() == {"key": "value"}

    asyncio.run(scenario())


def test_blocking_notify(server):
    with wirecall.connect(server.address) as client:
        client.notify("UserService", "get_user", user=FANLY)
        client.UserService.get.notify(users=[FANLY])
        assert client.UserService.get_user_id(name="ab") == 2


def test_calls_after_close_raise_connection_closed(server):
    client = wirecall.connect(server.address)
    assert client.UserService.get_user_id(name="a") == 1
    client.close()
    client.close()  # closing twice is harmless
    assert client.is_closed
    with pytest.raises(wirecall.ConnectionClosed):
        client.call("UserService", "get_user_id", name="late")
    with pytest.raises(wirecall.ConnectionClosed):
        client.UserService.get_user_id(name="late")


def test_asyncio_close_fails_calls_in_flight_and_later_calls(server):
    async def scenario():
        client = await aio.connect(server.address)
        in_flight = asyncio.ensure_future(client.call_with("UserService", "get", {"users": [FANLY] * 100_000}))
        await asyncio.sleep(0)
        await client.close()
        with pytest.raises(wirecall.ConnectionClosed):
            await in_flight
        with pytest.raises(wirecall.ConnectionClosed):
            await client.UserService.get_user_id(name="late")
        await client.close()

    asyncio.run(scenario())
