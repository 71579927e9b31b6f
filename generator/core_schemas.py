"""The stored core schemas: each model class's pydantic core schema, recorded at generation time.

The first message after import used to spend most of its time in pydantic's
schema generation (``GenerateSchema``, in Python) for the ~40 models of its
class tree. The generator therefore imports the package it has just rendered
(in a subprocess, with the pydantic it pins), asks pydantic for the core
schema of every model class as a fresh import would make it
(``acp_types._build.generate_schema``) and writes them into the package as
``acp_types/<version>/_core_schemas_<n>.py`` (64 modules a version): one
marshalled entry per class, loaded one at a time, only when that class is
completed (``acp_types._build``).

An entry (key ``model:<ClassName>``) is the marshal data of ``(schema,
bounded, nodes, needs, holes)``:

- ``schema``: the class's core schema, as pydantic made it;
- ``bounded``: for a class that is the payload of a method, ``(copy,
  classes)``: the entry points' copy with error reports bounded
  (``acp_types._validators``), sharing every node it does not change, and the
  model classes in it; else ``None``;
- ``nodes``: the model nodes inside ``schema`` (for ``_build._FOUND``);
- ``needs``: which of the schema's definitions the class's serializer needs,
  and for each node which ones that class's own schema and serializer need
  (:func:`definition_needs`), so that pydantic-core is not handed definitions
  nobody uses (it builds every one it is given);
- ``holes``: what is not data (classes, functions, bound methods, partials,
  key checks) as references looked up again at load, with the places they
  go (:func:`encode`); the few closures in a schema are stored as the lookup
  that finds them again (a union alias's discriminator, a class's model
  validator).

Every string is one object and every equal container is one object
(:func:`_canonical`), and the marshal bytes are written by a canonical writer
(:class:`_Marshal`), so the bytes depend only on the schema's value and shape,
never on the interpreter, its string interning or the hash seed. With
``ACP_TYPES_CHECK_STORE=1`` each entry is loaded again at generation time and
compared with the schema it was made from (:func:`same`).

The runtime uses an entry only when the installed pydantic and pydantic-core
are the versions recorded here; otherwise it generates the schema as before.
"""

from __future__ import annotations

import json
import marshal
import os
import re
import struct
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

PACKAGE = "acp_types"
STORE_MODULE = "_core_schemas"
_COLLECTIONS = frozenset({"list", "dict", "set", "frozenset", "tuple"})
_BOUND_SKIPS = ("metadata", "serialization", "cls", "function", "default")
_REF_KEYS = frozenset({"ref", "schema_ref"})


class StoreBug(Exception):
    """The stored schemas could not be made: a bug in the generator or in the rendered package."""


# --------------------------------------------------------------------------- in the generator's process


class Recording:
    """One version's store being recorded: a subprocess that imports the rendered package and records it.

    Started as soon as the version's package is rendered (its models
    included), so that it runs while the other version's models still render;
    :meth:`result` waits for it. ``files`` are written to a temporary folder
    of its own; nothing else is touched. :meth:`close` stops it and removes
    the folder (:meth:`result` does both too).
    """

    def __init__(self, files: Mapping[str, str], version: str, header: Callable[[str], str]) -> None:
        self.version = version
        self.header = header
        self._tmp = tempfile.TemporaryDirectory(prefix="acp-types-store-")
        try:
            tmp = self._tmp.name
            for path, text in files.items():
                if path.startswith(f"{PACKAGE}/") and path.endswith(".py"):
                    target = Path(tmp, path)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, "utf-8")
            env = {**os.environ, "PYTHONPATH": tmp, "PYTHONDONTWRITEBYTECODE": "1"}
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-m", "generator.core_schemas", tmp, version],
                cwd=Path(__file__).resolve().parents[1], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except BaseException:
            self._tmp.cleanup()
            raise

    def result(self) -> dict[str, str]:
        """``{path: text}`` of the version's store modules."""
        assert self._proc is not None, "result() after close()"
        try:
            stdout, stderr = self._proc.communicate()
            failed = self._proc.returncode != 0
        finally:
            self.close()
        if failed:
            raise StoreBug(f"recording the core schemas of {self.version} failed:\n"
                           f"{stderr.decode(errors='replace')[-3000:]}")
        record = json.loads(stdout)
        out: dict[str, str] = {}
        for shard, entries in enumerate(record["shards"]):
            name = f"{PACKAGE}/{self.version}/{STORE_MODULE}_{shard}.py"
            out[name] = module_text(record, entries, self.header(f"the models of {PACKAGE}.{self.version}"))
        return out

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.communicate()
            self._proc = None
        self._tmp.cleanup()


def module_text(record: Mapping[str, Any], entries: Iterable[tuple[str, str]], header: str) -> str:
    """One store module of a version from what the subprocess recorded.

    Each entry is a ``bytes`` literal (the subprocess hands it over as a
    ``str`` of the same code points, latin-1): in the compiled module it is
    the bytes themselves, copied as they are when the module loads and given
    to ``marshal.loads`` as they are. A ``str`` of those code points would be
    2% shorter in source, but the compiled module would hold it as UTF-8,
    decoded on loading the module and encoded again for ``marshal.loads``
    (about a quarter of importing the first message's store module).
    """
    lines = [
        header,
        '"""Core schemas of model classes, recorded by the generator (see ``acp_types._build.stored``)."""',
        "",
        f"PYDANTIC = {record['pydantic']!r}",
        f"PYDANTIC_CORE = {record['pydantic_core']!r}",
        "",
        "SCHEMAS: dict[str, bytes] = {",
    ]
    lines.extend(f"    {key!r}: {text.encode('latin-1')!r}," for key, text in entries)
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- in the subprocess


def record_version(version: str) -> dict[str, Any]:
    """Import ``acp_types.<version>`` and record every model class's entry (run in a fresh process)."""
    import importlib

    import pydantic
    import pydantic_core
    from pydantic import BaseModel

    package = importlib.import_module(f"{PACKAGE}.{version}")
    models = importlib.import_module(f"{PACKAGE}.{version}.models")
    from acp_types import _build

    classes = [
        value for name, value in vars(models).items()
        if isinstance(value, type) and issubclass(value, BaseModel)
        and value.__module__ == models.__name__ and value.__qualname__ == name
    ]
    payloads: set[Any] = set()
    for spec in package.METHODS.values():
        payloads.update(t for t in (spec.params, spec.result, spec.notification_params) if t in classes)
    functions = closure_index(models)
    refs = Refs(version)
    entries = []
    for cls in classes:
        if cls.__pydantic_complete__:
            raise StoreBug(f"{cls.__name__} was completed by importing the package; nothing should be")
        if not _build._completable(cls):
            continue
        try:
            schema = _build.generate_schema(cls)
        except Exception:  # noqa: S112 (its own completion reports it; the runtime generates it then)
            continue
        entries.append((f"model:{cls.__name__}", encode(entry(schema, cls in payloads), functions, refs)))
    shards: list[list[tuple[str, str]]] = [[] for _ in range(_build.SHARDS)]
    for key, data in entries:
        shards[_build.shard_of(key)].append((key, data.decode("latin-1")))
    return {"pydantic": pydantic.VERSION, "pydantic_core": pydantic_core.__version__, "shards": shards}


def entry(schema: Any, payload: bool) -> tuple[Any, Any]:
    """``(schema, bounded)`` of a class of core schema ``schema`` (see the module's docstring), checked against the runtime."""
    from acp_types._runtime import model_nodes
    from acp_types._validators import _bound, _copy_containers

    bounded: Any = None
    if payload:
        copy = shared_bound(schema)
        expected = _copy_containers(schema)
        _bound(expected)
        if not same(copy, expected):
            raise StoreBug("the shared bounded copy differs from acp_types._validators' bounded copy")
        classes: list[Any] = []
        for node in model_nodes(copy):
            if node["cls"] not in classes:
                classes.append(node["cls"])
        bounded = (copy, classes)
    return schema, bounded


def shared_bound(node: Any) -> Any:
    """What ``acp_types._validators._bound`` makes of a copy of ``node``, sharing every subtree it leaves as it is."""
    if isinstance(node, list):
        items = [shared_bound(v) for v in node]
        return node if all(a is b for a, b in zip(items, node, strict=True)) else items
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if not isinstance(kind, str):  # a map of names to schemas
        out = {k: shared_bound(v) if isinstance(v, (dict, list)) else v for k, v in node.items()}
        changed = False
    else:
        out = {k: v if k in _BOUND_SKIPS else shared_bound(v) for k, v in node.items()}
        changed = kind in _COLLECTIONS
        if changed:
            out["fail_fast"] = True
    if not changed and all(out[k] is v for k, v in node.items()):
        return node
    return out


def closure_index(models: types.ModuleType) -> dict[int, tuple[str, ...]]:
    """Where each closure a schema of ``models`` may hold lives: ``id`` -> its reference (see :func:`reference`)."""
    from pydantic import BaseModel, Discriminator
    from typing_extensions import TypeAliasType

    found: dict[int, tuple[str, ...]] = {}
    for name, value in vars(models).items():
        if isinstance(value, TypeAliasType):
            for meta in getattr(value.__value__, "__metadata__", ()):
                if isinstance(meta, Discriminator) and callable(meta.discriminator):
                    found.setdefault(id(meta.discriminator), ("a", models.__name__, name))
        elif isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == models.__name__:
            for attribute, decorator in value.__pydantic_decorators__.model_validators.items():
                found.setdefault(id(decorator.func), ("v", models.__name__, name, attribute))
    return found


class Refs:
    """Stable stand-ins for the object ids in pydantic's schema refs (``module.Name:140234...``).

    pydantic names each type it defines in a schema by its qualified name and
    ``id()``, which changes from process to process. The store writes each
    id as ``<version>-<n>`` instead, ``n`` counting the distinct ids in the
    order they are met, over every entry of the version: one type has one
    ref in every stored schema, and no stored ref can equal a ref pydantic
    makes at run time (digits only), nor one of another version's store.
    """

    _ID = re.compile(r":(str-)?([0-9]+)")

    def __init__(self, version: str) -> None:
        self.version = version
        self.ids: dict[str, int] = {}

    def __call__(self, ref: str) -> str:
        def stand_in(match: re.Match[str]) -> str:
            n = self.ids.setdefault(match[2], len(self.ids))
            return f":{match[1] or ''}{self.version}-{n}"

        return self._ID.sub(stand_in, ref)


def encode(value: tuple[Any, Any], functions: Mapping[int, tuple[str, ...]], refs: Refs) -> bytes:
    """The stored form of ``(schema, bounded)``: marshal data of ``(schema, bounded, nodes, needs, holes)``, checked by loading it.

    Everything that is not data (a class, a function, a bound method, a
    ``functools.partial``, a key check) is left out of the data (``None``) and
    listed in ``holes`` as ``(references, places)``: each distinct reference
    once, flat (:func:`flatten`), and ``container, key, index`` for each place,
    the container being the very dict or list of the data (a marshal
    back-reference), so that the runtime looks each reference up once, in a
    loop, and fills each place in with one assignment (``acp_types._build._fill``).
    """
    holes: list[tuple[Any, Any, tuple[Any, ...]]] = []
    data = _canonical(value, functions, holes, refs)
    from acp_types._runtime import model_nodes

    program: list[tuple[Any, ...]] = []
    index: dict[tuple[Any, ...], int] = {}
    places: list[Any] = []
    for container, key, ref in holes:
        places.extend((container, key, flatten(ref, program, index)))
    blob = _Marshal().dumps((*data, (program, places)))
    if CHECK_ENTRIES:
        loaded = marshal.loads(blob)
        from acp_types._build import _fill

        _fill(loaded[-1])
        schema, bounded, nodes, _needs = loaded[:-1]
        if not same((schema, bounded), value, {}) or [id(n) for n in nodes] != [id(n) for n in model_nodes(schema)]:
            raise StoreBug("a stored schema, loaded again, differs from the schema it was made from")
    return blob


CHECK_ENTRIES = bool(os.environ.get("ACP_TYPES_CHECK_STORE"))
"""Load every entry again at generation time and compare it with its schema (``ACP_TYPES_CHECK_STORE=1``).

Off by default: it is a fifth of the store's time, and tests/test_core_schemas.py
makes the same comparison against a fresh import; every reference is checked
either way (:func:`reference`).
"""


def _canonical(value: Any, functions: Mapping[int, tuple[str, ...]], holes: list[Any], refs: Refs) -> Any:
    """``(schema, bounded, nodes, needs)`` for storing, from ``(schema, bounded)``: equal values one object, holes listed.

    Which nodes pydantic shares differs between interpreters (3.10 shares
    others than 3.11), and that would show in the bytes, so the schema is
    rebuilt by value: every equal string, and every equal dict or list (equal
    keys in the same order, equal values, the same references), is one
    object. That halves the containers the runtime builds on loading an entry
    (pydantic-core only reads a schema; pydantic itself shares nodes). The
    bounded copy is walked beside the schema and reuses the schema's copy of
    every subtree it leaves as it is; the model nodes are those of the copy.
    Schema refs get their stable stand-ins (:class:`Refs`).
    """
    from acp_types._runtime import model_nodes

    strings: dict[str, str] = {}
    interned: dict[Any, Any] = {}
    keys: dict[int, Any] = {}  # id of an interned container -> its key

    def leaf(v: Any) -> tuple[Any, Any]:
        t = type(v)
        if t is str:
            v = strings.setdefault(v, v)
            return v, ("s", v)
        if v is None or t in (bool, int, float):
            return v, (t.__name__, v)
        if t in (set, frozenset):
            raise StoreBug("a core schema holds a set, whose order would depend on the hash seed")
        hole = _Hole(reference(v, functions))
        return hole, ("h", hole.reference)

    def intern(out: Any, key: Any, mark: int) -> tuple[Any, Any]:
        found = interned.get(key)
        if found is not None:
            del holes[mark:]  # its own holes: everything under an equal container is interned already
            return found, key
        interned[key] = out
        keys[id(out)] = key
        return out, key

    def item(container: Any, where: Any, v: Any) -> Any:
        if isinstance(v, _Hole):
            holes.append((container, where, v.reference))
            return None
        return v

    def tree(v: Any, original: Any = None, copy: Any = None) -> tuple[Any, Any]:
        """The stored copy of ``v`` and its key; where ``v`` is ``original`` (a node of the schema), ``copy`` (its copy)."""
        t = type(v)
        if original is not None and v is original and t in (dict, list):
            return copy, keys[id(copy)]
        mark = len(holes)
        out: Any
        if t is dict:
            out, parts = {}, []
            for k, x in v.items():
                key, key_key = leaf(k)
                if isinstance(key, _Hole):
                    raise StoreBug(f"a core schema has a key that is not data: {k!r}")
                inner = (original[k], copy[key]) if type(original) is dict and k in original else (None, None)
                child, child_key = tree(refs(x) if k in _REF_KEYS and type(x) is str else x, *inner)
                out[key] = item(out, key, child)
                parts.append((key_key, child_key))
            return intern(out, ("d", tuple(parts)), mark)
        if t is list:
            out, parts = [], []
            for i, x in enumerate(v):
                inner = (original[i], copy[i]) if type(original) is list and i < len(original) else (None, None)
                child, child_key = tree(x, *inner)
                out.append(item(out, i, child))
                parts.append(child_key)
            return intern(out, ("l", tuple(parts)), mark)
        if t is tuple:
            pairs = [tree(x) for x in v]
            if any(isinstance(x, _Hole) for x, _ in pairs):
                raise StoreBug(f"a core schema has a tuple holding something that is not data: {v!r}")
            return tuple(x for x, _ in pairs), ("t", tuple(k for _, k in pairs))
        return leaf(v)

    schema, bounded = value
    schema_copy, _ = tree(schema)
    bounded_copy = None
    if bounded is not None:
        copy, classes = bounded
        bounded_copy = (tree(copy, schema, schema_copy)[0], tree(classes)[0])
    nodes = list(model_nodes(schema_copy))
    from acp_types._build import _completable

    # the copy's nodes hold holes where the classes go: the schema's own nodes come in the same order
    completable = [_completable(node["cls"]) for node in model_nodes(schema)]
    return schema_copy, bounded_copy, nodes, definition_needs(schema_copy, nodes, completable)


def definition_needs(schema: Any, nodes: list[Any], completable: list[bool]) -> Any:
    """Which of the definitions of ``schema`` each use of it needs: ``(root serializer, [(validator, serializer), ...])``.

    pydantic-core builds every definition a schema lists, used or not. The
    runtime therefore hands it only the ones a use reaches (indexes into
    ``schema["definitions"]``, sorted; none when it has no definitions): the
    class's serializer (the root's), and, for each of ``nodes``, the class's
    own schema (validator) and serializer when that class completes from the
    node (``acp_types._build._FOUND``), or ``None`` for a node whose class
    ``acp_types._build`` may not complete (``completable``, one flag a node),
    which the runtime then leaves to its own path. A serializer reaches only
    what a node's ``serialization`` holds when it has one (a union written
    back by the value's own class is ``{"type": "any"}``), so it needs far
    fewer.
    """
    if len(completable) != len(nodes):
        raise StoreBug("the stored copy of a schema has other model nodes than the schema")
    if schema.get("type") != "definitions":
        return (), [((), ()) if ok else None for ok in completable]
    definitions = schema["definitions"]
    index = {d["ref"]: i for i, d in enumerate(definitions)}

    def reached(start: Any, serializer: bool) -> tuple[int, ...]:
        found: set[int] = set()
        stack = [start]
        while stack:
            n = stack.pop()
            if type(n) is list:
                stack.extend(n)
                continue
            if type(n) is not dict:
                continue
            kind = n.get("type")
            if not isinstance(kind, str):  # a map of names to schemas
                stack.extend(n.values())
                continue
            if kind == "definition-ref":
                i = index.get(n.get("schema_ref"))
                if i is not None and i not in found:
                    found.add(i)
                    stack.append(definitions[i])
            if serializer and type(n.get("serialization")) is dict:
                stack.append(n["serialization"])
                continue
            stack.extend(v for k, v in n.items() if k != "metadata")
        return tuple(sorted(found))

    return reached(schema["schema"], True), [
        (reached(n, False), reached(n, True)) if ok else None for n, ok in zip(nodes, completable, strict=True)
    ]


def flatten(ref: tuple[Any, ...], program: list[tuple[Any, ...]], index: dict[tuple[Any, ...], int]) -> int:
    """The index of the nested reference ``ref`` (see :func:`reference`) in ``program``, added with its parts first.

    A part of a bound method or partial (its object, function, arguments) is
    named by its index; equal references are one entry.
    """
    found = index.get(ref)
    if found is not None:
        return found
    kind = ref[0]
    flat: tuple[Any, ...]
    if kind == "m":
        flat = ("m", flatten(ref[1], program, index), ref[2])
    elif kind == "p":
        flat = ("p", flatten(ref[1], program, index), tuple(flatten(a, program, index) for a in ref[2]),
                tuple((k, flatten(v, program, index)) for k, v in ref[3]))
    else:
        flat = ref
    index[ref] = len(program)
    program.append(flat)
    return index[ref]


def resolve(ref: tuple[Any, ...]) -> Any:
    """The object the nested reference ``ref`` names, found as the runtime finds it (``acp_types._build.references``)."""
    from acp_types._build import references

    program: list[tuple[Any, ...]] = []
    i = flatten(ref, program, {})
    return references(program)[i]


class _Hole:
    __slots__ = ("reference",)

    def __init__(self, reference: tuple[Any, ...]) -> None:
        self.reference = reference


def reference(obj: Any, functions: Mapping[int, tuple[str, ...]]) -> tuple[Any, ...]:
    """How the runtime finds ``obj`` again, nested (:func:`flatten` makes it flat); checked here to find the same object."""
    from acp_types._runtime import _KeyCheck

    def data_or_reference(v: Any) -> tuple[Any, ...]:
        if v is None or type(v) in (str, int, float, bool):
            return ("d", v)
        return reference(v, functions)

    ref: tuple[Any, ...]
    if type(obj) is partial:
        ref = ("p", reference(obj.func, functions), tuple(data_or_reference(a) for a in obj.args),
               tuple((k, data_or_reference(v)) for k, v in sorted(obj.keywords.items())))
    elif type(obj) is _KeyCheck:
        ref = ("k", *sorted(obj.names))
    elif isinstance(obj, types.MethodType):
        ref = ("m", reference(obj.__self__, functions), obj.__func__.__name__)
    elif isinstance(obj, types.FunctionType) and obj.__closure__:
        found = functions.get(id(obj))
        if found is None:
            raise StoreBug(f"a core schema holds the closure {obj.__qualname__}, which the store cannot find again")
        ref = found
    else:
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
            raise StoreBug(f"a core schema holds {obj!r}, which the store cannot find again")
        ref = ("g", module, qualname)
    found_again = resolve(ref)
    if not same(found_again, obj):
        raise StoreBug(f"the store's reference {ref!r} finds {found_again!r}, not {obj!r}")
    return ref


class _Marshal:
    """The marshal format (version 4, read by every supported interpreter), written canonically.

    ``marshal.dumps`` marks an object for back-references by its reference
    count and a string by whether it is interned, both of which differ between
    interpreters; this writer marks exactly the containers and strings that
    occur more than once, so equal values give equal bytes everywhere.
    """

    def __init__(self) -> None:
        self.out = bytearray()
        self.seen: dict[Any, int] = {}
        self.index: dict[Any, int] = {}

    @staticmethod
    def _key(v: Any) -> Any:
        return ("s", v) if type(v) is str else id(v)

    def _count(self, v: Any) -> None:
        stack = [v]
        while stack:
            x = stack.pop()
            t = type(x)
            if t is tuple:  # never shared: whether two equal tuples are one object differs between interpreters
                stack.extend(x)
            elif t is str or t in (dict, list):
                key = self._key(x)
                self.seen[key] = self.seen.get(key, 0) + 1
                if self.seen[key] > 1 or t is str:
                    continue
                if t is dict:
                    for k, item in x.items():
                        stack.append(k)
                        stack.append(item)
                else:
                    stack.extend(x)

    def dumps(self, v: Any) -> bytes:
        self._count(v)
        self._write(v)
        return bytes(self.out)

    def _start(self, code: bytes, v: Any) -> bool:
        """Write ``v``'s type code; ``False`` when a back-reference was written instead."""
        if type(v) is tuple:
            self.out += code
            return True
        key = self._key(v)
        if key in self.index:
            self.out += b"r" + struct.pack("<i", self.index[key])
            return False
        if self.seen.get(key, 0) > 1:
            self.index[key] = len(self.index)
            self.out.append(code[0] | 0x80)
        else:
            self.out += code
        return True

    def _write(self, v: Any) -> None:
        out = self.out
        t = type(v)
        if v is None:
            out += b"N"
        elif v is True:
            out += b"T"
        elif v is False:
            out += b"F"
        elif t is int:
            if -(2**31) <= v < 2**31:
                out += b"i" + struct.pack("<i", v)
            else:
                digits, rest = [], abs(v)
                while rest:
                    digits.append(rest & 0x7FFF)
                    rest >>= 15
                out += b"l" + struct.pack("<i", len(digits) if v > 0 else -len(digits))
                out += b"".join(struct.pack("<H", d) for d in digits)
        elif t is float:
            out += b"g" + struct.pack("<d", v)
        elif t is str:
            if v.isascii():
                raw = v.encode("ascii")
                if len(raw) < 256:
                    if self._start(b"z", v):
                        out += bytes([len(raw)]) + raw
                elif self._start(b"a", v):
                    out += struct.pack("<i", len(raw)) + raw
            else:
                raw = v.encode("utf-8", "surrogatepass")
                if self._start(b"u", v):
                    out += struct.pack("<i", len(raw)) + raw
        elif t is tuple:
            if len(v) < 256:
                if self._start(b")", v):
                    out += bytes([len(v)])
                    for x in v:
                        self._write(x)
            elif self._start(b"(", v):
                out += struct.pack("<i", len(v))
                for x in v:
                    self._write(x)
        elif t is list:
            if self._start(b"[", v):
                out += struct.pack("<i", len(v))
                for x in v:
                    self._write(x)
        elif t is dict:
            if self._start(b"{", v):
                for k, x in v.items():
                    self._write(k)
                    self._write(x)
                out += b"0"
        else:
            raise StoreBug(f"cannot store {type(v).__name__} as data")


def same(a: Any, b: Any, refs: dict[str, str] | None = None) -> bool:
    """Whether two core schemas are the same: equal values, keys in the same order, equal functions.

    A ``functools.partial`` compares by its function and arguments (pydantic
    makes new ones each time it generates a schema), anything else by ``==``.
    With ``refs`` (a dict, empty at first), schema refs (``ref``,
    ``schema_ref``) compare equal when they differ only in their ids and
    each id of ``a`` stands for one id of ``b`` throughout (:class:`Refs`).
    """
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        if list(a) != list(b):
            return False
        for k in a:
            if refs is not None and k in _REF_KEYS and type(a[k]) is str and type(b[k]) is str:
                if not _same_ref(a[k], b[k], refs):
                    return False
            elif not same(a[k], b[k], refs):
                return False
        return True
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y, refs) for x, y in zip(a, b, strict=True))
    if type(a) is partial:
        return same(a.func, b.func, refs) and same(a.args, b.args, refs) and same(a.keywords, b.keywords, refs)
    return bool(a == b)


_ANY_ID = re.compile(r":(str-)?((?:[a-z][a-z0-9]*-)?[0-9]+)")
"""An id in a ref, as pydantic writes it or as a stand-in of :class:`Refs`."""


def _same_ref(a: str, b: str, refs: dict[str, str]) -> bool:
    ids_a = [m[0] for m in _ANY_ID.finditer(a)]
    ids_b = [m[0] for m in _ANY_ID.finditer(b)]
    if _ANY_ID.sub(":", a) != _ANY_ID.sub(":", b) or len(ids_a) != len(ids_b):
        return False
    for x, y in zip(ids_a, ids_b, strict=True):
        if refs.setdefault("a" + x, y) != y or refs.setdefault("b" + y, x) != x:
            return False
    return True


def main(argv: list[str]) -> int:
    folder, version = argv
    sys.path.insert(0, folder)
    import acp_types

    if Path(acp_types.__file__).resolve().parents[1] != Path(folder).resolve():
        raise StoreBug(f"imported acp_types from {acp_types.__file__}, not from the rendered package in {folder}")
    sys.stdout.write(json.dumps(record_version(version)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
