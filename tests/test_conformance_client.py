"""The conformance kit in client mode: the kit plays the agent for a client it spawns.

The reference client (tests/conformance/ref_client.py, on acp_types.connection)
passes every client check in both versions; each of its mutants breaks one
check's rule, and that check must catch it. The client reaches the kit through
``{agent}`` in its command (the relay) or over its own stdio.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from acp_types import conformance
from acp_types.conformance import _agent

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
import ref_client  # noqa: E402

REF = [sys.executable, str(ROOT / "tests" / "conformance" / "ref_client.py")]
FAST = _agent.Options(timeout=3, turn_timeout=3)


def _run(command: list[str], versions: list[str], checks: list[conformance.Check]):
    return asyncio.run(conformance.run("client", command, versions, checks, FAST))


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_reference_client_passes_every_check(version: str) -> None:
    results, info = _run([*REF, "--protocol", version, "--", "{agent}"], [version], conformance.checks("client"))
    wrong = [f"{r.key}: {r.verdict} {r.detail}" for r in results if r.verdict != "SUCCESS"]
    assert not wrong, "\n".join(wrong)
    assert [row["method"] for row in info[version]["table"]] == [
        "initialize",
        "session/cancel",
        "session/new",
        "session/prompt",
    ]


def test_every_client_check_has_a_mutant() -> None:
    ids = [c.id for c in conformance.checks("client")]
    missing = [i for i in ids if i not in ref_client.MUTANTS]
    print(f"\nclient checks without a mutant: {len(missing)}")
    assert not missing and set(ref_client.MUTANTS) <= set(ids)


def test_each_client_mutant_fails_its_own_check() -> None:
    cases = [(c, v) for c in conformance.checks("client") for v in c.versions]

    async def one(check: conformance.Check, version: str, gate: asyncio.Semaphore) -> str | None:
        command = [*REF, "--protocol", version, "--mutant", check.id, "--", "{agent}"]
        async with gate:
            results, _ = await conformance.run("client", command, [version], [check], FAST)
        want = "FAILURE" if check.level == "MUST" else "WARNING"
        return None if results[0].verdict == want else f"{results[0].key}: {results[0].verdict} {results[0].detail}"

    async def every() -> list[str | None]:
        gate = asyncio.Semaphore(3)
        return await asyncio.gather(*(one(c, v, gate) for c, v in cases))

    missed = [m for m in asyncio.run(every()) if m]
    assert not missed, "client mutants not caught:\n" + "\n".join(missed)


def test_a_method_of_another_version_is_judged_not_a_crash() -> None:
    # session/load is a v1 method: a v1 client talking to a v2 agent sends it, and INI-08 says so
    script = (
        "import sys, json\n"
        "def send(m): sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()\n"
        "send({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {'protocolVersion': 1}}); sys.stdin.readline()\n"
        "send({'jsonrpc': '2.0', 'id': 2, 'method': 'session/load', 'params': {'sessionId': 's', 'cwd': '/', 'mcpServers': []}})\n"
        "sys.stdin.readline()\n"
    )
    results, _ = _run(
        [sys.executable, "-c", script], ["v2"], [c for c in conformance.checks("client") if c.id == "INI-08"]
    )
    assert results[0].verdict == "FAILURE" and "session/load" in results[0].detail


def test_a_client_on_its_own_stdio_and_one_that_never_starts_its_agent() -> None:
    # without {agent} the kit is the client's stdio peer: a client that only prints is judged, not waited for
    results, _ = _run([sys.executable, "-c", "print('not a message')"], ["v1"], conformance.checks("client"))
    trn = next(r for r in results if r.check.id == "TRN-03")
    assert trn.verdict == "FAILURE" and "not valid messages" in trn.detail
    results, info = _run(
        [sys.executable, "-c", "import sys; sys.exit(4)", "{agent}"], ["v2"], conformance.checks("client")
    )
    assert {r.verdict for r in results} == {"SKIPPED"} and "status 4" in results[0].detail
