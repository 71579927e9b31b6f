"""The connections are typed by version from the schema's versions: a new version folder needs no hand edit.

The hand-written ``runtime/_connection/sides.py`` names no version; the generator
writes ``acp_types/_connection/sides.pyi`` beside its copy, one overload per
version of each side's constructor, ``on_transport`` and ``as_version``, which a
type checker reads instead of the module. Here: the overloads follow the version
list, a generated third version narrows under ``mypy --strict`` as v1 and v2 do,
and the stub describes the module it stands for (names, options, parameters).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import GENERATED, ROOT

from generator.pipeline import OPENERS, load_inputs, typed_stubs

SIDES = "acp_types/_connection/sides.pyi"
STUB = GENERATED / SIDES


def _overloads(stub: str) -> dict[tuple[str, str], list[str]]:
    """``(class or "", function) -> [the version literal of each overload, "any" where none]``, from the syntax tree."""
    found: dict[tuple[str, str], list[str]] = {}
    tree = ast.parse(stub)
    scopes = [("", tree.body)] + [(c.name, c.body) for c in tree.body if isinstance(c, ast.ClassDef)]
    for scope, body in scopes:
        for fn in body:
            if isinstance(fn, ast.FunctionDef) and any(ast.unparse(d) == "overload" for d in fn.decorator_list):
                literal = re.search(r"Literal\['(v\d+)'\]", ast.unparse(fn.args))
                found.setdefault((scope, fn.name), []).append(literal.group(1) if literal else "any")
    return found


def test_the_stubs_have_one_overload_per_version_for_each_version_list() -> None:
    v1, v2 = load_inputs().protocols.values()
    stubs_three = typed_stubs([v1, v2, replace(v2, version="v3")])
    stubs_one = typed_stubs([v1])
    three, one = stubs_three[SIDES], stubs_one[SIDES]
    for cls in ("AgentConnection", "ClientConnection"):
        assert _overloads(three)[cls, "__init__"] == ["v1", "v2", "v3", "any", "any"]
        assert _overloads(three)[cls, "on_transport"] == ["v1", "v2", "v3", "any", "any"]
        assert _overloads(three)[cls, "as_version"] == ["v1", "v2", "v3"]
        assert _overloads(one)[cls, "__init__"] == ["v1", "any", "any"]
        assert _overloads(one)[cls, "as_version"] == ["v1"]
    # the defaults of a connection that speaks several: the union over every version
    assert "default=v1.ClientPeer | v2.ClientPeer | v3.ClientPeer" in three
    assert "from acp_types import v1, v2, v3" in three
    assert "v2" not in one and "v3" not in one
    # spawn_agent and remote.connect: the same overloads, from stub-only modules beside them
    for path, opener in OPENERS.items():
        assert _overloads(stubs_three[path])["", opener["name"]] == ["v1", "v2", "v3", "any", "any"]
        assert _overloads(stubs_one[path])["", opener["name"]] == ["v1", "any", "any"]


def test_the_hand_written_module_names_no_version() -> None:
    source = (ROOT / "runtime" / "_connection" / "sides.py").read_text("utf-8")
    code = ast.unparse(ast.parse(source))  # comments and docstrings aside from what the code says
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            node.value.value = ""  # docstrings
    assert not re.search(r"\bv\d+\b", ast.unparse(tree)), "sides.py names a version: the stub's overloads do"


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text("utf-8"))


def _typed_dict_keys(tree: ast.Module) -> dict[str, set[str]]:
    """Each TypedDict's own and inherited keys."""
    own: dict[str, tuple[list[str], set[str]]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Options"):
            bases = [ast.unparse(b) for b in node.bases if ast.unparse(b) != "TypedDict"]
            mine = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            own[node.name] = (bases, mine)

    def keys(name: str) -> set[str]:
        bases, mine = own[name]
        return mine.union(*(keys(b) for b in bases))

    return {name: keys(name) for name in own}


def test_the_stub_describes_the_module_it_stands_for() -> None:
    from acp_types._connection import core, sides

    tree = _stub_tree()
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    assert set(sides.__all__) <= names
    stub_all = next(n for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__")
    assert ast.literal_eval(stub_all.value) == sides.__all__
    # the option sets are the connection's keyword options
    keyword = {
        name
        for name, p in inspect.signature(core.Connection.__init__).parameters.items()
        if p.kind is p.KEYWORD_ONLY and name != "versions"
    }
    keys = _typed_dict_keys(tree)
    assert keys["_Options"] == keyword
    assert keys["_TransportOptions"] == keyword - {"max_line_size"}
    # the option sets the copy declares for its own (in-place) type check are the stub's
    source = ast.parse((ROOT / "runtime" / "_connection" / "sides.py").read_text("utf-8"))
    in_place = next(n for n in source.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    assert _typed_dict_keys(ast.Module(body=in_place.body, type_ignores=[])) == keys
    # the functions and the methods it declares once take the parameters the module's take
    functions = {n.name: n for n in tree.body if isinstance(n, ast.AsyncFunctionDef)}
    for name in ("serve", "serve_stdio", "serve_transport"):
        stub_params = [a.arg for a in functions[name].args.args + functions[name].args.kwonlyargs]
        assert stub_params == list(inspect.signature(getattr(sides, name)).parameters)[: len(stub_params)], name
    client = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ClientConnection")
    init = next(n for n in client.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "initialize")
    assert [a.arg for a in init.args.args + init.args.kwonlyargs] == list(
        inspect.signature(sides.ClientConnection.initialize).parameters
    )


PROGRAM = """
from typing import Any

from typing_extensions import reveal_type

from acp_types import connection, remote


class Handler:
    def __init__(self, conn: Any) -> None:
        self.conn = conn


def check(reader: connection.Reader, writer: connection.Writer, transport: connection.Transport) -> None:
    agent = connection.AgentConnection(reader, writer, Handler, versions=("v3",))
    reveal_type(agent.peer)  # N: acp_types.v3.peer.ClientPeer
    reveal_type(agent.handler)  # N: prog.Handler
    client = connection.ClientConnection.on_transport(transport, Handler, versions=("v3",))
    reveal_type(client.peer_initialize)  # N: acp_types.v3.models.InitializeResponse | None
    both = connection.ClientConnection(reader, writer, Handler)
    reveal_type(both.peer)  # N: acp_types.v1.peer.AgentPeer | acp_types.v2.peer.AgentPeer | acp_types.v3.peer.AgentPeer
    reveal_type(both.as_version("v3").peer)  # N: acp_types.v3.peer.AgentPeer
    both.as_version("v4")  # E: call-overload
    connection.AgentConnection(reader, writer, Handler, versions=("v3",), max_line_sise=1)  # E: call-overload


async def opened() -> None:
    async with connection.spawn_agent(["agent"], Handler, versions=("v3",)) as spawned:
        reveal_type(spawned.peer)  # N: acp_types.v3.peer.AgentPeer
    async with remote.connect("ws://127.0.0.1:1/acp", Handler, versions=("v3",), token="t") as far:
        reveal_type(far.peer)  # N: acp_types.v3.peer.AgentPeer
    async with remote.connect("ws://127.0.0.1:1/acp", Handler) as either:
        reveal_type(either.peer)  # N: acp_types.v1.peer.AgentPeer | acp_types.v2.peer.AgentPeer | acp_types.v3.peer.AgentPeer
"""


@pytest.mark.slow
def test_a_generated_third_version_types_its_connections(tmp_path: Path) -> None:
    schema, out = tmp_path / "schema", tmp_path / "out"
    shutil.copytree(ROOT / "schema", schema)
    shutil.copytree(schema / "v2", schema / "v3")  # the v2 draft under a new number
    protocol = schema / "v3" / "protocol.json"
    doc = json.loads(protocol.read_text("utf-8"))
    doc.update(version="v3", protocolVersion=3)
    protocol.write_text(json.dumps(doc, indent=2), "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", str(schema), "generate", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "ACP_TYPES_JOBS": "1"},
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "prog.py").write_text(PROGRAM)
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--follow-imports=silent",
            "--show-error-codes",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "prog.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "MYPYPATH": str(out)},
    )
    lines = PROGRAM.splitlines()
    want_notes = {i + 1: m.group(1) for i, line in enumerate(lines) if (m := re.search(r"# N: (.+)$", line))}
    want_errors = {i + 1: m.group(1) for i, line in enumerate(lines) if (m := re.search(r"# E: ([\w-]+)", line))}
    notes = {int(m.group(1)): m.group(2) for m in re.finditer(r':(\d+): note: Revealed type is "([^"]+)"', ran.stdout)}
    errors = {int(m.group(1)): m.group(2) for m in re.finditer(r":(\d+): error: .*\[([\w-]+)\]", ran.stdout)}
    assert notes == want_notes, ran.stdout + ran.stderr
    assert errors == want_errors, ran.stdout + ran.stderr
