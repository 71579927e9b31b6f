"""acp_types.proxy in process: a proxy behind a conductor, driven line by line over in-memory pipes.

What is proved here: a message no hook is registered for reaches the next hop
with its params/result text unchanged, byte for byte (wrapped into
``proxy/successor`` toward the successor, unwrapped toward the client); hooks
see the settled version's models and what they return, raise or drop is what
the next hop sees; order is kept behind a hook; ids are the proxy's own on
each hop and ``$/cancel_request`` is translated; ``protocolVersion`` cannot be
changed; bad lines get their JSON-RPC errors; framing holds memory to the line
limit. The same proxy run as a process, on its own and under the conductor, is
tested in test_conductor.py.
"""

from __future__ import annotations

import asyncio
import json
import random
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from acp_types import proxy, v1, v2
from acp_types.proxy import _raw

INIT_V2 = '{"protocolVersion":2,"info":{"name":"kit","version":"1"}}'
ANSWER_V2 = '{"protocolVersion":2,"info":{"name":"agent","version":"1"}}'
ODD = '{ "sessionId" : "s\\u00e9", "prompt":[{"type":"text","text":"a\\"b \\ud83d\\ude00","x":1.0,"big":123456789012345678901234567890}] , "z":[ ] }'


class Pipe:
    """The conductor's side of one proxy: lines in, lines out."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self.out: asyncio.Queue[bytes] = asyncio.Queue()
        self._partial = b""

    # the proxy's reader
    async def read(self, n: int = -1) -> bytes:
        return await self.inbox.get()

    # the proxy's writer
    def write(self, data: bytes) -> None:
        self._partial += data
        *lines, self._partial = self._partial.split(b"\n")
        for line in lines:
            self.out.put_nowait(line)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    def send(self, text: str) -> None:
        self.inbox.put_nowait(text.encode() + b"\n")

    async def line(self) -> bytes:
        return await asyncio.wait_for(self.out.get(), 5)

    async def message(self) -> _raw.Envelope:
        return _raw.parse(await self.line())

    def quiet(self) -> bool:
        return self.out.empty()


Scenario = Callable[[Pipe], Awaitable[None]]


def run(chain: proxy.Proxy, scenario: Scenario) -> None:
    async def main() -> None:
        pipe = Pipe()
        served = asyncio.ensure_future(chain.serve(pipe, pipe))
        try:
            await scenario(pipe)
        finally:
            pipe.inbox.put_nowait(b"")
            await asyncio.wait_for(served, 5)

    asyncio.run(main())


async def initialize(pipe: Pipe, answer: str = ANSWER_V2, params: str = INIT_V2) -> _raw.Envelope:
    """proxy/initialize from the conductor; the proxy's initialize to its successor, answered; the proxy's answer."""
    pipe.send(f'{{"jsonrpc":"2.0","id":0,"method":"proxy/initialize","params":{params}}}')
    out = await pipe.message()
    assert out.kind == "request" and out.method == "proxy/successor"
    inner = out.unwrap()
    assert inner.method == "initialize" and inner.body == params
    pipe.send(f'{{"jsonrpc":"2.0","id":{out.rid_text},"result":{answer}}}')
    return await pipe.message()


@pytest.fixture
def plain() -> proxy.Proxy:
    return proxy.Proxy("plain")


def test_proxy_initialize_forwards_initialize_wrapped_and_answers_with_the_successors_answer(
    plain: proxy.Proxy,
) -> None:
    async def scenario(pipe: Pipe) -> None:
        answer = await initialize(pipe)
        assert answer.rid == 0 and answer.kind == "result" and answer.body == ANSWER_V2

    run(plain, scenario)


def test_untouched_messages_keep_their_text_byte_for_byte_both_ways(plain: proxy.Proxy) -> None:
    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        # toward the successor: wrapped, the params text spliced in unchanged
        pipe.send(f'{{"jsonrpc":"2.0","id":"c-7","method":"session/prompt","params":{ODD}}}')
        out = await pipe.message()
        assert out.method == "proxy/successor" and out.unwrap().method == "session/prompt"
        assert out.unwrap().body == ODD
        # its answer, oddly spaced, comes back to the client's id unchanged
        pipe.send(f'{{"jsonrpc":"2.0","id":{out.rid_text},"result": {{ "stopReason" :"end_turn" , "_x":1.0}} }}')
        assert await pipe.line() == b'{"jsonrpc":"2.0","id":"c-7","result":{ "stopReason" :"end_turn" , "_x":1.0}}'
        # from the successor: unwrapped, the envelope's own meta is hop-local and goes
        update = '{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\\u00e9 1.0"}}}'
        pipe.send(
            f'{{"jsonrpc":"2.0","method":"proxy/successor","params":{{"meta":{{"hop":1}},"method":"session/update","params":{update}}}}}'
        )
        assert await pipe.line() == f'{{"jsonrpc":"2.0","method":"session/update","params":{update}}}'.encode()

    run(plain, scenario)


def test_a_prompt_hook_sees_the_versions_model_and_its_change_is_what_the_successor_gets() -> None:
    chain = proxy.Proxy("ctx")
    seen: list[tuple[str, type]] = []

    @chain.on("session/prompt")
    async def add(params: v1.PromptRequest | v2.PromptRequest, ctx: proxy.Context) -> object:
        seen.append((ctx.version, type(params)))
        assert isinstance(params, v2.PromptRequest) and ctx.toward == "agent"
        params.prompt.insert(0, v2.TextContent(text="Project: x"))
        return params

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send(
            '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}'
        )
        inner = (await pipe.message()).unwrap()
        assert [block["text"] for block in inner.value["prompt"]] == ["Project: x", "hi"]

    run(chain, scenario)
    assert seen == [("v2", v2.PromptRequest)]


def test_the_version_is_the_one_initialize_settled() -> None:
    chain = proxy.Proxy("v")
    seen: list[Any] = []

    @chain.on("session/prompt")
    async def look(params: Any, ctx: proxy.Context) -> None:
        seen.append((ctx.version, type(params)))

    async def scenario(pipe: Pipe) -> None:
        # the client asks v2, the agent settles v1
        await initialize(pipe, answer='{"protocolVersion":1}')
        pipe.send(
            '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}'
        )
        await pipe.message()

    run(chain, scenario)
    assert seen == [("v1", v1.PromptRequest)]


def test_params_that_do_not_validate_are_forwarded_unchanged_and_the_hook_is_not_called() -> None:
    chain = proxy.Proxy("strict")
    called: list[Any] = []

    @chain.on("session/prompt")
    async def look(params: Any, ctx: proxy.Context) -> None:
        called.append(params)

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send('{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":5}}')
        assert (await pipe.message()).unwrap().body == '{"sessionId":5}'
        # beyond the parser's limits (a repeated key): the hook does not see a laundered copy either
        twice = '{"sessionId":"a","sessionId":"b","prompt":[{"type":"text","text":"hi"}]}'
        pipe.send(f'{{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{twice}}}')
        assert (await pipe.message()).unwrap().body == twice

    run(chain, scenario)
    assert called == []


def test_a_hook_raising_request_error_answers_the_request_and_forwards_nothing() -> None:
    chain = proxy.Proxy("gate")

    @chain.on("session/prompt")
    async def refuse(params: Any, ctx: proxy.Context) -> None:
        raise proxy.RequestError(-32602, "no prompts today")

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send(
            '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}'
        )
        answer = await pipe.message()
        assert (
            answer.rid == 3
            and answer.kind == "error"
            and answer.value == {"code": -32602, "message": "no prompts today"}
        )
        assert pipe.quiet()

    run(chain, scenario)


def test_a_hook_that_fails_answers_its_request_with_an_error_and_the_proxy_goes_on() -> None:
    chain = proxy.Proxy("buggy")

    @chain.on("session/prompt")
    async def bug(params: Any, ctx: proxy.Context) -> None:
        raise KeyError("oops")

    @chain.on("session/cancel")
    async def bug_too(params: Any, ctx: proxy.Context) -> None:
        raise KeyError("oops")

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        prompt = '{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}'
        pipe.send(f'{{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{prompt}}}')
        answer = await pipe.message()
        assert answer.rid == 3 and answer.value["code"] == -32603 and "buggy" in answer.value["message"]
        pipe.send('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}')
        assert (await pipe.message()).unwrap().body == '{"sessionId":"s"}'  # a notification goes on unchanged

    run(chain, scenario)


def test_drop_stops_a_notification_and_the_next_message_still_passes() -> None:
    chain = proxy.Proxy("filter")

    @chain.on("session/update")
    async def hide_thoughts(params: Any, ctx: proxy.Context) -> object:
        return proxy.DROP if isinstance(params.update, v2.AgentThoughtChunk) else None

    def wrapped(kind: str) -> str:
        content = '{"type":"text","text":"t"}'
        update = f'{{"sessionUpdate":"{kind}","messageId":"m","content":{content}}}'
        return f'{{"jsonrpc":"2.0","method":"proxy/successor","params":{{"method":"session/update","params":{{"sessionId":"s","update":{update}}}}}}}'

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send(wrapped("agent_thought_chunk"))
        pipe.send(wrapped("agent_message_chunk"))
        out = await pipe.message()
        assert out.method == "session/update" and out.value["update"]["sessionUpdate"] == "agent_message_chunk"

    run(chain, scenario)


def test_a_result_hook_changes_the_answer_on_its_way_back() -> None:
    chain = proxy.Proxy("rename")

    @chain.on_result("session/new")
    async def rename(result: v2.NewSessionResponse, ctx: proxy.Context) -> object:
        return v2.NewSessionResponse(session_id="via-proxy-" + result.session_id)

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send('{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}')
        out = await pipe.message()
        pipe.send(f'{{"jsonrpc":"2.0","id":{out.rid_text},"result":{{"sessionId":"s1"}}}}')
        answer = await pipe.message()
        assert answer.rid == 4 and answer.value["sessionId"] == "via-proxy-s1"

    run(chain, scenario)


def test_a_result_hook_cannot_change_protocol_version() -> None:
    chain = proxy.Proxy("liar")

    @chain.on_result("initialize")
    async def downgrade(result: Any, ctx: proxy.Context) -> object:
        return {"protocolVersion": 1}

    async def scenario(pipe: Pipe) -> None:
        answer = await initialize(pipe)
        assert answer.rid == 0 and answer.kind == "error" and "protocolVersion" in answer.value["message"]

    run(chain, scenario)


def test_order_is_kept_behind_a_slow_hook() -> None:
    chain = proxy.Proxy("slow")
    release = asyncio.Event()

    @chain.on("session/prompt")
    async def wait(params: Any, ctx: proxy.Context) -> None:
        await release.wait()

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send(
            '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}'
        )
        pipe.send('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}')
        for _ in range(50):  # loop turns enough for a wrong implementation to let the cancel overtake
            await asyncio.sleep(0)
        assert pipe.quiet()
        release.set()
        assert (await pipe.message()).unwrap().method == "session/prompt"
        assert (await pipe.message()).unwrap().method == "session/cancel"

    run(chain, scenario)


def test_a_hook_asks_the_client_itself_and_gets_the_answer_not_forwarded() -> None:
    chain = proxy.Proxy("asker")
    answers: list[Any] = []

    @chain.on("session/prompt")
    async def ask(params: Any, ctx: proxy.Context) -> None:
        answers.append(await ctx.request("client", "_proxy/ask", {"q": 1}))

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send(
            '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}'
        )
        own = await pipe.message()
        assert own.method == "_proxy/ask" and own.kind == "request" and own.value == {"q": 1}
        pipe.send(f'{{"jsonrpc":"2.0","id":{own.rid_text},"result":{{"a":2}}}}')
        assert (await pipe.message()).unwrap().method == "session/prompt"

    run(chain, scenario)
    assert answers == [{"a": 2}]


def test_a_hook_translates_a_call_with_a_request_of_its_own_and_replies_with_its_result() -> None:
    chain = proxy.Proxy("translate")

    @chain.on("_old/ask")
    async def translate(params: Any, ctx: proxy.Context) -> object:
        answer = await ctx.request("agent", "_new/ask", {"question": params["q"]})
        return proxy.Reply({"a": answer["answer"]})

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send('{"jsonrpc":"2.0","id":8,"method":"_old/ask","params":{"q":"?"}}')
        own = await pipe.message()
        assert own.method == "proxy/successor" and own.unwrap().method == "_new/ask"
        assert own.unwrap().value == {"question": "?"}
        pipe.send(f'{{"jsonrpc":"2.0","id":{own.rid_text},"result":{{"answer":42}}}}')
        assert await pipe.line() == b'{"jsonrpc":"2.0","id":8,"result":{"a":42}}'
        assert pipe.quiet()

    run(chain, scenario)


def test_cancel_request_is_translated_to_the_id_of_the_next_hop(plain: proxy.Proxy) -> None:
    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send(
            '{"jsonrpc":"2.0","id":"x","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}'
        )
        out = await pipe.message()
        pipe.send('{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"x"}}')
        cancel = await pipe.message()
        assert cancel.method == "$/cancel_request" and cancel.value == {"requestId": out.rid}

    run(plain, scenario)


def test_requests_from_the_successor_reach_the_client_and_their_answers_go_back(plain: proxy.Proxy) -> None:
    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        ask = '{"sessionId":"s","title":"t","options":[]}'
        pipe.send(
            '{"jsonrpc":"2.0","id":41,"method":"proxy/successor","params":'
            f'{{"method":"session/request_permission","params":{ask}}}}}'
        )
        out = await pipe.message()
        assert out.method == "session/request_permission" and out.body == ask
        pipe.send(f'{{"jsonrpc":"2.0","id":{out.rid_text},"result":{{"outcome":{{"outcome":"cancelled"}}}}}}')
        assert await pipe.line() == b'{"jsonrpc":"2.0","id":41,"result":{"outcome":{"outcome":"cancelled"}}}'

    run(plain, scenario)


def test_bad_lines_get_their_json_rpc_errors(plain: proxy.Proxy) -> None:
    async def scenario(pipe: Pipe) -> None:
        pipe.send('{"jsonrpc": "2.0", "id": 9, "method": "session/new"')
        assert json.loads(await pipe.line())["error"]["code"] == -32700
        pipe.send('[{"jsonrpc":"2.0","id":1,"method":"x"}]')
        assert json.loads(await pipe.line())["error"]["code"] == -32600
        pipe.send('{"jsonrpc":"2.0","id":5}')
        answer = json.loads(await pipe.line())
        assert answer["error"]["code"] == -32600 and answer["id"] == 5
        # plain initialize, no agent command: this proxy has no successor
        pipe.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}')
        answer = json.loads(await pipe.line())
        assert answer["id"] == 1 and "conductor" in answer["error"]["message"]

    run(plain, scenario)


def test_a_line_over_the_limit_is_skipped_and_a_request_among_them_answered() -> None:
    chain = proxy.Proxy("small", max_line_size=4096)

    async def scenario(pipe: Pipe) -> None:
        await initialize(pipe)
        pipe.send(
            '{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"'
            + "x" * 10000
            + '"}]}}'
        )
        answer = await pipe.message()
        assert answer.rid == 12 and answer.value["code"] == -32600
        pipe.send('{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}')
        assert (await pipe.message()).unwrap().method == "session/cancel"

    run(chain, scenario)


def test_framing_holds_no_more_than_the_line_limit_of_an_endless_line() -> None:
    limit = 1 << 20
    chunk = b"x" * (1 << 16)

    class Endless:
        def __init__(self, total: int) -> None:
            self.left = total

        async def read(self, n: int = -1) -> bytes:
            if self.left <= 0:
                return b"\n" if self.left == 0 and not setattr(self, "left", -1) else b""
            self.left -= len(chunk)
            return chunk

    async def count(lines: AsyncIterator[bytes | _raw.Oversized]) -> list[Any]:
        return [line async for line in lines]

    tracemalloc.start()
    try:
        found = asyncio.run(count(_raw.lines(Endless(64 * limit), limit)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found) == 1 and isinstance(found[0], _raw.Oversized)
    assert peak < 3 * limit, f"framing a 64 MiB line held {peak} bytes"


def test_envelope_spans_are_the_exact_text_of_each_member() -> None:
    line = b'{ "id" : "a\\"b" , "method":"proxy/successor","params":{"meta":{},"method":"m","params":[1, 2.50 ,"\\u00e9"]} }'
    env = _raw.parse(line)
    assert env.rid == 'a"b' and env.rid_text == '"a\\"b"'
    inner = env.unwrap()
    assert inner.method == "m" and inner.body == '[1, 2.50 ,"\\u00e9"]' and inner.rid == 'a"b'
    with pytest.raises(_raw.RawError):
        _raw.parse(b'{"id":1,"id":2,"result":{}}')  # a repeated member is not routed on a guess


def test_any_line_is_an_envelope_or_a_raw_error_never_another_exception() -> None:
    seeds = [
        b'{"jsonrpc":"2.0","id":1,"method":"proxy/successor","params":{"method":"m","params":{"a":[1,"\\u00e9",null]}}}',
        b'{"jsonrpc":"2.0","id":"x","result":{"k":1.5e300}}',
        b'{"jsonrpc":"2.0","method":"n","params":[true,false]}',
    ]
    alphabet = b'{}[]",:\\ \t0123456789.eE+-truefalsnul\x00\xff\xc3\xa9ux'
    rng = random.Random(29)
    hostile = [b"[" * 100000 + b"]" * 100000, b'{"id":1,"method":"m","params":' + b"[" * 100000 + b"]" * 100000 + b"}"]
    hostile.append(b'{"id":1,"method":"proxy/successor","params":{"method":"m","params":' + b"[" * 100000 + b"]}}")
    hostile.append(b'{"id":' + b"9" * 5000 + b',"result":{}}')
    lines = list(hostile)
    for _ in range(3000):
        line = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(line))
            if rng.random() < 0.5:
                line[at] = rng.choice(alphabet)
            else:
                del line[at]
        lines.append(bytes(line))
    for line in lines:
        try:
            env = _raw.parse(line)
            if env.method == "proxy/successor":
                env.unwrap()
        except _raw.RawError:
            pass
