"""Many calls in flight on one connection, each answered with its own reply."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import wirecall
from wirecall import aio

CALLS = 250


def test_concurrent_calls_on_one_connection_get_their_own_replies(server, codec):
    async def many():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            users = client.UserService
            user_calls = [
                users.get_user(user={"user_id": n, "name": f"user-{n}", "age": n % 90})
                for n in range(CALLS)
            ]
            name_calls = [users.get_user_id(name="x" * n) for n in range(CALLS)]
            users_back, lengths = await asyncio.gather(
                asyncio.gather(*user_calls), asyncio.gather(*name_calls)
            )
            for n, user in enumerate(users_back):
                expected = {"user_id": n, "name": f"user-{n}", "age": n % 90}
                assert user == expected
            assert lengths == list(range(CALLS))

    asyncio.run(many())


def test_blocking_client_shared_by_threads(server):
    with wirecall.connect(server.address) as client:
        with ThreadPoolExecutor(max_workers=16) as pool:
            lengths = list(pool.map(lambda n: client.UserService.get_user_id(name="y" * n), range(200)))
        assert lengths == list(range(200))
