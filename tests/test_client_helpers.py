"""acp_types.client.SessionClient in process, on a stand-in connection: what it keeps, and for how long."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from typing import Any

from acp_types import client, v2


class FakeConn:
    version = "v2"


def _update(session_id: str, text: str = "hi") -> Any:
    return v2.parse_params(
        "session/update",
        {
            "sessionId": session_id,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m",
                "content": {"type": "text", "text": text},
            },
        },
    )


def _kept_after(acp: client.SessionClient, n: int) -> int:
    """Bytes still allocated after ``n`` updates, each naming a fresh session id."""
    updates = [_update(f"other_{i}") for i in range(n)]

    async def warm_up() -> None:  # first use imports and caches: not what is measured
        for i in range(3):
            await client.SessionClient(FakeConn()).session_update(_update(f"warm_{i}"))

    asyncio.run(warm_up())
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]

        async def feed(updates: list[Any]) -> None:
            for params in updates:
                await acp.session_update(params)

        asyncio.run(feed(updates))
        updates.clear()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()


def test_states_of_sessions_the_client_did_not_open_are_bounded() -> None:
    small = _kept_after(client.SessionClient(FakeConn()), 200)
    large = _kept_after(client.SessionClient(FakeConn()), 2000)
    # about 3 KiB per fresh id was kept forever: ten times the ids, ten times the memory
    assert large < 2 * small + 64 * 1024, (small, large)


def test_the_sessions_it_opened_are_kept_and_the_others_are_the_most_recently_updated() -> None:
    acp = client.SessionClient(FakeConn(), max_other_sessions=2)

    async def feed() -> None:
        acp.state("mine")  # opened here (new_session, replay and prompt do this too)
        for sid in ("mine", "a", "b", "a", "c", "mine"):
            await acp.session_update(_update(sid))

    asyncio.run(feed())
    assert list(acp.states) == ["mine", "a", "c"]  # b was updated least recently
    assert acp.states["mine"].messages[0].text == "hihi"
    ignoring = client.SessionClient(FakeConn(), max_other_sessions=0)
    asyncio.run(ignoring.session_update(_update("a")))
    assert ignoring.states == {}


def test_a_permission_request_leaves_nothing_behind_for_its_session() -> None:
    acp = client.SessionClient(FakeConn(), permission=lambda params: "yes")

    async def ask() -> Any:
        params = v2.parse_params(
            "session/request_permission",
            {
                "sessionId": "s1",
                "title": "Edit?",
                "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}],
            },
        )
        return await acp.session_request_permission(params)

    assert asyncio.run(ask()) == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    assert acp._pending == {}
