"""The rules of the diff, as data: one entry per kind of change.

Every change the comparison finds names one of these rules. A rule fixes the
level (how bad the change is), the axis it breaks and, for rules that depend on
it, the direction of the payload. ``docs/diff-rules.md`` is generated from this
table, so the documentation cannot drift from what the code does.
The conventions behind the levels are in ``CONVENTIONS`` below (also printed
at the top of the rule table).
"""

from __future__ import annotations

from dataclasses import dataclass

BREAKING, POSSIBLY, SAFE = "breaking", "possibly-breaking", "safe"
LEVELS = (BREAKING, POSSIBLY, SAFE)  # worst first
LEVEL_TITLES = {BREAKING: "Breaking", POSSIBLY: "Possibly breaking", SAFE: "Safe"}
WIRE, SOURCE = "wire", "source"
AXES = (WIRE, SOURCE)
REQUEST, RESPONSE, ANY = "request", "response", "any"
DIRECTIONS = (REQUEST, RESPONSE)
# The two pairings of peers on different schemas, seen from one payload's reader and writer.
NEW_READER, OLD_READER = "new-reader-old-writer", "old-reader-new-writer"
PAIRINGS = (NEW_READER, OLD_READER)
PAIRING_TITLES = {NEW_READER: "new reader, old writer", OLD_READER: "old reader, new writer"}

CONVENTIONS = """\
ACP peers upgrade independently: neither the client nor the agent is "the
server" that adopts a revision first. So every wire rule is judged for both
pairings of the two schemas, from the point of view of one payload: its
*writer* (the caller for a method's params, the handler for its result) and its
*reader* (the other peer). **New reader, old writer**: the peer reading the
payload follows the new schema, the one writing it the old (a client built on
the new schema reading the answers of an agent built on the old one). **Old
reader, new writer**: the other way round. A rule's level (oasdiff's breaking,
possibly-breaking and safe, without its assumption of one server that upgrades
first) is the worse of the two; the rule table gives each pairing's outcome,
and every change says which pairing it breaks and, for a method's payload,
which peer is which.

A **request** is a method's params and everything reachable from them, a
**response** its result and everything reachable from it. A type reachable from
both is checked in both directions, and a change to it is reported once per
direction; so is a definition no method reaches. With independent upgrades the
request and response twins of a rule are judged alike; the direction only says
who writes the payload (the client for an agent-side method's params, the agent
for its result, the other way round for client-side methods such as
`session/update`).

The second axis comes from buf: a change breaks the **wire** when a peer's
messages stop being understood in one of the pairings, and only the generated
**source** when the messages stay the same but code importing `acp_types` stops
working (a renamed class, a removed attribute). A rule's axis is the one it
breaks; when it breaks both, the wire.
"""

# What a rule is about; the report and the rule table are grouped by it.
SUBJECTS = ("protocol", "method", "feature", "type", "field", "union", "enum", "alias")


@dataclass(frozen=True)
class Rule:
    id: str
    subject: str
    level: str
    axis: str
    direction: str  # REQUEST, RESPONSE, or ANY when the level does not depend on it
    new_reader: str  # the wire outcome when the payload's reader follows the new schema and its writer the old
    old_reader: str  # ... and when the reader follows the old schema and the writer the new
    summary: str
    rationale: str

    def outcome(self, pairing: str) -> str:
        return self.new_reader if pairing == NEW_READER else self.old_reader

    @property
    def breaks(self) -> tuple[str, ...]:
        """The pairings in which the change is not safe on the wire, the worse first."""
        hit = [p for p in PAIRINGS if self.outcome(p) != SAFE]
        return tuple(sorted(hit, key=lambda p: level_rank(self.outcome(p))))


_DEFINED: list[Rule] = []


def _rule(
    rule_id: str,
    subject: str,
    level: str,
    axis: str,
    direction: str,
    pairings: tuple[str, str],
    summary: str,
    rationale: str,
) -> Rule:
    """Define one rule; the comparison emits it through the constant it is bound to."""
    r = Rule(rule_id, subject, level, axis, direction, pairings[0], pairings[1], summary, rationale)
    _DEFINED.append(r)
    return r


# -- the protocol as a whole
PROTOCOL_VERSION_CHANGED = _rule(
    "protocol-version-changed",
    "protocol",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "protocolVersion changed",
    "Peers settle on one protocolVersion in initialize, so a peer that speaks only the old number "
    "cannot talk to one that speaks only the new.",
)
PROTOCOL_STATUS_CHANGED = _rule(
    "protocol-status-changed",
    "protocol",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "the version's status (stable, draft) changed",
    "The status tells implementers what to expect from the version; it changes no message.",
)
# -- methods
METHOD_ADDED = _rule(
    "method-added",
    "method",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "a method gated by a capability was added",
    "Callers only use a gated method after the handler advertises its capability: an old caller never "
    "calls it, and a new caller does not find the capability on an old handler.",
)
UNGATED_METHOD_ADDED = _rule(
    "ungated-method-added",
    "method",
    POSSIBLY,
    WIRE,
    ANY,
    (SAFE, POSSIBLY),
    "a baseline method (no capability) was added",
    "Nothing tells a new caller whether an old handler knows a baseline method, so calling it gets "
    "method-not-found (old callers never call it).",
)
METHOD_REMOVED = _rule(
    "method-removed",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (SAFE, BREAKING),
    "a method was removed",
    "An old caller still calls the method and a new handler answers method-not-found (a new caller "
    "simply stops calling an old handler).",
)
METHOD_RENAMED = _rule(
    "method-renamed",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a method was renamed (paired by the cross-version map)",
    "The method name is the JSON-RPC `method` string, so a peer using the old name gets method-not-found.",
)
METHOD_KIND_CHANGED = _rule(
    "method-kind-changed",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a request became a notification or the other way round",
    "A request waits for a result that a notification never gets, and a notification sent where a "
    "request is expected carries no id to answer.",
)
METHOD_SIDE_CHANGED = _rule(
    "method-side-changed",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "the side that handles a method changed",
    "The peer that used to handle the method no longer does, so calls in the old direction go unanswered.",
)
METHOD_PARAMS_TYPE_CHANGED = _rule(
    "method-params-type-changed",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a method's params are now described by an unrelated definition",
    "The params no longer follow the definition old peers validate them against.",
)
METHOD_RESULT_TYPE_CHANGED = _rule(
    "method-result-type-changed",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a method's result is now described by an unrelated definition",
    "The result no longer follows the definition old callers read it with.",
)
METHOD_GATE_ADDED = _rule(
    "method-gate-added",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, POSSIBLY),
    "a baseline method now needs a capability",
    "An old caller calls the method unconditionally and a new handler that does not advertise the "
    "capability need not implement it, while a new caller gives up on an old handler that implements "
    "it without advertising anything.",
)
METHOD_GATE_REMOVED = _rule(
    "method-gate-removed",
    "method",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a gated method became baseline",
    "An old caller looks for a capability a new handler may no longer advertise and concludes the "
    "method is unsupported, and a new caller calls it on an old handler that may not implement it.",
)
METHOD_GATE_MOVED = _rule(
    "method-gate-moved",
    "method",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "the capability that gates a method moved",
    "Peers look for the old capability path in initialize, no longer find it, and treat the method as unsupported.",
)
METHOD_ERROR_ADDED = _rule(
    "method-error-added",
    "method",
    POSSIBLY,
    WIRE,
    ANY,
    (SAFE, POSSIBLY),
    "a method may return a new ACP error code",
    "An old caller may not handle the new code a new handler returns (an old handler never returns it "
    "to a new caller).",
)
METHOD_ERROR_REMOVED = _rule(
    "method-error-removed",
    "method",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, SAFE),
    "a method no longer returns an ACP error code",
    "A new caller may no longer handle a code an old handler still returns (an old caller keeps "
    "handling a code that stops arriving).",
)
STABILITY_PROMOTED = _rule(
    "stability-promoted",
    "method",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "a method became more stable (proposal -> draft -> stable)",
    "Promotion only strengthens the promise that the method keeps its shape.",
)
STABILITY_DEMOTED = _rule(
    "stability-demoted",
    "method",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a method became less stable",
    "A less stable method may change or disappear without a new protocol version.",
)
METHOD_STABILIZED = _rule(
    "method-stabilized",
    "method",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "an unstable method became stable",
    "The method leaves the protocol's unstable schema for the stable one, which only strengthens the "
    "promise that it keeps its shape.",
)
METHOD_DESTABILIZED = _rule(
    "method-destabilized",
    "method",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a stable method became unstable",
    "It leaves the stable protocol: it may change or disappear without a new protocol version, and "
    "peers that validate against the stable schema no longer accept it.",
)
REFERENCE_UNSUPPORTED = _rule(
    "reference-unsupported",
    "method",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "the reference has a construct our schema format cannot express (compare-reference only)",
    "Nothing in our schema can match it, so peers following the reference may send or expect messages "
    "ours does not describe; schema/differences.json says why it is left out.",
)
# -- features
FEATURE_ADDED = _rule(
    "feature-added",
    "feature",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "an optional feature was added",
    "A feature is only used after its capability is advertised, so older peers are unaffected.",
)
FEATURE_REMOVED = _rule(
    "feature-removed",
    "feature",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "an optional feature was removed",
    "Peers can no longer negotiate the ability, and those that relied on it lose it.",
)
FEATURE_GATE_MOVED = _rule(
    "feature-gate-moved",
    "feature",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "the capability that advertises a feature moved",
    "Peers look for the old capability path and conclude the feature is unsupported.",
)
FEATURE_STABILIZED = _rule(
    "feature-stabilized",
    "feature",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "an unstable feature became stable",
    "The ability joins the stable protocol; peers that negotiated it keep working.",
)
FEATURE_DESTABILIZED = _rule(
    "feature-destabilized",
    "feature",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a stable feature became unstable",
    "The ability may now change or disappear without a new protocol version.",
)
FEATURE_SIDE_CHANGED = _rule(
    "feature-side-changed",
    "feature",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "the side that advertises a feature changed",
    "Peers look for the capability in the other side's initialize message and do not find it.",
)
# -- definitions
TYPE_ADDED = _rule(
    "type-added",
    "type",
    SAFE,
    SOURCE,
    ANY,
    (SAFE, SAFE),
    "a definition was added",
    "A new class breaks no existing import, and only messages that use it can carry it.",
)
TYPE_REMOVED = _rule(
    "type-removed",
    "type",
    BREAKING,
    SOURCE,
    ANY,
    (SAFE, SAFE),
    "a definition was removed",
    "Code importing the class fails; the effect on the wire is reported where the type was used.",
)
TYPE_RENAMED = _rule(
    "type-renamed",
    "type",
    BREAKING,
    SOURCE,
    ANY,
    (SAFE, SAFE),
    "a definition was renamed (paired by the cross-version map)",
    "Definition names never travel on the wire, but code importing the old class name fails.",
)
TYPE_KIND_CHANGED = _rule(
    "type-kind-changed",
    "type",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a definition changed kind (object, union, enum, alias)",
    "Values of the old kind do not validate against the new one.",
)
TYPE_STABILIZED = _rule(
    "type-stabilized",
    "type",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "an unstable definition (or union branch) became stable",
    "Its shape is now promised by the stable protocol, and the stable-only schema starts to carry it; "
    "messages that use it are unchanged.",
)
TYPE_DESTABILIZED = _rule(
    "type-destabilized",
    "type",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a stable definition (or union branch) became unstable",
    "It leaves the stable-only schema, so peers validating strictly against it reject messages "
    "that carry it, and it may change without a new protocol version.",
)
FIELD_STABILIZED = _rule(
    "field-stabilized",
    "field",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "an unstable field became stable",
    "The field joins the stable protocol with the shape it had; readers that ignored it may now rely on it.",
)
FIELD_DESTABILIZED = _rule(
    "field-destabilized",
    "field",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a stable field became unstable",
    "The field leaves the stable-only schema and may change or disappear without a new protocol version.",
)
# -- object fields
OPTIONAL_FIELD_ADDED = _rule(
    "optional-field-added",
    "field",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "an optional field was added",
    "Objects are open, so an old reader ignores the extra key and a new reader copes with an old "
    "writer leaving it out.",
)
REQUEST_REQUIRED_FIELD_ADDED = _rule(
    "request-required-field-added",
    "field",
    BREAKING,
    WIRE,
    REQUEST,
    (BREAKING, SAFE),
    "a required field was added to a request",
    "An old caller does not send the field and a new handler rejects its messages (an old handler "
    "ignores the extra key a new caller sends).",
)
RESPONSE_REQUIRED_FIELD_ADDED = _rule(
    "response-required-field-added",
    "field",
    BREAKING,
    WIRE,
    RESPONSE,
    (BREAKING, SAFE),
    "a required field was added to a response",
    "An old handler does not send the field and a new caller rejects every answer (an old caller "
    "ignores the extra key a new handler sends).",
)
REQUEST_OPTIONAL_FIELD_REMOVED = _rule(
    "request-optional-field-removed",
    "field",
    BREAKING,
    SOURCE,
    REQUEST,
    (SAFE, SAFE),
    "an optional field was removed from a request",
    "An old handler already copes with its absence and a new handler ignores the key an old caller still "
    "sends, but code that sets the attribute fails.",
)
REQUEST_REQUIRED_FIELD_REMOVED = _rule(
    "request-required-field-removed",
    "field",
    BREAKING,
    WIRE,
    REQUEST,
    (SAFE, BREAKING),
    "a required field was removed from a request",
    "An old handler requires the field and rejects a new caller that leaves it out (a new handler ignores "
    "the key an old caller still sends).",
)
RESPONSE_REQUIRED_FIELD_REMOVED = _rule(
    "response-required-field-removed",
    "field",
    BREAKING,
    WIRE,
    RESPONSE,
    (SAFE, BREAKING),
    "a required field was removed from a response",
    "An old caller requires the field and rejects the answers of a new handler that leaves it out (a "
    "new caller ignores the key an old handler still sends).",
)
RESPONSE_OPTIONAL_FIELD_REMOVED = _rule(
    "response-optional-field-removed",
    "field",
    BREAKING,
    SOURCE,
    RESPONSE,
    (SAFE, SAFE),
    "an optional field was removed from a response",
    "An old caller already copes with its absence and a new caller ignores the key an old handler "
    "still sends, but code reading the attribute fails.",
)
FIELD_RENAMED = _rule(
    "field-renamed",
    "field",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a field was renamed (paired by the cross-version map)",
    "The wire key changes, so each side looks for a key the other no longer writes.",
)
REQUEST_FIELD_BECAME_REQUIRED = _rule(
    "request-field-became-required",
    "field",
    BREAKING,
    WIRE,
    REQUEST,
    (BREAKING, SAFE),
    "an optional field of a request became required",
    "An old caller may leave the field out, as it was allowed to, and a new handler rejects it (an "
    "old handler copes with a new caller always sending it).",
)
RESPONSE_FIELD_BECAME_REQUIRED = _rule(
    "response-field-became-required",
    "field",
    BREAKING,
    WIRE,
    RESPONSE,
    (BREAKING, SAFE),
    "an optional field of a response became required",
    "An old handler may leave the field out, as it was allowed to, and a new caller rejects its "
    "answer (an old caller only gains a guarantee).",
)
REQUEST_FIELD_BECAME_OPTIONAL = _rule(
    "request-field-became-optional",
    "field",
    BREAKING,
    WIRE,
    REQUEST,
    (SAFE, BREAKING),
    "a required field of a request became optional",
    "An old handler requires the field and rejects a new caller that leaves it out (a new handler "
    "copes with an old caller always sending it).",
)
RESPONSE_FIELD_BECAME_OPTIONAL = _rule(
    "response-field-became-optional",
    "field",
    BREAKING,
    WIRE,
    RESPONSE,
    (SAFE, BREAKING),
    "a required field of a response became optional",
    "An old caller requires the field and rejects the answers of a new handler that leave it out.",
)
REQUEST_FIELD_BECAME_NULLABLE = _rule(
    "request-field-became-nullable",
    "field",
    BREAKING,
    WIRE,
    REQUEST,
    (SAFE, BREAKING),
    "a field of a request now admits null",
    "An old handler rejects the null a new caller may now send (an old caller never sends null).",
)
RESPONSE_FIELD_BECAME_NULLABLE = _rule(
    "response-field-became-nullable",
    "field",
    BREAKING,
    WIRE,
    RESPONSE,
    (SAFE, BREAKING),
    "a field of a response now admits null",
    "An old caller rejects a null it was never promised, which a new handler may now send.",
)
REQUEST_FIELD_BECAME_NON_NULLABLE = _rule(
    "request-field-became-non-nullable",
    "field",
    BREAKING,
    WIRE,
    REQUEST,
    (BREAKING, SAFE),
    "a field of a request no longer admits null",
    "An old caller may still send null, which a new handler now rejects.",
)
RESPONSE_FIELD_BECAME_NON_NULLABLE = _rule(
    "response-field-became-non-nullable",
    "field",
    BREAKING,
    WIRE,
    RESPONSE,
    (BREAKING, SAFE),
    "a field of a response no longer admits null",
    "An old handler may still answer null, which a new caller now rejects (an old caller handles null "
    "and simply stops receiving it).",
)
FIELD_TYPE_CHANGED = _rule(
    "field-type-changed",
    "field",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a field's type changed",
    "Values of the old type do not validate against the new one, in either direction.",
)
TYPE_ANNOTATION_CHANGED = _rule(
    "type-annotation-changed",
    "field",
    SAFE,
    SOURCE,
    ANY,
    (SAFE, SAFE),
    "a field's or alias's type annotation names other definitions but resolves to the same wire type",
    "The same JSON validates as before; only the name used in the annotation differs.",
)
CONSTRAINTS_CHANGED = _rule(
    "constraints-changed",
    "field",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "the constraints of a field or alias changed (format, pattern, bounds, lengths)",
    "Tighter constraints make a new reader reject values an old writer produces, looser ones let a "
    "new writer produce values an old reader rejects.",
)
FIELD_DEFAULT_CHANGED = _rule(
    "field-default-changed",
    "field",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "the default of a field changed",
    "An omitted field now means something else to the reader than the writer intended.",
)
FIELD_PATCH_CHANGED = _rule(
    "field-patch-changed",
    "field",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a field started or stopped being a patch field (omitted = unchanged, null = clear)",
    "Omitted and null change meaning, so the two sides disagree on what the update does.",
)
TOLERANCE_ADDED = _rule(
    "tolerance-added",
    "field",
    SAFE,
    WIRE,
    ANY,
    (SAFE, SAFE),
    "a field gained a receiver tolerance marker (x-acp-on-error, x-acp-invalid-items)",
    "A new receiver becomes more lenient while what writers of either schema write stays the same.",
)
REQUEST_TOLERANCE_REMOVED = _rule(
    "request-tolerance-removed",
    "field",
    POSSIBLY,
    WIRE,
    REQUEST,
    (POSSIBLY, SAFE),
    "a field of a request lost a receiver tolerance marker",
    "A new handler fails a whole message on a malformed value it used to drop, and an old caller may send one.",
)
RESPONSE_TOLERANCE_REMOVED = _rule(
    "response-tolerance-removed",
    "field",
    POSSIBLY,
    WIRE,
    RESPONSE,
    (POSSIBLY, SAFE),
    "a field of a response lost a receiver tolerance marker",
    "A new caller fails a whole answer on a malformed value it used to drop, and an old handler may send one.",
)
# -- unions
REQUEST_CLOSED_UNION_VARIANT_ADDED = _rule(
    "request-closed-union-variant-added",
    "union",
    BREAKING,
    WIRE,
    REQUEST,
    (SAFE, BREAKING),
    "a variant was added to a closed union in a request",
    "An old handler rejects a tag its closed union does not list, which a new caller may send (an old "
    "caller never sends it).",
)
REQUEST_OPEN_UNION_VARIANT_ADDED = _rule(
    "request-open-union-variant-added",
    "union",
    POSSIBLY,
    WIRE,
    REQUEST,
    (SAFE, POSSIBLY),
    "a variant was added to an open union in a request",
    "An old handler keeps the new variant a new caller sends as unknown, but cannot act on it.",
)
RESPONSE_CLOSED_UNION_VARIANT_ADDED = _rule(
    "response-closed-union-variant-added",
    "union",
    BREAKING,
    WIRE,
    RESPONSE,
    (SAFE, BREAKING),
    "a variant was added to a closed union in a response",
    "An old caller rejects a tag its closed union does not list, which a new handler may send.",
)
RESPONSE_OPEN_UNION_VARIANT_ADDED = _rule(
    "response-open-union-variant-added",
    "union",
    POSSIBLY,
    WIRE,
    RESPONSE,
    (SAFE, POSSIBLY),
    "a variant was added to an open union in a response",
    "An old caller keeps the new variant a new handler sends as unknown, but cannot act on it.",
)
REQUEST_UNION_VARIANT_REMOVED = _rule(
    "request-union-variant-removed",
    "union",
    BREAKING,
    WIRE,
    REQUEST,
    (BREAKING, SAFE),
    "a variant was removed from a union in a request",
    "An old caller may still send the variant, which a new handler rejects or, on an open union, "
    "keeps without understanding it.",
)
RESPONSE_UNION_VARIANT_REMOVED = _rule(
    "response-union-variant-removed",
    "union",
    BREAKING,
    WIRE,
    RESPONSE,
    (BREAKING, SAFE),
    "a variant was removed from a union in a response",
    "An old handler may still answer with the variant, which a new caller rejects or, on an open "
    "union, keeps without understanding it.",
)
UNION_VARIANT_TAG_CHANGED = _rule(
    "union-variant-tag-changed",
    "union",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a union variant kept its definition but changed its tag value",
    "Each side dispatches on a tag value the other no longer writes.",
)
UNION_VARIANT_TYPE_CHANGED = _rule(
    "union-variant-type-changed",
    "union",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "a union tag is now carried by an unrelated definition",
    "The payload under that tag follows a different definition; whether old peers still read it "
    "depends on how far the two differ.",
)
UNION_DISCRIMINATOR_CHANGED = _rule(
    "union-discriminator-changed",
    "union",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "a union picks its branch differently (another tag property, or presence instead of a tag)",
    "Old readers look for the branch where new writers no longer put it.",
)
UNION_DEFAULT_CHANGED = _rule(
    "union-default-changed",
    "union",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "the branch used when the tag is absent changed",
    "Messages without the tag are read as another variant than the writer meant.",
)
UNION_UNKNOWN_READING_CHANGED = _rule(
    "union-unknown-reading-changed",
    "union",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "an unknown tag value of a closed union is now read as the default branch, or no longer is",
    "One side accepts an object with a tag it does not know as the default branch where the other "
    "rejects it (or drops it from a tolerant list).",
)
UNION_UNKNOWN_REQUIRED_CHANGED = _rule(
    "union-unknown-required-changed",
    "union",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "the properties an unknown variant of an open union must carry changed",
    "An unknown variant that lacks one of them is kept by one side and rejected by the other.",
)
OBJECT_REQUIRED_ONE_OF_CHANGED = _rule(
    "object-required-one-of-changed",
    "type",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "the set of properties of which at least one must be present changed",
    "An object carrying none of them is read by one side and rejected by the other.",
)
ALIAS_SAME_KIND_CHANGED = _rule(
    "alias-same-kind-changed",
    "alias",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "whether every item of an array must be of the same union branch changed",
    "An array mixing branches is read by one side and rejected by the other.",
)
UNION_OVERLAP_CHANGED = _rule(
    "union-overlap-changed",
    "union",
    POSSIBLY,
    WIRE,
    ANY,
    (POSSIBLY, POSSIBLY),
    "whether an object with several presence keys is read as the first branch changed",
    "An object that fits two untagged branches at once is read by one side and rejected by the other.",
)
UNION_BECAME_OPEN = _rule(
    "union-became-open",
    "union",
    POSSIBLY,
    SOURCE,
    ANY,
    (SAFE, SAFE),
    "a closed union became open",
    "Receivers now accept unknown tags, which is wire compatible, but the generated union gains an "
    "unknown branch that exhaustive code must handle.",
)
REQUEST_UNION_BECAME_CLOSED = _rule(
    "request-union-became-closed",
    "union",
    BREAKING,
    WIRE,
    REQUEST,
    (BREAKING, SAFE),
    "an open union in a request became closed",
    "An old caller may send unknown or extension variants, which a new handler now rejects.",
)
RESPONSE_UNION_BECAME_CLOSED = _rule(
    "response-union-became-closed",
    "union",
    BREAKING,
    WIRE,
    RESPONSE,
    (BREAKING, SAFE),
    "an open union in a response became closed",
    "An old handler may answer with unknown or extension variants, which a new caller now rejects (an "
    "old caller stays tolerant).",
)
# -- enums
REQUEST_CLOSED_ENUM_VALUE_ADDED = _rule(
    "request-closed-enum-value-added",
    "enum",
    BREAKING,
    WIRE,
    REQUEST,
    (SAFE, BREAKING),
    "a value was added to a closed enum in a request",
    "An old handler rejects a value its closed enum does not list, which a new caller may send (an old "
    "caller never sends it).",
)
REQUEST_OPEN_ENUM_VALUE_ADDED = _rule(
    "request-open-enum-value-added",
    "enum",
    POSSIBLY,
    WIRE,
    REQUEST,
    (SAFE, POSSIBLY),
    "a value was added to an open enum in a request",
    "An old handler keeps the value a new caller sends as an unknown string, but cannot act on it.",
)
RESPONSE_CLOSED_ENUM_VALUE_ADDED = _rule(
    "response-closed-enum-value-added",
    "enum",
    BREAKING,
    WIRE,
    RESPONSE,
    (SAFE, BREAKING),
    "a value was added to a closed enum in a response",
    "An old caller rejects a value its closed enum does not list, which a new handler may send.",
)
RESPONSE_OPEN_ENUM_VALUE_ADDED = _rule(
    "response-open-enum-value-added",
    "enum",
    POSSIBLY,
    WIRE,
    RESPONSE,
    (SAFE, POSSIBLY),
    "a value was added to an open enum in a response",
    "An old caller keeps the value a new handler sends as an unknown string, but cannot act on it.",
)
REQUEST_ENUM_VALUE_REMOVED = _rule(
    "request-enum-value-removed",
    "enum",
    BREAKING,
    WIRE,
    REQUEST,
    (BREAKING, SAFE),
    "a value was removed from an enum in a request",
    "An old caller may still send the value, which a new handler rejects or no longer understands.",
)
RESPONSE_ENUM_VALUE_REMOVED = _rule(
    "response-enum-value-removed",
    "enum",
    BREAKING,
    WIRE,
    RESPONSE,
    (BREAKING, SAFE),
    "a value was removed from an enum in a response",
    "An old handler may still answer with the value, which a new caller rejects or no longer understands.",
)
ENUM_BECAME_OPEN = _rule(
    "enum-became-open",
    "enum",
    POSSIBLY,
    SOURCE,
    ANY,
    (SAFE, SAFE),
    "a closed enum became open",
    "Receivers now keep unknown values, which is wire compatible, but the generated type widens from "
    "a Literal to str and exhaustive code must handle other values.",
)
REQUEST_ENUM_BECAME_CLOSED = _rule(
    "request-enum-became-closed",
    "enum",
    BREAKING,
    WIRE,
    REQUEST,
    (BREAKING, SAFE),
    "an open enum in a request became closed",
    "An old caller may send unknown or extension values, which a new handler now rejects.",
)
RESPONSE_ENUM_BECAME_CLOSED = _rule(
    "response-enum-became-closed",
    "enum",
    BREAKING,
    WIRE,
    RESPONSE,
    (BREAKING, SAFE),
    "an open enum in a response became closed",
    "An old handler may answer with unknown or extension values, which a new caller now rejects (an "
    "old caller stays tolerant).",
)
# -- aliases
ALIAS_TYPE_CHANGED = _rule(
    "alias-type-changed",
    "alias",
    BREAKING,
    WIRE,
    ANY,
    (BREAKING, BREAKING),
    "the type an alias stands for changed",
    "Values of the old type do not validate against the new one, in either direction.",
)

RULES: tuple[Rule, ...] = tuple(_DEFINED)

# The rules that come in pairs, looked up by what the comparison found.
GATE_MOVED = {"method": METHOD_GATE_MOVED, "feature": FEATURE_GATE_MOVED}
REQUIRED_FIELD_ADDED = {REQUEST: REQUEST_REQUIRED_FIELD_ADDED, RESPONSE: RESPONSE_REQUIRED_FIELD_ADDED}
FIELD_BECAME = {
    (REQUEST, "required"): REQUEST_FIELD_BECAME_REQUIRED,
    (RESPONSE, "required"): RESPONSE_FIELD_BECAME_REQUIRED,
    (REQUEST, "optional"): REQUEST_FIELD_BECAME_OPTIONAL,
    (RESPONSE, "optional"): RESPONSE_FIELD_BECAME_OPTIONAL,
    (REQUEST, "nullable"): REQUEST_FIELD_BECAME_NULLABLE,
    (RESPONSE, "nullable"): RESPONSE_FIELD_BECAME_NULLABLE,
    (REQUEST, "non-nullable"): REQUEST_FIELD_BECAME_NON_NULLABLE,
    (RESPONSE, "non-nullable"): RESPONSE_FIELD_BECAME_NON_NULLABLE,
}
TOLERANCE_REMOVED = {REQUEST: REQUEST_TOLERANCE_REMOVED, RESPONSE: RESPONSE_TOLERANCE_REMOVED}
UNION_VARIANT_REMOVED = {REQUEST: REQUEST_UNION_VARIANT_REMOVED, RESPONSE: RESPONSE_UNION_VARIANT_REMOVED}
FIELD_REMOVED = {
    (REQUEST, True): REQUEST_REQUIRED_FIELD_REMOVED,
    (REQUEST, False): REQUEST_OPTIONAL_FIELD_REMOVED,
    (RESPONSE, True): RESPONSE_REQUIRED_FIELD_REMOVED,
    (RESPONSE, False): RESPONSE_OPTIONAL_FIELD_REMOVED,
}
# (direction, the union or enum was open) -> the rule of an added variant or value
UNION_VARIANT_ADDED = {
    (REQUEST, False): REQUEST_CLOSED_UNION_VARIANT_ADDED,
    (REQUEST, True): REQUEST_OPEN_UNION_VARIANT_ADDED,
    (RESPONSE, False): RESPONSE_CLOSED_UNION_VARIANT_ADDED,
    (RESPONSE, True): RESPONSE_OPEN_UNION_VARIANT_ADDED,
}
ENUM_VALUE_ADDED = {
    (REQUEST, False): REQUEST_CLOSED_ENUM_VALUE_ADDED,
    (REQUEST, True): REQUEST_OPEN_ENUM_VALUE_ADDED,
    (RESPONSE, False): RESPONSE_CLOSED_ENUM_VALUE_ADDED,
    (RESPONSE, True): RESPONSE_OPEN_ENUM_VALUE_ADDED,
}
BECAME_OPEN = {"union": UNION_BECAME_OPEN, "enum": ENUM_BECAME_OPEN}
BECAME_CLOSED = {
    (REQUEST, "union"): REQUEST_UNION_BECAME_CLOSED,
    (RESPONSE, "union"): RESPONSE_UNION_BECAME_CLOSED,
    (REQUEST, "enum"): REQUEST_ENUM_BECAME_CLOSED,
    (RESPONSE, "enum"): RESPONSE_ENUM_BECAME_CLOSED,
}
STABILIZED = {
    "method": METHOD_STABILIZED,
    "feature": FEATURE_STABILIZED,
    "type": TYPE_STABILIZED,
    "field": FIELD_STABILIZED,
}
DESTABILIZED = {
    "method": METHOD_DESTABILIZED,
    "feature": FEATURE_DESTABILIZED,
    "type": TYPE_DESTABILIZED,
    "field": FIELD_DESTABILIZED,
}
ENUM_VALUE_REMOVED = {REQUEST: REQUEST_ENUM_VALUE_REMOVED, RESPONSE: RESPONSE_ENUM_VALUE_REMOVED}

# Emitted by compare-reference (generator/reference.py) about a reference it reads, never by comparing two
# schemas of ours.
REFERENCE_ONLY = frozenset({REFERENCE_UNSUPPORTED.id})

BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
assert len(BY_ID) == len(RULES), "rule ids must be unique"


def rule(rule_id: str) -> Rule:
    return BY_ID[rule_id]


def level_rank(level: str) -> int:
    """0 for breaking, 1 for possibly breaking, 2 for safe."""
    return LEVELS.index(level)
