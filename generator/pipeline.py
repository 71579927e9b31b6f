"""The whole pipeline: schemas -> checks -> intermediate model -> rendered files.

``build_outputs`` returns ``{path relative to generated/: text}`` and touches
no file; writing, checking and golden tests all work on that mapping.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from collections.abc import Iterable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator import __version__
from generator.crossversion import CrossMap, build_crossmap, entry_problems
from generator.diff import changelog
from generator.diff import report as diff_report
from generator.diff.compare import pair_names
from generator.errors import Problem, SchemaError
from generator.loader import load_crossversion, load_version, meta_document
from generator.model import Method, Protocol, build_protocol
from generator.render import templated
from generator.render.formatting import format_python
from generator.render.models import render_models
from generator.sources import DirSource

ROOT = Path(__file__).resolve().parents[1]
VERSION_FOLDER = re.compile(r"v([1-9][0-9]{0,5})")
PACKAGE = "acp_types"
CROSSVERSION = "schema/crossversion.json"
RUNTIME_DIR = ROOT / "runtime"
# Each version module, with the part of the version folder it is rendered from.
VERSION_MODULES = {
    "__init__": "{src}/ (its public names)",
    "methods": "{src}/protocol.json and the definitions it names",
    "interfaces": "{src}/protocol.json",
    "capabilities": "{src}/protocol.json",
    "messages": "{src}/protocol.json",
    "envelopes": "{src}/protocol.json and the definitions it names",
    "peer": "{src}/protocol.json",
}


@dataclass(frozen=True)
class Inputs:
    """Every version, oldest first, and the cross-version map of each adjacent pair."""

    protocols: dict[str, Protocol]
    crossmaps: tuple[CrossMap, ...]
    schema_root: Path = ROOT / "schema"

    def crossmap(self, left: str, right: str) -> CrossMap:
        for cm in self.crossmaps:
            if (cm.left, cm.right) == (left, right):
                return cm
        raise KeyError(f"no cross-version map between {left} and {right} (only adjacent versions are mapped)")

    def pairs(self) -> list[tuple[Protocol, Protocol, CrossMap]]:
        """(older, newer, map) for each pair of adjacent versions."""
        return [(self.protocols[cm.left], self.protocols[cm.right], cm) for cm in self.crossmaps]


def discover_versions(root: Path) -> list[str]:
    """The version folders under ``root`` (``v1``, ``v2``, ...), oldest first."""
    try:
        names = [p.name for p in root.iterdir() if p.is_dir() and VERSION_FOLDER.fullmatch(p.name)]
    except OSError:
        names = []
    return sorted(names, key=lambda name: int(name[1:]))


def load_protocol(folder: Path, label: str) -> Protocol:
    return build_protocol(load_version(DirSource(folder, label)))


def load_inputs(schema_root: Path | None = None) -> Inputs:
    """Load and check every version and the cross-version map; raise SchemaError listing every problem."""
    root = (schema_root or ROOT / "schema").resolve()
    prefix = _schema_label(root)
    protocols: dict[str, Protocol] = {}
    problems: list[Problem] = []
    versions = discover_versions(root)
    if not versions:
        raise SchemaError(
            [
                Problem(
                    f"{prefix}/",
                    "",
                    "holds no version folder (v1/, v2/, ...)",
                    "point --schema at the folder that holds the version folders",
                )
            ]
        )
    for version in versions:
        try:
            proto = load_protocol(root / version, f"{prefix}/{version}")
        except SchemaError as exc:
            problems.extend(exc.problems)
            continue
        if proto.version != version:
            problems.append(
                Problem(
                    f"{prefix}/{version}/protocol.json",
                    "/version",
                    f"says {proto.version!r} but lives in {prefix}/{version}",
                    f'set "version": "{version}"',
                )
            )
        protocols[version] = proto
    if problems:
        raise SchemaError(problems)
    cv_label = f"{prefix}/crossversion.json"
    doc = load_crossversion(root / "crossversion.json", cv_label)
    entry_errors = entry_problems(doc, cv_label)
    if entry_errors:
        raise SchemaError(entry_errors)
    crossmaps = []
    for left, right in zip(versions, versions[1:], strict=False):
        try:
            crossmaps.append(build_crossmap(doc, protocols[left], protocols[right], cv_label))
        except SchemaError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SchemaError(problems)
    return Inputs(protocols, tuple(crossmaps), root)


def _schema_label(root: Path) -> str:
    return "schema" if root.resolve() == (ROOT / "schema").resolve() else _display(root)


def _display(path: Path) -> str:
    """A path as the user would write it: relative to the working folder when inside it."""
    import os

    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()


def header(source: str, comment: str = "#") -> str:
    """The first lines of a generated file: what it comes from, and how to regenerate it.

    It names only the file's own source and carries no digest or generator
    version, so a file changes only when its own text does.
    """
    return (
        f"{comment} Generated by the acp-types generator from {source}. Do not edit.\n"
        f"{comment} Regenerate with `make generate` after changing the schema; see README.md."
    )


def build_outputs(
    inputs: Inputs | None = None, *, versions: Iterable[str] | None = None, docs: bool = True
) -> dict[str, str]:
    """Render every file of generated/ in memory.

    ``versions`` limits the package to those version modules, and ``docs=False``
    leaves out generated/docs/: the tree is then partial (for tests that need
    one version's code only), and must not be written over generated/.

    Each version's models (datamodel-code-generator plus black, most of the
    time) render in a process of their own while this one renders the rest;
    ``ACP_TYPES_JOBS=1`` keeps everything in one process. The bytes do not
    depend on it: every file is rendered by the same code from the same model.
    """
    inputs = inputs or load_inputs()
    chosen = [inputs.protocols[v] for v in (versions if versions is not None else inputs.protocols)]
    with _model_workers(len(chosen)) as workers:
        models = {workers.submit(_models_of, proto): proto.version for proto in chosen}
        out = _render_package(inputs, chosen)
        if docs:
            out.update(_render_docs(inputs))
        for future in as_completed(models):
            path, text = future.result()
            out[path] = text
    return dict(sorted(out.items()))


def _render_package(inputs: Inputs, chosen: list[Protocol]) -> dict[str, str]:
    """The package but its models: our Jinja templates, the runtime and the bundled schemas."""
    out: dict[str, str] = {}
    pkg_header = header("the version folders of schema/")
    out[f"{PACKAGE}/__init__.py"] = format_python(
        f"{PACKAGE}/__init__.py",
        templated.render(
            "package/__init__.py.jinja2",
            header=pkg_header,
            versions=list(inputs.protocols),
            protocols=list(inputs.protocols.values()),
            package_version=__version__,
        ),
    )
    out[f"{PACKAGE}/_protocol.py"] = format_python(
        f"{PACKAGE}/_protocol.py",
        templated.render(
            "package/_protocol.py.jinja2",
            header=header("generator/metaschemas/ and the RequestId of each version"),
            **protocol_facts(inputs),
        ),
    )
    out.update(support_files())
    out.update(typed_stubs(list(inputs.protocols.values())))
    out[f"{PACKAGE}/py.typed"] = ""
    for proto in chosen:
        ctx = templated.version_context(proto)
        base = f"{PACKAGE}/{proto.version}"
        for name, source in VERSION_MODULES.items():
            hdr = header(source.format(src=proto.source))
            path = f"{base}/{name}.py"
            out[path] = format_python(path, templated.render(f"version/{name}.py.jinja2", header=hdr, **ctx))
        out[f"{base}/schema.json"] = json.dumps(proto.bundle, indent=2, ensure_ascii=False) + "\n"
        out[f"{base}/schema.stable.json"] = json.dumps(proto.stable_bundle, indent=2, ensure_ascii=False) + "\n"
    return out


# The functions that open a typed ClientConnection, each given its overloads by a stub-only module
# beside it (``_typed.pyi``, imported under TYPE_CHECKING): its module, first parameter and options.
OPENERS = {
    f"{PACKAGE}/_connection/_typed.pyi": {
        "name": "spawn_agent",
        "module": f"{PACKAGE}._connection.process",
        "target": "command: Sequence[str]",
        "options": "_SpawnOptions",
        "options_module": f"{PACKAGE}._connection.sides",
    },
    f"{PACKAGE}/remote/_typed.pyi": {
        "name": "connect",
        "module": f"{PACKAGE}.remote",
        "target": "url: str",
        "options": "_ConnectOptions",
        "options_module": f"{PACKAGE}.remote",
    },
}


def typed_stubs(protocols: list[Protocol]) -> dict[str, str]:
    """The per-version overloads of the connections, one per version in ``protocols``: ``{path: text}``.

    The hand-written runtime names no version where it types a connection. ``_connection/sides.pyi``
    is what a type checker reads instead of ``sides.py``: each side's constructor, ``on_transport``
    and ``as_version`` overloaded per version. Each of :data:`OPENERS` gets the same overloads from
    a stub-only module. So a new version folder types its connections (``versions=("v3",)``) with
    no hand edit.
    """
    versions = [
        {
            "name": p.version,
            "ClientPeer": f"{p.version}.ClientPeer",
            "AgentPeer": f"{p.version}.AgentPeer",
            "request": f"{p.version}.{p.init_request}",
            "response": f"{p.version}.{p.init_response}",
        }
        for p in protocols
    ]
    hdr = header("the version folders of schema/ (the typing of the runtime's connections)")
    out = {
        f"{PACKAGE}/_connection/sides.pyi": templated.render(
            "package/_connection/sides.pyi.jinja2", header=hdr, versions=versions
        )
    }
    for path, opener in OPENERS.items():
        out[path] = templated.render("package/opener.pyi.jinja2", header=hdr, versions=versions, **opener)
    return {path: format_python(path, text) for path, text in out.items()}


_JSON_TO_PYTHON = {"integer": "int", "string": "str", "null": "None", "number": "float", "boolean": "bool"}


def protocol_facts(inputs: Inputs) -> dict[str, list[str]]:
    """The enums of the schema format and the request id type, for ``acp_types/_protocol.py``."""
    method = meta_document("protocol")["$defs"]["method"]["properties"]
    feature = meta_document("protocol")["$defs"]["feature"]["properties"]
    id_types = {tuple(proto.bundle["$defs"]["RequestId"]["type"]) for proto in inputs.protocols.values()}
    if len(id_types) != 1:
        raise SchemaError(
            [
                Problem(
                    f"{proto.source}/jsonrpc.json",
                    "/$defs/RequestId/type",
                    "the versions define RequestId differently, but the JSON-RPC layer is shared",
                    "give RequestId the same type list in every version",
                )
                for proto in inputs.protocols.values()
            ]
        )
    (json_types,) = id_types
    return {
        "sides": method["side"]["enum"],
        "kinds": method["kind"]["enum"],
        "stabilities": method["stability"]["enum"],
        "feature_sides": feature["side"]["enum"],
        "request_id": [_JSON_TO_PYTHON[t] for t in json_types],
    }


def _render_docs(inputs: Inputs) -> dict[str, str]:
    """generated/docs/: the capability tables, a diff report per adjacent pair of versions, the rule table, and
    each version's changes since its previous release (schema/releases.json)."""
    out: dict[str, str] = {}
    md_header = header("the protocol.json of each version in schema/", comment="").replace("\n", " ").strip()
    out["docs/capabilities.md"] = templated.render(
        "docs/capabilities.md.jinja2", header_md=md_header, **capability_rows(inputs)
    )
    for old, new, cm in inputs.pairs():
        out[f"docs/{old.version}-to-{new.version}.md"] = diff_report.markdown_report(old, new, cm)
    out["docs/diff-rules.md"] = diff_report.rules_markdown()
    out.update(changelog.changelogs(inputs.protocols, inputs.schema_root, _schema_label(inputs.schema_root)))
    return out


def support_files() -> dict[str, str]:
    """The hand-written modules of ``runtime/`` and its subpackages, copied into the package unchanged."""
    return {
        f"{PACKAGE}/{path.relative_to(RUNTIME_DIR).as_posix()}": path.read_text("utf-8")
        for path in sorted(RUNTIME_DIR.rglob("*.py"))
        if "__pycache__" not in path.relative_to(RUNTIME_DIR).parts
    }


def _models_of(proto: Protocol) -> tuple[str, str]:
    path = f"{PACKAGE}/{proto.version}/models.py"
    return path, format_python(path, render_models(proto, header(f"the definitions in {proto.source}/")))


class _InProcess(Executor):
    """An executor that runs each call at once, in this process (one job, or no fork)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def _model_workers(versions: int) -> Executor:
    jobs = int(os.environ.get("ACP_TYPES_JOBS", "0") or 0) or min(versions, os.cpu_count() or 1)
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return _InProcess()
    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))


def capability_rows(inputs: Inputs) -> dict[str, object]:
    """The capability tables: one row per method (paired across versions by the maps) and per feature."""
    protos = list(inputs.protocols.values())

    def cap(m: Method | None) -> str:
        if m is None:
            return "—"
        return f"`{'.'.join(m.capability)}`" if m.capability else "baseline"

    chains: list[list[Method | None]] = [[m] + [None] * (len(protos) - 1) for m in protos[0].methods]
    for i, (old, new, cm) in enumerate(inputs.pairs(), start=1):
        pairs = pair_names((m.name for m in old.methods), (m.name for m in new.methods), list(cm.methods))
        for chain in chains:
            before = chain[i - 1]
            other = pairs.get(before.name) if before is not None else None
            chain[i] = new.method(other) if other else None
        for name in pairs.added:
            chains.append([None] * i + [new.method(name)] + [None] * (len(protos) - i - 1))
    rows = []
    for chain in chains:
        first = next(m for m in chain if m is not None)
        rows.append(
            {
                "names": [f"`{m.name}`" if m else "—" for m in chain],
                "side": first.side,
                "caps": [cap(m) for m in chain],
                "stability": " / ".join(m.stability if m else "—" for m in chain),
            }
        )
    by_version = [{f.name: f for f in proto.features} for proto in protos]
    feats = []
    for name in sorted(set().union(*by_version)):
        present = [features.get(name) for features in by_version]
        first_feature = next(f for f in present if f is not None)
        feats.append(
            {
                "name": name,
                "side": first_feature.side,
                "caps": [f"`{'.'.join(f.capability)}`" if f else "—" for f in present],
                "description": first_feature.description,
                "stability": " / ".join(f.stability if f else "—" for f in present),
            }
        )
    return {"versions": [proto.version for proto in protos], "method_rows": rows, "feature_rows": feats}
