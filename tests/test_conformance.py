"""The conformance kit (acp_types.conformance), agent mode: its verdicts, its robustness, its command line.

The reference agent (tests/conformance/ref_agent.py) passes every check in
both versions; each of its mutants breaks the rule of one check, and that
check must catch it. The kit must end every check with a verdict, whatever
the program under test does (hang, crash, print garbage, flood), and end every
process it started.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from acp_types import conformance
from acp_types.conformance import _agent

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
import ref_agent  # noqa: E402

REF = [sys.executable, str(ROOT / "tests" / "conformance" / "ref_agent.py")]
ECHO = [sys.executable, str(ROOT / "examples" / "echo_agent.py")]
# the raw-handler echo of the connection tests: it advertises v2's `session` but has no session/resume
RAW_ECHO = [sys.executable, str(ROOT / "tests" / "echo_handler.py")]
FAST = _agent.Options(timeout=3, turn_timeout=3, long_prompt="Count: " + " ".join(map(str, range(1, 1501))))


def _run(command: list[str], versions: list[str], checks: list[conformance.Check], options: _agent.Options = FAST):
    return asyncio.run(conformance.run("agent", command, versions, checks, options))


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    return subprocess.run(
        [sys.executable, "-m", "acp_types.conformance", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def _expected(check: conformance.Check, version: str) -> str:
    return "SUCCESS"


def test_the_reference_agent_passes_every_check_in_both_versions() -> None:
    results, info = _run(REF, ["v1", "v2"], conformance.checks("agent"))
    wrong = [f"{r.key}: {r.verdict} {r.detail}" for r in results if r.verdict != _expected(r.check, r.version)]
    assert not wrong, "\n".join(wrong)
    assert {r.version for r in results} == {"v1", "v2"}
    # what it advertised is what it implements
    table = {row["method"]: row for row in info["v2"]["table"]}
    assert table["session/archive"] == {
        "method": "session/archive",
        "advertised": "yes",
        "gated": True,
        "observed": "answered",
    }


def test_every_check_has_a_mutant() -> None:
    ids = [c.id for c in conformance.checks("agent")]
    missing = [i for i in ids if i not in ref_agent.MUTANTS]
    print(f"\nagent checks without a mutant: {len(missing)} ({', '.join(missing) or 'none'})")
    assert not missing
    assert not set(ref_agent.MUTANTS) - set(ids), "a mutant for a check that does not exist"


def test_each_mutant_fails_its_own_check() -> None:
    cases = [(c, v) for c in conformance.checks("agent") if c.id in ref_agent.MUTANTS for v in c.versions]

    async def one(check: conformance.Check, version: str, gate: asyncio.Semaphore) -> str | None:
        async with gate:
            results, _ = await conformance.run("agent", [*REF, "--mutant", check.id], [version], [check], FAST)
        want = "FAILURE" if check.level == "MUST" else "WARNING"
        got = results[0]
        return None if got.verdict == want else f"{got.key}: {got.verdict} (wanted {want}) {got.detail}"

    async def every() -> list[str | None]:
        gate = asyncio.Semaphore(3)
        return await asyncio.gather(*(one(c, v, gate) for c, v in cases))

    missed = [m for m in asyncio.run(every()) if m]
    assert not missed, "mutants not caught:\n" + "\n".join(missed)


# near misses that break their rule in one version only
NEAR_MISS_VERSIONS = {"INI-05/v2-as-v1": ("v2",)}


@pytest.mark.parametrize("mutant", sorted(ref_agent.NEAR_MISSES))
def test_each_near_miss_fails_its_check(mutant: str) -> None:
    """Subtler ways to break a rule, each a misjudgement the kit once made: its check fails every one."""
    check = next(c for c in conformance.checks("agent") if c.id == mutant.split("/")[0])
    want = "FAILURE" if check.level == "MUST" else "WARNING"
    for version in NEAR_MISS_VERSIONS.get(mutant, check.versions):
        results, _ = _run([*REF, "--mutant", mutant], [version], [check])
        assert [r.verdict for r in results] == [want], f"{mutant}@{version}: {results[0].verdict} {results[0].detail}"


def test_a_v2_initialize_answered_in_v1_by_an_agent_that_speaks_v2_fails_the_run() -> None:
    """It used to skip every v2 check and exit 0."""
    out = _cli("agent", "--protocol", "v2", "--timeout", "3", "--", *REF, "--mutant", "INI-05/v2-as-v1")
    assert out.returncode == 1, out.stdout
    assert "FAILURE INI-05@v2" in out.stdout and "asked for 99 it answered 2" in out.stdout


EXACT = os.environ.get("ACP_KIT_EXACT") == "1"  # every mutant against the whole suite (minutes, not seconds)
SAMPLE = ["PL-03"]


def _changes(mutant: str, version: str) -> dict[str, str]:
    """The checks whose verdict the mutant changes, but SKIPPED ones that name the check they wait for."""
    results, _ = _run([*REF, "--mutant", mutant], [version], conformance.checks("agent"))
    return {
        r.key: r.verdict
        for r in results
        if r.verdict != _expected(r.check, r.version) and not (r.verdict == "SKIPPED" and f"see {mutant}" in r.detail)
    }


@pytest.mark.parametrize("mutant", sorted(ref_agent.MUTANTS) if EXACT else SAMPLE)
def test_a_mutant_fails_no_other_check(mutant: str) -> None:
    check = next(c for c in conformance.checks("agent") if c.id == mutant)
    want = "FAILURE" if check.level == "MUST" else "WARNING"
    for version in check.versions if EXACT else check.versions[-1:]:
        assert _changes(mutant, version) == {f"{mutant}@{version}": want}


CODING = [sys.executable, str(ROOT / "examples" / "coding_agent.py")]


@pytest.mark.slow
def test_the_coding_agent_passes_every_check_run_after_run() -> None:
    """Its turn ends in about 1 ms: a session/cancel that crosses the finished turn is not a failure.

    The kit counts a turn as interrupted while running only when it ends cancelled, or when it
    still sent output after the agent answered the request the kit sent right behind the cancel.
    """
    options = _agent.Options(timeout=5, turn_timeout=5)
    for run in range(5):
        results, _ = _run(CODING, ["v1", "v2"], conformance.checks("agent"), options)
        bad = [f"run {run}: {r.key}: {r.verdict} {r.detail}" for r in results if r.verdict in ("FAILURE", "WARNING")]
        assert not bad, "\n".join(bad)


# -- robustness ---------------------------------------------------------------

HANG = [sys.executable, "-c", "import sys, time; sys.stdin.readline(); time.sleep(120)  # acp-kit-hang"]
CRASH = [sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(3)"]
GARBAGE = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('not json at all\\n')"]
LONG_LINE = [
    sys.executable,
    "-c",
    "import sys; sys.stdin.readline(); sys.stdout.write('x' * (3 << 20)); sys.stdout.flush(); import time; time.sleep(120)",
]
CHILD = [
    sys.executable,
    "-c",
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)  # acp-kit-child']); sys.stdin.readline(); time.sleep(120)",
]


def _alive(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and int(pid) != os.getpid():
            found.append(int(pid))
    return found


@pytest.mark.parametrize(
    ("command", "detail"),
    [
        (HANG, "no answer to initialize"),
        (CRASH, "exited with status 3"),
        (GARBAGE, ""),
        (LONG_LINE, "no answer to initialize"),
    ],
    ids=["hang", "crash", "garbage", "long-line"],
)
def test_a_broken_agent_ends_with_a_verdict(command: list[str], detail: str) -> None:
    options = _agent.Options(timeout=1, turn_timeout=1)
    results, _ = _run(command, ["v1"], conformance.checks("agent", ("core",)), options)
    first = next(r for r in results if r.check.id == "INI-03")
    assert first.verdict == "FAILURE"
    assert detail in first.detail
    assert {r.verdict for r in results} <= {"FAILURE", "SKIPPED"}


def test_every_process_the_kit_started_is_ended() -> None:
    options = _agent.Options(timeout=1, turn_timeout=1)
    _run(CHILD, ["v1"], [c for c in conformance.checks("agent") if c.id == "INI-03"], options)
    _run(HANG, ["v1"], [c for c in conformance.checks("agent") if c.id == "INI-03"], options)
    assert not _alive("acp-kit-child") and not _alive("acp-kit-hang")


def test_the_garbage_lines_are_framing_failures_with_evidence() -> None:
    noisy = [
        sys.executable,
        "-c",
        "import runpy, sys; print('hello from a print()'); sys.stdout.flush();"
        f" sys.argv = [{REF[1]!r}]; runpy.run_path({REF[1]!r}, run_name='__main__')",
    ]
    check = next(c for c in conformance.checks("agent") if c.id == "TRN-01")
    results, _ = _run(noisy, ["v2"], [check])
    assert results[0].verdict == "FAILURE"
    assert any("hello from a print()" in line for line in results[0].evidence)


# -- the command line ----------------------------------------------------------


def test_exit_2_on_bad_usage_and_when_the_program_cannot_start(tmp_path: Path) -> None:
    assert _cli("agent").returncode == 2  # no program
    assert _cli("agent", "--case", "NOPE-1", "--", *REF).returncode == 2
    missing = _cli("agent", "--", str(tmp_path / "no-such-agent"))
    assert missing.returncode == 2 and "cannot start" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "bad").write_text("INI-03 extra words\n")
    assert _cli("agent", "--expected-failures", str(tmp_path / "bad"), "--", *REF).returncode == 2


def test_exit_1_on_a_must_failure_and_the_baseline(tmp_path: Path) -> None:
    args = ["agent", "--protocol", "v2", "--case", "SET-07", "--timeout", "3"]
    failing = _cli(*args, "--", *RAW_ECHO)
    assert failing.returncode == 1 and "FAILURE SET-07@v2" in failing.stdout
    baseline = tmp_path / "baseline.txt"
    baseline.write_text("# the raw echo has no session/resume\nSET-07@v2\n")
    assert _cli(*args, "--expected-failures", str(baseline), "--", *RAW_ECHO).returncode == 0
    stale = _cli(*args, "--expected-failures", str(baseline), "--", *REF)  # the reference passes: stale entry
    assert stale.returncode == 1 and "stale baseline entries (they pass now): SET-07@v2" in stale.stdout
    assert _cli(*args, "--", *REF).returncode == 0


def test_the_reports_in_every_format(tmp_path: Path) -> None:
    out = _cli(
        "agent",
        "--protocol",
        "v2",
        "--suite",
        "seeds",
        "--timeout",
        "3",
        "--json",
        str(tmp_path / "r.json"),
        "--junit",
        str(tmp_path / "r.xml"),
        "--markdown",
        str(tmp_path / "r.md"),
        "--transcript",
        str(tmp_path / "t"),
        "--",
        *REF,
        "--mutant",
        "SET-18",
    )
    assert out.returncode == 1
    assert "\033[" not in out.stdout  # no colour off a terminal
    data = json.loads((tmp_path / "r.json").read_text())
    by_id = {c["id"]: c for c in data["checks"]}
    assert by_id["SET-18"]["verdict"] == "FAILURE" and by_id["SET-18"]["evidence"]
    assert (
        by_id["SET-18"]["level"] == "MUST"
        and by_id["SET-18"]["binds"] == "agent"
        and "seed 001" in by_id["SET-18"]["source"]
    )
    assert data["summary"]["MUST"]["FAILURE"] == sum(c["verdict"] == "FAILURE" for c in data["checks"])
    assert data["outcome"]["unexpected_failures"] == ["SET-18@v2"]
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert int(suite.get("failures") or 0) == data["summary"]["MUST"]["FAILURE"]
    markdown = (tmp_path / "r.md").read_text()
    assert "| FAILURE | SET-18 | v2 | MUST |" in markdown and "## v2: what the agent advertised" in markdown
    lines = (tmp_path / "t" / "agent-v2.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["from"] == "kit" and "initialize" in json.loads(lines[0])["line"]


def test_the_setup_and_prompt_suites_split_the_checks_by_whether_they_need_a_model() -> None:
    every = conformance.checks("agent")
    setup, prompt = conformance.checks("agent", ("setup",)), conformance.checks("agent", ("prompt",))
    assert sorted(c.id for c in setup + prompt) == sorted(c.id for c in every)
    assert {"INI-03", "SET-02", "LST-04", "ARC-24", "RPC-01", "TRN-01"} <= {c.id for c in setup}
    assert {"INI-11", "PRM-10", "PL-07", "SET-20"} <= {c.id for c in prompt}
    seeds_setup = conformance.checks("agent", ("seeds", "setup"))
    assert seeds_setup and all(c.suite == "seeds" and not c.prompt for c in seeds_setup)
    assert _cli("agent", "--suite", "setup,nonsense", "--", *REF).returncode == 2


def test_the_json_summary_has_every_level_even_when_none_of_its_checks_ran(tmp_path: Path) -> None:
    out = _cli("agent", "--protocol", "v1", "--case", "INI-03", "--json", str(tmp_path / "r.json"), "--", *REF)
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert out.returncode == 0 and summary["SHOULD"] == dict.fromkeys(summary["SHOULD"], 0)
    assert summary["MUST"]["SUCCESS"] == 1


def test_list_names_every_check_once() -> None:
    out = _cli("agent", "--list")
    ids = [line.split()[0] for line in out.stdout.splitlines()]
    assert out.returncode == 0 and len(ids) == len(set(ids)) == len(conformance.checks("agent"))
