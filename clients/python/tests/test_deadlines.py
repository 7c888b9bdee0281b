"""Deadlines travel in the Request and are enforced by the client, which then sends a Cancel."""

import asyncio

import pytest

import wirecall
from wirecall import aio

from conftest import FANLY

# Big enough that neither side can send, decode and answer it within a millisecond.
SLOW_ARGUMENTS = {"users": [FANLY] * 200_000}


def test_a_call_past_its_deadline_raises_and_the_connection_still_works(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with pytest.raises(wirecall.DeadlineExceeded) as late:
            client.call_with("UserService", "get", SLOW_ARGUMENTS, timeout=0.001)
        # Either the client gave up first (Timeout, having sent a Cancel) or the server's
        # deadline passed first (an Error frame with code 4): the same deadline either way.
        assert late.value.code == 4
        assert isinstance(late.value, TimeoutError)
        assert client.UserService.get_user_id(name="fanly") == 5


def test_the_local_timeout_cancels_and_the_late_reply_is_dropped(server):
    async def scenario():
        async with await aio.connect(server.address) as client:
            with pytest.raises(wirecall.Timeout):
                # The client's clock starts before the 5 MB request is even written.
                await client.call_with("UserService", "get", SLOW_ARGUMENTS, timeout=0.0005)
            assert await client.UserService.get_user_id(name="after") == 5
            assert not client.is_closed

    asyncio.run(scenario())


def test_cancelling_the_awaiting_task_cancels_the_call(server):
    async def scenario():
        async with await aio.connect(server.address) as client:
            call = asyncio.ensure_future(client.call_with("UserService", "get", SLOW_ARGUMENTS))
            await asyncio.sleep(0)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            results = await asyncio.gather(*(client.UserService.get_user_id(name="z" * n) for n in range(20)))
            assert results == list(range(20))

    asyncio.run(scenario())


def test_no_deadline_sends_zero_and_still_gets_the_reply(server):
    with wirecall.connect(server.address, timeout=None) as client:
        assert client.UserService.get(users=[FANLY] * 1000) is True
