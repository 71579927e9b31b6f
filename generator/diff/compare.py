"""Compare two protocol models and list every change, each under a rule of ``rules.py``.

The comparison reads the intermediate model (``generator.model``), never JSON
text: formatting, key order and descriptions make no difference. Methods, types
and fields are paired by name, or through the cross-version map when the two
sides are different versions; whatever stays unpaired is a removal or an
addition, with a similarity hint when an unpaired pair looks alike.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from generator.crossversion import CrossMap
from generator.diff import rules
from generator.diff.rules import ANY, DIRECTIONS, REQUEST, RESPONSE, Rule, level_rank
from generator.model import AliasType, EnumType, Field, Method, ObjectType, Protocol, TypeDef, TypeExpr, UnionType

SCOPES = ("protocol", "method", "feature", "type")
_STABILITY = {"proposal": 0, "unstable": 1, "draft": 2, "stable": 3}
NO_TAG = "(no tag)"
_TOLERANCE = (
    ("on_error_omit", "x-acp-on-error"),
    ("skip_invalid_items", "x-acp-invalid-items"),
    ("on_error_default", "x-acp-on-error: default"),
)


@dataclass(frozen=True)
class Change:
    """One difference between the two sides, judged by one rule."""

    rule_id: str
    level: str
    axis: str
    scope: str  # protocol, method, feature or type: what ``location`` names
    location: str  # a method, a feature, a definition or Definition.wireName, in the old side's names
    message: str
    old: str | None = None
    new: str | None = None
    direction: str | None = None  # request or response, for rules that depend on it
    sent_by: str | None = None  # client, agent or both, for changes to definitions reachable from a method
    hint: str | None = None
    unstable: bool = False  # the change touches only the unstable surface (unstable on every side it exists)

    def sort_key(self) -> tuple[int, str, int, str, str, str]:
        return (
            SCOPES.index(self.scope),
            self.location,
            level_rank(self.level),
            self.rule_id,
            self.direction or "",
            self.message,
        )

    @property
    def breaks(self) -> tuple[str, ...]:
        """The pairings (rules.PAIRINGS) in which the change is not safe on the wire, the worse first."""
        return rules.rule(self.rule_id).breaks

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule_id,
            "level": self.level,
            "axis": self.axis,
            "scope": self.scope,
            "location": self.location,
            "message": self.message,
            "old": self.old,
            "new": self.new,
            "direction": self.direction,
            "sentBy": self.sent_by,
            "hint": self.hint,
            "unstable": self.unstable,
            "breaks": list(self.breaks),
        }


# ---------------------------------------------------------------- pairing


@dataclass
class NamePairs:
    """Old name -> new name (None: removed) and the new names left unpaired (added)."""

    forward: dict[str, str | None]
    added: list[str]
    listed: set[str] = field(default_factory=set)  # old names the cross-version map lists
    listed_new: set[str] = field(default_factory=set)  # new names the cross-version map lists

    def get(self, name: str | None) -> str | None:
        return None if name is None else self.forward.get(name)

    def unlisted_removed(self) -> list[str]:
        """Removed names the map says nothing about: the only ones a similarity hint may pair."""
        return [a for a, b in sorted(self.forward.items()) if b is None and a not in self.listed]

    def unlisted_added(self) -> list[str]:
        return [b for b in self.added if b not in self.listed_new]


def _oriented(
    crossmap: CrossMap | None, old: Protocol, new: Protocol, category: str
) -> list[tuple[str | None, str | None]]:
    """The map's pairs as (old side, new side), or nothing when the map does not apply."""
    if crossmap is None or old.version == new.version:
        return []
    return crossmap.oriented(old.version, new.version, category)


def pair_names(
    old_names: Iterable[str], new_names: Iterable[str], listed: list[tuple[str | None, str | None]]
) -> NamePairs:
    """Pair old names with new ones: through ``listed`` (the cross-version map's pairs) first, else by name."""
    old_set, new_set = set(old_names), set(new_names)
    fwd_listed = {a: b for a, b in listed if a is not None}
    back_listed = {b: a for a, b in listed if b is not None}
    forward: dict[str, str | None] = {}
    explicit = set()
    for name in sorted(old_set):
        if name in fwd_listed:
            target = fwd_listed[name]
            forward[name] = target if target in new_set else None
            explicit.add(name)
        elif name in new_set and name not in back_listed:
            forward[name] = name
        else:
            forward[name] = None
    taken = {v for v in forward.values() if v is not None}
    return NamePairs(forward, sorted(new_set - taken), explicit, set(back_listed) & new_set)


def _name_ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def _best_pairs(
    removed: list[str], added: list[str], score: Callable[[str, str], float], threshold: float
) -> dict[str, str]:
    """Greedy one-to-one pairing of similar removed/added names (best score first, ties by name)."""
    scored = []
    for a in removed:
        for b in added:
            s = score(a, b)
            if s >= threshold:
                scored.append((-s, a, b))
    out: dict[str, str] = {}
    used = set()
    for _, a, b in sorted(scored):
        if a in out or b in used:
            continue
        out[a] = b
        used.add(b)
    return out


def _shape(t: TypeDef | None) -> set[str]:
    if isinstance(t, ObjectType):
        return {f"field:{f.wire_name}" for f in t.fields if f.wire_name != "_meta"}
    if isinstance(t, UnionType):
        return {f"tag:{v.tag}" if v.tag is not None else f"branch:{v.name}" for v in t.variants}
    if isinstance(t, EnumType):
        return {f"value:{v}" for v in t.values}
    if isinstance(t, AliasType):
        return {f"alias:{t.type.render()}"}
    return set()


def _shape_score(a: set[str], b: set[str], name_a: str, name_b: str) -> float:
    """How much two definitions look alike: shared shape, helped by similar names."""
    if not a or not b:
        return 0.0
    common = len(a & b)
    jaccard = common / len(a | b)
    ratio = _name_ratio(name_a, name_b)
    if common < 2 and not (jaccard == 1.0 and ratio >= 0.6):
        return 0.0
    if jaccard < 0.5:
        return 0.0
    return 0.7 * jaccard + 0.3 * ratio


# ---------------------------------------------------------------- directions


def flows(proto: Protocol) -> dict[str, set[tuple[str, str]]]:
    """For each definition, the (direction, sender) pairs of the payloads it is part of.

    A method's params are a request sent by the caller (the client for an
    agent-side method, the agent for a client-side one, either for a protocol
    method); its result is a response sent by the handler. Every definition
    reachable from a payload through fields, array items, map values, union
    branches or aliases inherits its flows.
    """
    # proxy-side methods are spoken between a conductor and a proxy, each way (proxy/successor)
    callers = {"agent": ("client",), "client": ("agent",), "protocol": ("client", "agent")}
    callers["proxy"] = ("conductor", "proxy")
    handlers = {"agent": ("agent",), "client": ("client",), "protocol": ("client", "agent")}
    handlers["proxy"] = ("proxy", "conductor")
    out: dict[str, set[tuple[str, str]]] = {t.name: set() for t in proto.types}
    work: list[tuple[str, tuple[str, str]]] = []
    for m in proto.methods:
        for sender in callers[m.side]:
            work.append((m.params, (REQUEST, sender)))
            if m.notification_params:
                work.append((m.notification_params, (REQUEST, sender)))
        if m.result:
            for sender in handlers[m.side]:
                work.append((m.result, (RESPONSE, sender)))
    while work:
        name, flow = work.pop()
        if name not in out or flow in out[name]:
            continue
        out[name].add(flow)
        for ref in _refs(proto.type(name)):
            work.append((ref, flow))
    return out


def _refs(t: TypeDef) -> list[str]:
    if isinstance(t, ObjectType):
        return [r for f in t.fields for r in f.type.refs()]
    if isinstance(t, UnionType):
        return [v.name for v in t.variants]
    if isinstance(t, AliasType):
        return t.type.refs()
    return []


def _directions(fl: set[tuple[str, str]]) -> tuple[str, ...]:
    """The directions to judge a definition in; both when no method reaches it (to be safe)."""
    found = tuple(d for d in DIRECTIONS if any(x == d for x, _ in fl))
    return found or DIRECTIONS


def _sent_by(fl: set[tuple[str, str]], direction: str | None) -> str | None:
    senders = {s for d, s in fl if direction in (None, ANY, d)}
    if not senders:
        return None
    return senders.pop() if len(senders) == 1 else "both"


# ---------------------------------------------------------------- type expressions


def _resolve(expr: TypeExpr, proto: Protocol, depth: int = 0) -> TypeExpr:
    """Replace references to aliases by what they stand for, all the way down."""
    if depth > 50:
        return expr
    if expr.kind == "ref" and expr.name and proto.has_type(expr.name):
        target = proto.type(expr.name)
        if isinstance(target, AliasType):
            inner = _resolve(target.type, proto, depth + 1)
            return TypeExpr(
                inner.kind,
                inner.name,
                inner.items,
                inner.nullable or expr.nullable,
                inner.const,
                inner.constraints or expr.constraints,
            )
        return expr
    if expr.items is not None:
        items = _resolve(expr.items, proto, depth + 1)
        return TypeExpr(expr.kind, expr.name, items, expr.nullable, expr.const, expr.constraints)
    return expr


def _same(a: TypeExpr | None, b: TypeExpr | None, tmap: NamePairs, top: bool = True) -> bool:
    """Structural equality; references compare through the type pairing; top-level null and constraints aside."""
    if a is None or b is None:
        return a is b
    if a.kind != b.kind:
        return False
    if not top and (a.nullable != b.nullable or a.constraints != b.constraints):
        return False
    if a.kind == "ref":
        return tmap.get(a.name) == b.name
    if a.kind == "const" and (a.const != b.const or a.name != b.name):
        return False
    if a.kind == "scalar" and a.name != b.name:
        return False
    return _same(a.items, b.items, tmap, top=False)


# ---------------------------------------------------------------- the comparison


class _Differ:
    def __init__(self, old: Protocol, new: Protocol, crossmap: CrossMap | None):
        self.old, self.new = old, new
        self.crossmap = crossmap if old.version != new.version else None
        self.changes: list[Change] = []
        self.types = pair_names(
            (t.name for t in old.types), (t.name for t in new.types), _oriented(crossmap, old, new, "types")
        )
        self.methods = pair_names(
            (m.name for m in old.methods), (m.name for m in new.methods), _oriented(crossmap, old, new, "methods")
        )
        self.field_map = _oriented(crossmap, old, new, "fields")
        self.cap_map = dict((a, b) for a, b in _oriented(crossmap, old, new, "capabilities") if a)
        self.old_flows, self.new_flows = flows(old), flows(new)
        self.tag_fields = {(v.name, t.tag) for t in old.types if isinstance(t, UnionType) and t.tag for v in t.variants}

    # -- recording

    def emit(
        self,
        r: Rule,
        scope: str,
        location: str,
        message: str,
        *,
        old: object = None,
        new: object = None,
        direction: str | None = None,
        fl: set[tuple[str, str]] | None = None,
        hint: str | None = None,
        unstable: bool | None = None,
    ) -> None:
        if unstable is None:
            unstable = self._unstable_only(scope, location)
        assert r.direction in (ANY, direction), f"{r.id} is a {r.direction} rule, used for {direction}"
        self.changes.append(
            Change(
                r.id,
                r.level,
                r.axis,
                scope,
                location,
                message,
                None if old is None else str(old),
                None if new is None else str(new),
                direction if r.direction != ANY else None,
                _sent_by(fl, direction) if fl is not None else None,
                hint,
                unstable,
            )
        )

    def _unstable_only(self, scope: str, location: str) -> bool:
        """Whether what ``location`` names is unstable on every side where it exists.

        ``location`` is in the old side's names, or the new side's for an addition.
        """
        sides: list[bool] = []
        if scope == "method":
            old = self.old.method(location)
            new = self.new.method(self.methods.get(location) or "") if old else self.new.method(location)
            sides = [m.stability == "unstable" for m in (old, new) if m is not None]
        elif scope == "feature":
            of = {f.name: f for f in self.old.features}.get(location)
            nf = {f.name: f for f in self.new.features}.get(location)
            sides = [f.stability == "unstable" for f in (of, nf) if f is not None]
        elif scope == "type":
            tname, _, wire = location.partition(".")
            if self.old.has_type(tname):
                pairs = [(self.old, tname), (self.new, self.types.get(tname))]
            else:
                pairs = [(self.new, tname)]
            for proto, name in pairs:
                if name is None or not proto.has_type(name):
                    continue
                t = proto.type(name)
                f = t.field(wire) if wire and isinstance(t, ObjectType) else None
                if wire and f is None and t.stability != "unstable":
                    continue  # the field does not exist on this side (added or removed)
                sides.append(t.stability == "unstable" or (f is not None and f.unstable))
        return bool(sides) and all(sides)

    @staticmethod
    def _branch_unstable(proto: Protocol, name: str) -> bool:
        return proto.has_type(name) and proto.type(name).stability == "unstable"

    def _stability(self, scope: str, loc: str, what: str, a: str, b: str) -> None:
        """Report a move between unstable and stable under its own rule (``<scope>-stabilized`` / ``-destabilized``)."""
        if a == b:
            return
        if a == "unstable" and b == "stable":
            rule = rules.STABILIZED[scope]
        elif a == "stable" and b == "unstable":
            rule = rules.DESTABILIZED[scope]
        else:
            return
        subject = "type" if scope == "field" else scope
        self.emit(rule, subject, loc, f"{what} moved from {a} to {b}", old=a, new=b, unstable=False)

    def run(self) -> list[Change]:
        self.protocol()
        self.compare_methods()
        self.compare_features()
        self.compare_types()
        return sorted(set(self.changes), key=Change.sort_key)

    # -- protocol

    def protocol(self) -> None:
        o, n = self.old, self.new
        if o.protocol_version != n.protocol_version:
            self.emit(
                rules.PROTOCOL_VERSION_CHANGED,
                "protocol",
                "protocol",
                f"protocolVersion changed from {o.protocol_version} to {n.protocol_version}",
                old=o.protocol_version,
                new=n.protocol_version,
            )
        if o.status != n.status:
            self.emit(
                rules.PROTOCOL_STATUS_CHANGED,
                "protocol",
                "protocol",
                f"the version's status changed from {o.status} to {n.status}",
                old=o.status,
                new=n.status,
            )

    # -- methods

    def compare_methods(self) -> None:
        o, n = self.old, self.new
        hints = _best_pairs(self.methods.unlisted_removed(), self.methods.unlisted_added(), self._method_score, 0.6)
        back = {b: a for a, b in hints.items()}
        for name, target in sorted(self.methods.forward.items()):
            m = o.method(name)
            assert m is not None
            if target is None:
                listed = name in self.methods.listed
                why = " (the cross-version map lists it as having no counterpart)" if listed else ""
                self.emit(
                    rules.METHOD_REMOVED,
                    "method",
                    name,
                    f"method `{name}` removed{why}",
                    old=name,
                    hint=f"possibly renamed to `{hints[name]}`" if name in hints else None,
                )
                continue
            nm = n.method(target)
            assert nm is not None
            self.compare_method(m, nm)
        for name in self.methods.added:
            nm = n.method(name)
            assert nm is not None
            hint = f"possibly renamed from `{back[name]}`" if name in back else None
            if nm.capability:
                self.emit(
                    rules.METHOD_ADDED,
                    "method",
                    name,
                    f"method `{name}` added, gated by `{'.'.join(nm.capability)}`",
                    new=name,
                    hint=hint,
                )
            else:
                self.emit(
                    rules.UNGATED_METHOD_ADDED,
                    "method",
                    name,
                    f"baseline method `{name}` added (no capability)",
                    new=name,
                    hint=hint,
                )

    def _method_score(self, a: str, b: str) -> float:
        ma, mb = self.old.method(a), self.new.method(b)
        if ma is None or mb is None or ma.side != mb.side or ma.kind != mb.kind:
            return 0.0

        def shape(p: Protocol, m: Method) -> set[str]:
            out = {"params." + s for s in _shape(p.type(m.params) if p.has_type(m.params) else None)}
            if m.result and p.has_type(m.result):
                out |= {"result." + s for s in _shape(p.type(m.result))}
            return out

        return _shape_score(shape(self.old, ma), shape(self.new, mb), a, b)

    def compare_method(self, m: Method, n: Method) -> None:
        loc = m.name
        if m.name != n.name:
            self.emit(
                rules.METHOD_RENAMED, "method", loc, f"method `{m.name}` renamed to `{n.name}`", old=m.name, new=n.name
            )
        if m.kind != n.kind:
            self.emit(
                rules.METHOD_KIND_CHANGED,
                "method",
                loc,
                f"`{m.name}` changed from a {m.kind} to a {n.kind}",
                old=m.kind,
                new=n.kind,
            )
        if m.side != n.side:
            self.emit(
                rules.METHOD_SIDE_CHANGED,
                "method",
                loc,
                f"`{m.name}` is now handled by the {n.side} side instead of the {m.side} side",
                old=m.side,
                new=n.side,
            )
        if self.types.get(m.params) != n.params:
            self.emit(
                rules.METHOD_PARAMS_TYPE_CHANGED,
                "method",
                loc,
                f"params of `{m.name}` changed from `{m.params}` to `{n.params}`, which do not correspond",
                old=m.params,
                new=n.params,
                hint=self._type_hint(m.params, n.params),
            )
        if m.notification_params and n.notification_params:
            if self.types.get(m.notification_params) != n.notification_params:
                self.emit(
                    rules.METHOD_PARAMS_TYPE_CHANGED,
                    "method",
                    loc,
                    f"params of `{m.name}` sent as a notification changed from `{m.notification_params}` to "
                    f"`{n.notification_params}`, which do not correspond",
                    old=m.notification_params,
                    new=n.notification_params,
                    hint=self._type_hint(m.notification_params, n.notification_params),
                )
        elif m.kind == n.kind == "request" and (m.notification_params or n.notification_params):
            # the notification form of a request comes or goes: a receiver of one side refuses what the other sends
            self.emit(
                rules.METHOD_KIND_CHANGED,
                "method",
                loc,
                f"`{m.name}` "
                + (
                    "may now also be sent as a notification"
                    if n.notification_params
                    else "is no longer also a notification"
                ),
                old=m.notification_params,
                new=n.notification_params,
            )
        if m.result and n.result and self.types.get(m.result) != n.result:
            self.emit(
                rules.METHOD_RESULT_TYPE_CHANGED,
                "method",
                loc,
                f"result of `{m.name}` changed from `{m.result}` to `{n.result}`, which do not correspond",
                old=m.result,
                new=n.result,
                hint=self._type_hint(m.result, n.result),
            )
        self.compare_gate(loc, m.capability, n.capability, "method", f"`{m.name}`")
        for code in sorted(set(n.errors) - set(m.errors)):
            self.emit(rules.METHOD_ERROR_ADDED, "method", loc, f"`{m.name}` may now return error {code}", new=code)
        for code in sorted(set(m.errors) - set(n.errors)):
            self.emit(rules.METHOD_ERROR_REMOVED, "method", loc, f"`{m.name}` no longer returns error {code}", old=code)
        a, b = _STABILITY[m.stability], _STABILITY[n.stability]
        if {m.stability, n.stability} == {"unstable", "stable"}:
            self._stability("method", loc, f"`{m.name}`", m.stability, n.stability)
        elif a != b:
            rule = rules.STABILITY_PROMOTED if b > a else rules.STABILITY_DEMOTED
            self.emit(
                rule,
                "method",
                loc,
                f"`{m.name}` stability changed from {m.stability} to {n.stability}",
                old=m.stability,
                new=n.stability,
            )

    def _type_hint(self, a: str, b: str) -> str | None:
        if not (self.old.has_type(a) and self.new.has_type(b)):
            return None
        score = _shape_score(_shape(self.old.type(a)), _shape(self.new.type(b)), a, b)
        return f"`{a}` and `{b}` look alike; the cross-version map may be missing the pair" if score >= 0.6 else None

    def compare_gate(
        self, loc: str, old: tuple[str, ...] | None, new: tuple[str, ...] | None, kind: str, what: str
    ) -> None:
        if old == new:
            return
        o = ".".join(old) if old else None
        n = ".".join(new) if new else None
        if kind == "method" and o is None:
            self.emit(rules.METHOD_GATE_ADDED, "method", loc, f"{what} now needs the capability `{n}`", new=n)
        elif kind == "method" and n is None:
            self.emit(rules.METHOD_GATE_REMOVED, "method", loc, f"{what} no longer needs the capability `{o}`", old=o)
        else:
            mapped = (
                " (the cross-version map pairs the two paths)" if o in self.cap_map and self.cap_map[o] == n else ""
            )
            self.emit(
                rules.GATE_MOVED[kind],
                kind,
                loc,
                f"{what} is now gated by `{n}` instead of `{o}`{mapped}",
                old=o,
                new=n,
            )

    # -- features

    def compare_features(self) -> None:
        of = {f.name: f for f in self.old.features}
        nf = {f.name: f for f in self.new.features}
        for name in sorted(set(of) - set(nf)):
            self.emit(
                rules.FEATURE_REMOVED, "feature", name, f"feature `{name}` removed", old=".".join(of[name].capability)
            )
        for name in sorted(set(nf) - set(of)):
            self.emit(
                rules.FEATURE_ADDED,
                "feature",
                name,
                f"feature `{name}` added, advertised by `{'.'.join(nf[name].capability)}`",
                new=".".join(nf[name].capability),
            )
        for name in sorted(set(of) & set(nf)):
            a, b = of[name], nf[name]
            if a.side != b.side:
                self.emit(
                    rules.FEATURE_SIDE_CHANGED,
                    "feature",
                    name,
                    f"feature `{name}` is now advertised by the {b.side} side instead of the {a.side} side",
                    old=a.side,
                    new=b.side,
                )
            self.compare_gate(name, a.capability, b.capability, "feature", f"feature `{name}`")
            self._stability("feature", name, f"feature `{name}`", a.stability, b.stability)

    # -- definitions

    def compare_types(self) -> None:
        hints = _best_pairs(
            self.types.unlisted_removed(),
            self.types.unlisted_added(),
            lambda a, b: (
                _shape_score(_shape(self.old.type(a)), _shape(self.new.type(b)), a, b)
                if self.old.type(a).kind == self.new.type(b).kind
                else 0.0
            ),
            0.6,
        )
        back = {b: a for a, b in hints.items()}
        for name, target in sorted(self.types.forward.items()):
            if target is None:
                listed = name in self.types.listed
                why = " (the cross-version map lists it as having no counterpart)" if listed else ""
                self.emit(
                    rules.TYPE_REMOVED,
                    "type",
                    name,
                    f"definition `{name}` removed{why}",
                    old=name,
                    hint=f"possibly renamed to `{hints[name]}`" if name in hints else None,
                )
                continue
            if target != name:
                self.emit(
                    rules.TYPE_RENAMED, "type", name, f"definition `{name}` renamed to `{target}`", old=name, new=target
                )
            self.compare_type(self.old.type(name), self.new.type(target))
        for name in self.types.added:
            self.emit(
                rules.TYPE_ADDED,
                "type",
                name,
                f"definition `{name}` added",
                new=name,
                hint=f"possibly renamed from `{back[name]}`" if name in back else None,
            )

    def compare_type(self, o: TypeDef, n: TypeDef) -> None:
        fl = self.old_flows.get(o.name, set()) | self.new_flows.get(n.name, set())
        self._stability("type", o.name, f"definition `{o.name}`", o.stability, n.stability)
        if o.kind != n.kind:
            self.emit(
                rules.TYPE_KIND_CHANGED,
                "type",
                o.name,
                f"`{o.name}` changed from {_kind(o)} to {_kind(n)}",
                old=_kind(o),
                new=_kind(n),
                fl=fl,
            )
        elif isinstance(o, ObjectType) and isinstance(n, ObjectType):
            self.compare_object(o, n, fl)
        elif isinstance(o, UnionType) and isinstance(n, UnionType):
            self.compare_union(o, n, fl)
        elif isinstance(o, EnumType) and isinstance(n, EnumType):
            self.compare_enum(o, n, fl)
        elif isinstance(o, AliasType) and isinstance(n, AliasType):
            self.compare_alias(o, n, fl)

    # -- objects

    def _field_pairs(self, o: ObjectType, n: ObjectType) -> tuple[NamePairs, dict[str, str]]:
        """The pairing of wire names, and the old fields the map moves to another definition."""
        listed: list[tuple[str | None, str | None]] = []
        moved: dict[str, str] = {}
        prefix_o, prefix_n = o.name + ".", n.name + "."
        for a, b in self.field_map:
            a_here = a is not None and a.startswith(prefix_o)
            b_here = b is not None and b.startswith(prefix_n)
            if a is not None and a_here and b is not None and b_here:
                listed.append((a[len(prefix_o) :], b[len(prefix_n) :]))
            elif a is not None and a_here:
                listed.append((a[len(prefix_o) :], None))
                if b is not None:
                    moved[a[len(prefix_o) :]] = b
            elif b is not None and b_here:
                listed.append((None, b[len(prefix_n) :]))
        return pair_names((f.wire_name for f in o.fields), (f.wire_name for f in n.fields), listed), moved

    def compare_object(self, o: ObjectType, n: ObjectType, fl: set[tuple[str, str]]) -> None:
        if o.required_one_of != n.required_one_of:
            self.emit(
                rules.OBJECT_REQUIRED_ONE_OF_CHANGED,
                "type",
                o.name,
                f"`{o.name}` must carry at least one of {list(n.required_one_of) or 'nothing'} "
                f"instead of {list(o.required_one_of) or 'nothing'}",
                old=",".join(o.required_one_of) or None,
                new=",".join(n.required_one_of) or None,
                fl=fl,
            )
        pairs, moved = self._field_pairs(o, n)
        forward, added = pairs.forward, pairs.added
        removed, candidates = pairs.unlisted_removed(), pairs.unlisted_added()

        def score(a: str, b: str) -> float:
            fa, fb = o.field(a), n.field(b)
            assert fa is not None and fb is not None
            if fa.required != fb.required or not _same(fa.type, fb.type, self.types):
                return 0.0
            unique = len(removed) == 1 and len(candidates) == 1
            ratio = _name_ratio(a, b)
            return max(ratio, 0.6 if unique else 0.0)

        hints = _best_pairs(removed, candidates, score, 0.5)
        back = {b: a for a, b in hints.items()}
        dirs = _directions(fl)
        for wire in sorted(forward):
            f = o.field(wire)
            assert f is not None
            loc = f"{o.name}.{wire}"
            target = forward[wire]
            if target is None:
                where = f" (the cross-version map moves it to `{moved[wire]}`)" if wire in moved else ""
                hint = f"possibly renamed to `{hints[wire]}`" if wire in hints else None
                for d in dirs:
                    rule = rules.FIELD_REMOVED[d, f.required]
                    req = "required" if f.required else "optional"
                    self.emit(
                        rule,
                        "type",
                        loc,
                        f"{req} field `{wire}` removed from `{o.name}`{where}",
                        old=f.type.render(),
                        direction=d,
                        fl=fl,
                        hint=hint,
                    )
                continue
            g = n.field(target)
            assert g is not None
            self.compare_field(o, n, f, g, fl)
        for wire in added:
            g = n.field(wire)
            assert g is not None
            loc = f"{o.name}.{wire}"
            hint = f"possibly renamed from `{back[wire]}`" if wire in back else None
            if not g.required:
                self.emit(
                    rules.OPTIONAL_FIELD_ADDED,
                    "type",
                    loc,
                    f"optional field `{wire}` added to `{n.name}`",
                    new=g.type.render(),
                    fl=fl,
                    hint=hint,
                )
                continue
            for d in dirs:
                self.emit(
                    rules.REQUIRED_FIELD_ADDED[d],
                    "type",
                    loc,
                    f"required field `{wire}` added to `{n.name}`",
                    new=g.type.render(),
                    direction=d,
                    fl=fl,
                    hint=hint,
                )

    def compare_field(self, o: ObjectType, n: ObjectType, f: Field, g: Field, fl: set[tuple[str, str]]) -> None:
        if o.stability == n.stability == "stable":
            self._stability(
                "field", f"{o.name}.{f.wire_name}", f"field `{o.name}.{f.wire_name}`", f.stability, g.stability
            )
        loc = f"{o.name}.{f.wire_name}"
        name = f"`{o.name}.{f.wire_name}`"
        dirs = _directions(fl)
        if f.wire_name != g.wire_name:
            self.emit(
                rules.FIELD_RENAMED,
                "type",
                loc,
                f"field {name} renamed to `{n.name}.{g.wire_name}`",
                old=f.wire_name,
                new=g.wire_name,
                fl=fl,
            )
        if f.required != g.required:
            change = "required" if g.required else "optional"
            for d in dirs:
                self.emit(
                    rules.FIELD_BECAME[d, change],
                    "type",
                    loc,
                    f"field {name} became {change}",
                    old="required" if f.required else "optional",
                    new=change,
                    direction=d,
                    fl=fl,
                )
        if (o.name, f.wire_name) in self.tag_fields and f.type.kind == g.type.kind == "const":
            # the union this object is a branch of reports a new tag value (union-variant-tag-changed)
            retyped = True
        else:
            retyped = self.compare_expr(loc, f"field {name}", f.type, g.type, fl)
        fa, ga = _resolve(f.type, self.old), _resolve(g.type, self.new)
        if fa.nullable != ga.nullable and not retyped:
            change = "nullable" if ga.nullable else "non-nullable"
            text = "now admits null" if ga.nullable else "no longer admits null"
            for d in dirs:
                self.emit(
                    rules.FIELD_BECAME[d, change],
                    "type",
                    loc,
                    f"field {name} {text}",
                    old=f.type.render(),
                    new=g.type.render(),
                    direction=d,
                    fl=fl,
                )
        if (f.has_default, f.default) != (g.has_default, g.default) and not retyped:
            self.emit(
                rules.FIELD_DEFAULT_CHANGED,
                "type",
                loc,
                f"default of field {name} changed",
                old=json.dumps(f.default) if f.has_default else "none",
                new=json.dumps(g.default) if g.has_default else "none",
                fl=fl,
            )
        if f.patch != g.patch:
            text = "became a patch field" if g.patch else "is no longer a patch field"
            self.emit(rules.FIELD_PATCH_CHANGED, "type", loc, f"field {name} {text}", old=f.patch, new=g.patch, fl=fl)
        for attr, marker in _TOLERANCE:
            was, now = getattr(f, attr), getattr(g, attr)
            if now and not was:
                self.emit(rules.TOLERANCE_ADDED, "type", loc, f"field {name} gained `{marker}`", new=marker, fl=fl)
            elif was and not now:
                for d in dirs:
                    self.emit(
                        rules.TOLERANCE_REMOVED[d],
                        "type",
                        loc,
                        f"field {name} lost `{marker}`",
                        old=marker,
                        direction=d,
                        fl=fl,
                    )

    def compare_expr(
        self,
        loc: str,
        what: str,
        a: TypeExpr,
        b: TypeExpr,
        fl: set[tuple[str, str]],
        type_rule: Rule = rules.FIELD_TYPE_CHANGED,
    ) -> bool:
        """Type and constraints of a field or an alias; True when the wire type changed.

        Nullability is judged by the caller. When only the annotation changed
        (a scalar now written through an alias, say), the constraints compared
        are those of the resolved types, which is what the wire sees.
        """
        if _same(a, b, self.types):
            ca, cb = a, b
        else:
            ca, cb = _resolve(a, self.old), _resolve(b, self.new)
            if not _same(ca, cb, self.types):
                self.emit(
                    type_rule,
                    "type",
                    loc,
                    f"type of {what} changed from `{a.render()}` to `{b.render()}`",
                    old=a.render(),
                    new=b.render(),
                    fl=fl,
                )
                return True
            self.emit(
                rules.TYPE_ANNOTATION_CHANGED,
                "type",
                loc,
                f"{what} is now written `{b.render()}` instead of `{a.render()}` (same wire type)",
                old=a.render(),
                new=b.render(),
                fl=fl,
            )
        if ca.constraints != cb.constraints:
            self.emit(
                rules.CONSTRAINTS_CHANGED,
                "type",
                loc,
                f"constraints of {what} changed from {_constraints(ca)} to {_constraints(cb)}",
                old=_constraints(ca),
                new=_constraints(cb),
                fl=fl,
            )
        return False

    # -- unions

    def compare_union(self, o: UnionType, n: UnionType, fl: set[tuple[str, str]]) -> None:
        loc, name = o.name, f"`{o.name}`"
        dirs = _directions(fl)
        o_disc, n_disc = _discriminator(o), _discriminator(n)
        if o_disc != n_disc:
            self.emit(
                rules.UNION_DISCRIMINATOR_CHANGED,
                "type",
                loc,
                f"union {name} now picks its branch by {n_disc} instead of {o_disc}",
                old=o_disc,
                new=n_disc,
                fl=fl,
            )
            return
        if self.types.get(o.default) != n.default:
            was = f"`{o.default}`" if o.default else "none (the tag was required)"
            now = f"`{n.default}`" if n.default else "none (the tag is now required)"
            self.emit(
                rules.UNION_DEFAULT_CHANGED,
                "type",
                loc,
                f"the branch of {name} used when the tag is absent changed from {was} to {now}",
                old=o.default,
                new=n.default,
                fl=fl,
            )
        if o.unknown_default != n.unknown_default:
            now = "now reads" if n.unknown_default else "no longer reads"
            self.emit(
                rules.UNION_UNKNOWN_READING_CHANGED,
                "type",
                loc,
                f"{name} {now} an unknown tag value as its default branch",
                old=o.unknown_default,
                new=n.unknown_default,
                fl=fl,
            )
        if o.unknown_required != n.unknown_required:
            self.emit(
                rules.UNION_UNKNOWN_REQUIRED_CHANGED,
                "type",
                loc,
                f"an unknown variant of {name} must carry {list(n.unknown_required) or 'only its tag'} "
                f"instead of {list(o.unknown_required) or 'only its tag'}",
                old=",".join(o.unknown_required) or None,
                new=",".join(n.unknown_required) or None,
                fl=fl,
            )
        if o.unknown_required_one_of != n.unknown_required_one_of:
            self.emit(
                rules.UNION_UNKNOWN_REQUIRED_CHANGED,
                "type",
                loc,
                f"an unknown variant of {name} must carry at least one of "
                f"{list(n.unknown_required_one_of) or 'nothing'} instead of "
                f"{list(o.unknown_required_one_of) or 'nothing'}",
                old=",".join(o.unknown_required_one_of) or None,
                new=",".join(n.unknown_required_one_of) or None,
                fl=fl,
            )
        if o.overlap_first != n.overlap_first:
            now = "now reads" if n.overlap_first else "no longer reads"
            self.emit(
                rules.UNION_OVERLAP_CHANGED,
                "type",
                loc,
                f"{name} {now} an object with several presence keys as the first listed branch",
                old=o.overlap_first,
                new=n.overlap_first,
                fl=fl,
            )
        okeys, nkeys = _variant_keys(o), _variant_keys(n)
        paired: list[tuple[str, str]] = [(k, k) for k in sorted(set(okeys) & set(nkeys))]
        left_o = sorted(set(okeys) - set(nkeys))
        left_n = sorted(set(nkeys) - set(okeys))
        for ko in list(left_o):
            match = [kn for kn in left_n if self.types.get(okeys[ko]) == nkeys[kn]]
            if len(match) == 1:
                paired.append((ko, match[0]))
                left_o.remove(ko)
                left_n.remove(match[0])
        for ko, kn in paired:
            ov, nv = okeys[ko], nkeys[kn]
            if ko != kn:
                self.emit(
                    rules.UNION_VARIANT_TAG_CHANGED,
                    "type",
                    loc,
                    f"variant `{ov}` of {name} changed its tag from {ko} to {kn}",
                    old=_raw_key(ko),
                    new=_raw_key(kn),
                    fl=fl,
                )
            elif self.types.get(ov) != nv:
                self.emit(
                    rules.UNION_VARIANT_TYPE_CHANGED,
                    "type",
                    loc,
                    f"variant {ko} of {name} is now `{nv}` instead of `{ov}`, which do not correspond",
                    old=ov,
                    new=nv,
                    fl=fl,
                    hint=self._type_hint(ov, nv),
                )
        for ko in left_o:
            for d in dirs:
                self.emit(
                    rules.UNION_VARIANT_REMOVED[d],
                    "type",
                    loc,
                    f"variant {ko} (`{okeys[ko]}`) removed from {name}",
                    old=okeys[ko],
                    direction=d,
                    fl=fl,
                    unstable=self._unstable_only("type", loc) or self._branch_unstable(self.old, okeys[ko]),
                )
        for kn in left_n:
            for d in dirs:
                self.emit(
                    rules.UNION_VARIANT_ADDED[d, o.open],
                    "type",
                    loc,
                    f"variant {kn} (`{nkeys[kn]}`) added to {name}",
                    new=nkeys[kn],
                    direction=d,
                    fl=fl,
                    unstable=self._unstable_only("type", loc) or self._branch_unstable(self.new, nkeys[kn]),
                )
        self._openness("union", loc, name, o.open, n.open, dirs, fl)

    def _openness(
        self, kind: str, loc: str, name: str, was: bool, now: bool, dirs: tuple[str, ...], fl: set[tuple[str, str]]
    ) -> None:
        if was == now:
            return
        old, new = ("open", "closed") if was else ("closed", "open")
        if now:
            self.emit(rules.BECAME_OPEN[kind], "type", loc, f"{kind} {name} became open", old=old, new=new, fl=fl)
            return
        for d in dirs:
            self.emit(
                rules.BECAME_CLOSED[d, kind],
                "type",
                loc,
                f"{kind} {name} became closed",
                old=old,
                new=new,
                direction=d,
                fl=fl,
            )

    # -- enums

    def compare_enum(self, o: EnumType, n: EnumType, fl: set[tuple[str, str]]) -> None:
        loc, name = o.name, f"`{o.name}`"
        dirs = _directions(fl)
        for value in sorted(set(o.values) - set(n.values)):
            for d in dirs:
                self.emit(
                    rules.ENUM_VALUE_REMOVED[d],
                    "type",
                    loc,
                    f"value {json.dumps(value)} removed from enum {name}",
                    old=value,
                    direction=d,
                    fl=fl,
                )
        for value in sorted(set(n.values) - set(o.values)):
            for d in dirs:
                self.emit(
                    rules.ENUM_VALUE_ADDED[d, o.open],
                    "type",
                    loc,
                    f"value {json.dumps(value)} added to enum {name}",
                    new=value,
                    direction=d,
                    fl=fl,
                )
        self._openness("enum", loc, name, o.open, n.open, dirs, fl)

    # -- aliases

    def compare_alias(self, o: AliasType, n: AliasType, fl: set[tuple[str, str]]) -> None:
        if o.same_kind != n.same_kind:
            now = "now requires" if n.same_kind else "no longer requires"
            self.emit(
                rules.ALIAS_SAME_KIND_CHANGED,
                "type",
                o.name,
                f"alias `{o.name}` {now} every item to be of the same branch",
                old=o.same_kind,
                new=n.same_kind,
                fl=fl,
            )
        a, b = o.type, n.type
        if a.nullable != b.nullable:
            # an alias is judged as a whole: null in or out changes its type
            self.emit(
                rules.ALIAS_TYPE_CHANGED,
                "type",
                o.name,
                f"type of alias `{o.name}` changed from `{a.render()}` to `{b.render()}`",
                old=a.render(),
                new=b.render(),
                fl=fl,
            )
            return
        self.compare_expr(o.name, f"alias `{o.name}`", a, b, fl, type_rule=rules.ALIAS_TYPE_CHANGED)


def _kind(t: TypeDef) -> str:
    return {"object": "an object", "union": "a union", "enum": "an enum", "alias": "an alias"}[t.kind]


def _constraints(t: TypeExpr) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in t.constraints) or "none"


def _discriminator(u: UnionType) -> str:
    if u.tag is not None:
        return f"the tag `{u.tag}`"
    keys = sorted(k for k, _ in (u.presence or ()))
    return "the presence of " + ", ".join(f"`{k}`" for k in keys)


def _variant_keys(u: UnionType) -> dict[str, str]:
    """Each branch under the key a receiver dispatches on: its tag value, presence key, or its name."""
    out: dict[str, str] = {}
    if u.presence is not None:
        for key, branch in u.presence:
            out[f"`{key}`"] = branch
        return out
    for v in u.variants:
        out[json.dumps(v.tag) if v.tag is not None else NO_TAG] = v.name
    return out


def _raw_key(key: str) -> str | None:
    """The tag value or presence key behind a display key; None for the untagged default branch."""
    if key == NO_TAG:
        return None
    return json.loads(key) if key.startswith('"') else key.strip("`")


def compare(old: Protocol, new: Protocol, crossmap: CrossMap | None = None) -> list[Change]:
    """Every change from ``old`` to ``new``, sorted; the cross-version map pairs renames across versions."""
    return _Differ(old, new, crossmap).run()
