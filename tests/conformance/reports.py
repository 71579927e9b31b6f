"""Regenerate docs/conformance/: the kit's reports on real programs (``make conformance``).

    python tests/conformance/reports.py [--sdk-examples DIR]

Agents and clients: our reference programs and examples, the programs of
tests/interop on the official Python SDK (agent-client-protocol 0.12.1, in
.venv-interop, made as the interop tests make it) and on the TypeScript SDK
2.4.0 (tests/interop/ts, installed with npm). ``--sdk-examples DIR`` (a
checkout of the Python SDK's repository; its example files are not in the
package) adds its examples/echo_agent.py, examples/agent.py and
examples/client.py. A program whose runtime is missing is left out, and the
index says so. Each report comes in the kit's four formats (.txt, .md, .json,
.xml); index.md lists the MUST failures of each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from _venvs import ensure_venv  # noqa: E402

OUT = ROOT / "docs" / "conformance"
PY = sys.executable
HERE = "tests/conformance"


def programs(sdk_examples: Path | None) -> tuple[list[tuple[str, str, list[str]]], list[str]]:
    """(name, mode, command) of every program to check, and the reasons some are left out."""
    found = [
        ("reference-agent", "agent", [PY, f"{HERE}/ref_agent.py"]),
        ("reference-client", "client", [PY, f"{HERE}/ref_client.py", "--", "{agent}"]),
        ("example-echo-agent", "agent", [PY, "examples/echo_agent.py"]),
        ("example-client", "client", [PY, "examples/client.py", "--", "{agent}"]),
    ]
    left: list[str] = []
    try:
        sdk = ensure_venv(ROOT / ".venv-interop", PY, ROOT / "tests" / "interop" / "requirements.txt", timeout=300)
        found += [
            ("python-sdk-agent", "agent", [sdk, "tests/interop/sdk_agent.py"]),
            ("python-sdk-client", "client", [sdk, "tests/interop/sdk_client.py", "hello", "--", "{agent}"]),
        ]
        if sdk_examples is not None:
            ex = sdk_examples / "examples"
            found += [
                ("python-sdk-example-echo-agent", "agent", [sdk, str(ex / "echo_agent.py")]),
                ("python-sdk-example-agent", "agent", [sdk, str(ex / "agent.py")]),
                ("python-sdk-example-client", "client", [sdk, str(ex / "client.py"), "{agent}"]),
            ]
    except AssertionError as exc:
        left.append(f"the Python SDK: {str(exc)[:200]}")
    node, npm = shutil.which("node"), shutil.which("npm")
    ts = ROOT / "tests" / "interop" / "ts"
    if node and npm:
        if not (ts / "node_modules" / "@agentclientprotocol" / "sdk").exists():
            subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=ts, check=True, timeout=300)
        found += [
            ("typescript-sdk-agent", "agent", [node, "tests/interop/ts/agent.mjs"]),
            ("typescript-sdk-client", "client", [node, "tests/interop/ts/client.mjs", "hello", "--", "{agent}"]),
        ]
    else:
        left.append("the TypeScript SDK: node and npm are not on PATH")
    return found, left


def _row(name: str, mode: str) -> str:
    """The index's line for one report: its MUST failures, or why nothing was judged."""
    data = json.loads((OUT / f"{name}.json").read_text("utf-8"))
    counts = {
        level: sum(v for k, v in c.items() if k in ("FAILURE", "WARNING")) for level, c in data["summary"].items()
    }
    judged = sum(c["verdict"] in ("SUCCESS", "FAILURE", "WARNING") for c in data["checks"])
    failures = ", ".join(data["outcome"]["unexpected_failures"]) or "none"
    if not judged:
        failures = "nothing judged: " + (data["checks"][0]["detail"][:160] if data["checks"] else "no check ran")
    return f"| [{name}]({name}.md) | {mode} | {failures} | {counts.get('SHOULD', 0)} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sdk-examples", type=Path, help="a checkout of the official Python SDK's repository")
    args = parser.parse_args()
    found, left = programs(args.sdk_examples)
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated"), "NO_COLOR": "1"}
    rows = []
    for name, mode, command in found:
        base = OUT / name
        # each program keeps its sessions (acp_types.agent's store, the reference agent's file) apart,
        # and never in the user's state folder
        env["ACP_TYPES_STORE"] = str(Path(tempfile.mkdtemp(prefix="acp-conformance-")) / "sessions.sqlite3")
        extra = ["--client-input", "hello\\n"] if "example-client" in name and "python-sdk" in name else []
        done = subprocess.run(
            [
                PY,
                "-m",
                "acp_types.conformance",
                mode,
                *extra,
                "--json",
                f"{base}.json",
                "--junit",
                f"{base}.xml",
                "--markdown",
                f"{base}.md",
                "--",
                *command,
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=900,
        )
        base.with_suffix(".txt").write_text(done.stdout, "utf-8")
        for suffix in (".txt", ".md", ".json", ".xml"):  # no machine's paths in a committed report
            path = base.with_suffix(suffix)
            if path.exists():
                text = path.read_text("utf-8")
                for prefix, short in (
                    (str(ROOT / ".venv-interop" / "bin" / "python"), "python"),
                    (sys.executable, "python"),
                    (str(args.sdk_examples or "\0") + "/", "$SDK_EXAMPLES/"),
                    (str(ROOT) + "/", ""),
                ):
                    text = text.replace(prefix, short)
                path.write_text(text, "utf-8")
        if done.returncode == 2:
            rows.append(f"| {name} | {mode} | could not run: {done.stderr.strip()[:200]} | |")
            continue
        rows.append(_row(name, mode))
        print(rows[-1])
    index = [
        "# Conformance reports",
        "",
        "Written by `make conformance` (tests/conformance/reports.py); each program's report is here in the",
        "kit's four formats (.txt, .md, .json, .xml). Python SDK: agent-client-protocol 0.12.1;",
        "TypeScript SDK: @agentclientprotocol/sdk 2.4.0.",
        "",
        "| program | mode | MUST failures | SHOULD warnings |",
        "|---|---|---|---|",
        *rows,
    ]
    if left:
        index += ["", "Left out: " + "; ".join(left)]
    (OUT / "index.md").write_text("\n".join(index) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
