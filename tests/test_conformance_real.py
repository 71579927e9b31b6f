"""The kit on programs that behave like real agents: slow to make sessions, no working model, a login.

A real agent installed from npm and run offline (claude-agent-acp with a dummy
key) takes many seconds per session/new and never finishes a prompt turn. The
slow fake agent here (tests/conformance/ref_agent.py --slow S --stuck) does the
same: the run must finish with a full report in which every verdict is right
(the checks that need a finished turn SKIPPED, saying why; the ones that cancel
a running turn judged), and a run stopped by SIGTERM or Ctrl-C must leave a
partial report, marked as such, with exit 2.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_conformance import _alive, _cli

from acp_types import conformance

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SLOW = [sys.executable, str(ROOT / "tests" / "conformance" / "ref_agent.py"), "--slow", "2.5", "--stuck"]
LOCKED = [sys.executable, str(ROOT / "tests" / "conformance" / "locked_agent.py")]
BUDGET = ["--timeout", "8", "--turn-timeout", "2"]  # session/new takes 2.5 s: the kit makes spare sessions ahead


def test_a_slow_agent_without_a_model_gets_a_full_report_with_right_verdicts(tmp_path: Path) -> None:
    out = _cli("agent", *BUDGET, "--json", str(tmp_path / "r.json"), "--", *SLOW, timeout=400)
    assert out.returncode == 0, out.stdout[-3000:]
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["partial"] is False
    results = {f"{c['id']}@{c['version']}": c for c in data["checks"]}
    wanted = {f"{c.id}@{v}" for c in conformance.checks("agent") for v in c.versions}
    assert set(results) == wanted  # every check has its verdict, in both versions
    assert not [k for k, c in results.items() if c["verdict"] in ("FAILURE", "WARNING")]
    # a turn that cannot finish is a clear SKIP, not a failure of the agent ...
    assert results["PRM-03@v1"]["verdict"] == "SKIPPED" and "did not finish" in results["INI-11@v1"]["detail"]
    assert results["PL-07@v2"]["verdict"] == "SKIPPED" and "needs a prompt turn" in results["PL-07@v2"]["detail"]
    # ... while cancelling a running turn, and everything that needs no model, is judged
    for key in ("PRM-10@v1", "PL-12@v2", "SET-20@v1", "SET-20@v2", "ARC-13@v2", "SET-02@v1", "LST-04@v2"):
        assert results[key]["verdict"] == "SUCCESS", (key, results[key]["detail"])
    # printed as each check ended: the text has every result line before the summary
    assert out.stdout.index("SET-02@v1") < out.stdout.index("level    SUCCESS")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_an_interrupted_run_leaves_a_partial_report_and_exit_2(tmp_path: Path, sig: signal.Signals) -> None:
    marker = f"acp-kit-interrupted-{os.getpid()}-{sig.name}"
    reports = ["--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")]
    reports += ["--markdown", str(tmp_path / "r.md")]
    kit = subprocess.Popen(
        [sys.executable, "-m", "acp_types.conformance", "agent", *BUDGET, *reports, "--", *SLOW, marker],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "generated")},
        cwd=ROOT,
    )
    assert kit.stdout is not None
    seen = []
    for line in kit.stdout:  # results come as each check ends: stop the run once SET-02@v1 has its own
        seen.append(line)
        if "SET-02@v1" in line:
            break
    kit.send_signal(sig)
    rest, err = kit.communicate(timeout=60)
    assert kit.returncode == 2, err
    assert "Traceback" not in err
    text = "".join(seen) + rest
    assert "PARTIAL REPORT: interrupted by " + sig.name in text and text.rstrip().endswith("PARTIAL")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["partial"] is True and data["outcome"]["partial"] is True
    keys = [f"{c['id']}@{c['version']}" for c in data["checks"]]
    assert "SET-02@v1" in keys and "STATE-01@v2" not in keys  # what ended before the signal, not more
    assert "SHOULD" in data["summary"]
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert suite.find("properties/property[@name='partial']") is not None
    assert "**Partial report**" in (tmp_path / "r.md").read_text()
    assert not _alive(marker)  # the agent's process group is ended too


def test_what_needs_a_login_is_skipped_without_auth_and_judged_with_it() -> None:
    args = ["agent", "--protocol", "v1", "--suite", "setup", "--timeout", "3"]
    locked = _cli(*args, "--", *LOCKED)
    assert locked.returncode == 0, locked.stdout[-2000:]
    assert "\nFAILURE " not in locked.stdout and "PASS" in locked.stdout
    assert "SKIPPED SET-02@v1" in locked.stdout and "give --auth METHOD_ID (the agent offers: token)" in locked.stdout
    assert "SUCCESS INI-03@v1" in locked.stdout  # what needs no login is still judged
    for auth in ("token", "auto"):
        opened = _cli(*args, "--auth", auth, "--", *LOCKED)
        assert opened.returncode == 0 and "SUCCESS SET-02@v1" in opened.stdout, opened.stdout[-2000:]
    wrong = _cli(*args, "--auth", "password", "--", *LOCKED)
    assert "SKIPPED SET-02@v1" in wrong.stdout and "no such auth method (it offers: token)" in wrong.stdout
