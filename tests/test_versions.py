"""Versions are data: adding one is adding its folder (and its entries in the cross-version map)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def _add_v3(schema: Path) -> None:
    """A v3 that is the v2 draft under a new number: nothing to map, since every name is the same."""
    shutil.copytree(schema / "v2", schema / "v3")
    protocol = schema / "v3" / "protocol.json"
    doc = json.loads(protocol.read_text("utf-8"))
    doc.update(version="v3", protocolVersion=3)
    protocol.write_text(json.dumps(doc, indent=2), "utf-8")


def test_a_third_version_folder_generates_a_third_package(tmp_path: Path) -> None:
    schema, out = tmp_path / "schema", tmp_path / "out"
    shutil.copytree(ROOT / "schema", schema)
    _add_v3(schema)
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", str(schema), "generate", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "ACP_TYPES_JOBS": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert (out / "acp_types" / "v3" / "models.py").is_file()
    assert (out / "docs" / "v2-to-v3.md").is_file() and (out / "docs" / "v1-to-v2.md").is_file()
    table = (out / "docs" / "capabilities.md").read_text("utf-8")
    assert "| method (v1) | method (v2) | method (v3) |" in table
    probe = "import acp_types, acp_types.v3 as v3; print(acp_types.VERSIONS, v3.METHODS['session/new'].side)"
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(out)}
    )
    assert ran.stdout.split("]")[0] == "['v1', 'v2', 'v3'", ran.stderr


def test_a_new_version_that_renames_without_a_map_entry_is_refused(tmp_path: Path) -> None:
    schema = tmp_path / "schema"
    shutil.copytree(ROOT / "schema", schema)
    _add_v3(schema)
    protocol = schema / "v3" / "protocol.json"
    doc = json.loads(protocol.read_text("utf-8"))
    doc["methods"]["session/remove"] = doc["methods"].pop("session/delete")
    protocol.write_text(json.dumps(doc, indent=2), "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", str(schema), "validate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "v2 method 'session/delete' has no counterpart in v3 and is not listed" in done.stderr
    assert '{"v2": "session/delete", "v3": <its v3 name or null>}' in done.stderr


def test_both_versions_carry_the_proxy_chain_methods() -> None:
    """Issue 29 item 1: proxy/initialize and proxy/successor are in each version's METHODS, on the proxy side,
    with the handler names a proxy (acp_types.proxy) and a conductor dispatch on; proxy/successor is read as a
    request or as a notification, each with its own params model, and the Proxy interface has both stubs."""
    import importlib
    import inspect

    for version in ("v1", "v2"):
        pkg = importlib.import_module(f"acp_types.{version}")
        methods = importlib.import_module(f"acp_types.{version}.methods").METHODS
        models = importlib.import_module(f"acp_types.{version}.models")
        init, successor = methods["proxy/initialize"], methods["proxy/successor"]
        assert (init.side, init.kind, init.handler, init.capability) == ("proxy", "request", "proxy_initialize", None)
        assert (successor.side, successor.kind, successor.handler) == ("proxy", "request", "proxy_successor")
        assert successor.params is models.ProxySuccessorRequest
        assert successor.notification_params is models.ProxySuccessorNotification
        request = pkg.parse_message(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "proxy/successor", "params": {"method": "session/new"}})
        )
        note = pkg.parse_message(
            json.dumps({"jsonrpc": "2.0", "method": "proxy/successor", "params": {"method": "session/update"}})
        )
        assert isinstance(request.params, models.ProxySuccessorRequest)
        assert isinstance(note.params, models.ProxySuccessorNotification)
        assert {n for n, _ in inspect.getmembers(pkg.Proxy) if n.startswith("proxy_")} == {
            "proxy_initialize",
            "proxy_successor",
        }
        assert not hasattr(pkg.Agent, "proxy_initialize") and not hasattr(pkg.Client, "proxy_successor")
