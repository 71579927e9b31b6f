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

CONVENTIONS = """\
Levels and directions follow oasdiff's convention, translated to ACP: the
*handler* of a method is the party that adopts a revision of it, and its callers
may still speak the previous one. A **request** is a method's params and
everything reachable from them: the handler reads it, possibly-old callers write
it. A **response** is a method's result and everything reachable from it: the
handler writes it, possibly-old callers read it. A type reachable from both is
checked in both directions, and a change to it is reported once per direction;
so is a definition no method reaches. Each change also says which side writes
the payload (the client for an agent-side method's params, the agent for its
result, the other way round for client-side methods such as `session/update`):
when the writer adopts a revision before the reader, read a request rule as if
it were the matching response rule.

The second axis comes from buf: a change breaks the **wire** when a peer's
messages stop being understood, and only the generated **source** when the
messages stay the same but code importing `acp_types` stops working (a renamed
class, a removed attribute, an argument that became mandatory). A rule's axis is
the one it breaks; when it breaks both, the wire.
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
    summary: str
    rationale: str


RULES: tuple[Rule, ...] = (
    # -- the protocol as a whole
    Rule("protocol-version-changed", "protocol", BREAKING, WIRE, ANY,
         "protocolVersion changed",
         "Peers settle on one protocolVersion in initialize, so a peer that speaks only the old number "
         "cannot talk to one that speaks only the new."),
    Rule("protocol-status-changed", "protocol", SAFE, WIRE, ANY,
         "the version's status (stable, draft) changed",
         "The status tells implementers what to expect from the version; it changes no message."),
    # -- methods
    Rule("method-added", "method", SAFE, WIRE, ANY,
         "a method gated by a capability was added",
         "Callers only use a gated method after the handler advertises its capability, so peers that "
         "predate it never see it."),
    Rule("ungated-method-added", "method", POSSIBLY, WIRE, ANY,
         "a baseline method (no capability) was added",
         "Nothing tells a caller whether the handler knows a baseline method, so calling it on a peer "
         "that predates it gets method-not-found."),
    Rule("method-removed", "method", BREAKING, WIRE, ANY,
         "a method was removed",
         "Callers of the method get method-not-found from a handler that dropped it."),
    Rule("method-renamed", "method", BREAKING, WIRE, ANY,
         "a method was renamed (paired by the cross-version map)",
         "The method name is the JSON-RPC `method` string, so a peer using the old name gets "
         "method-not-found."),
    Rule("method-kind-changed", "method", BREAKING, WIRE, ANY,
         "a request became a notification or the other way round",
         "A request waits for a result that a notification never gets, and a notification sent where a "
         "request is expected carries no id to answer."),
    Rule("method-side-changed", "method", BREAKING, WIRE, ANY,
         "the side that handles a method changed",
         "The peer that used to handle the method no longer does, so calls in the old direction go "
         "unanswered."),
    Rule("method-params-type-changed", "method", BREAKING, WIRE, ANY,
         "a method's params are now described by an unrelated definition",
         "The params no longer follow the definition old peers validate them against."),
    Rule("method-result-type-changed", "method", BREAKING, WIRE, ANY,
         "a method's result is now described by an unrelated definition",
         "The result no longer follows the definition old callers read it with."),
    Rule("method-gate-added", "method", BREAKING, WIRE, ANY,
         "a baseline method now needs a capability",
         "Callers that used the method unconditionally must now check a capability a handler may not "
         "advertise."),
    Rule("method-gate-removed", "method", POSSIBLY, WIRE, ANY,
         "a gated method became baseline",
         "Every handler must now implement the method, and callers that still look for the old capability "
         "may conclude it is unsupported."),
    Rule("method-gate-moved", "method", BREAKING, WIRE, ANY,
         "the capability that gates a method moved",
         "Peers look for the old capability path in initialize, no longer find it, and treat the method as "
         "unsupported."),
    Rule("method-error-added", "method", POSSIBLY, WIRE, ANY,
         "a method may return a new ACP error code",
         "Callers written against the old error list may not handle the new code."),
    Rule("method-error-removed", "method", SAFE, WIRE, ANY,
         "a method no longer returns an ACP error code",
         "Callers keep handling a code that simply stops arriving."),
    Rule("stability-promoted", "method", SAFE, WIRE, ANY,
         "a method became more stable (proposal -> draft -> stable)",
         "Promotion only strengthens the promise that the method keeps its shape."),
    Rule("stability-demoted", "method", POSSIBLY, WIRE, ANY,
         "a method became less stable",
         "A less stable method may change or disappear without a new protocol version."),
    # -- features
    Rule("feature-added", "feature", SAFE, WIRE, ANY,
         "an optional feature was added",
         "A feature is only used after its capability is advertised, so older peers are unaffected."),
    Rule("feature-removed", "feature", BREAKING, WIRE, ANY,
         "an optional feature was removed",
         "Peers can no longer negotiate the ability, and those that relied on it lose it."),
    Rule("feature-gate-moved", "feature", BREAKING, WIRE, ANY,
         "the capability that advertises a feature moved",
         "Peers look for the old capability path and conclude the feature is unsupported."),
    Rule("feature-side-changed", "feature", BREAKING, WIRE, ANY,
         "the side that advertises a feature changed",
         "Peers look for the capability in the other side's initialize message and do not find it."),
    # -- definitions
    Rule("type-added", "type", SAFE, SOURCE, ANY,
         "a definition was added",
         "A new class breaks no existing import, and only messages that use it can carry it."),
    Rule("type-removed", "type", BREAKING, SOURCE, ANY,
         "a definition was removed",
         "Code importing the class fails; the effect on the wire is reported where the type was used."),
    Rule("type-renamed", "type", BREAKING, SOURCE, ANY,
         "a definition was renamed (paired by the cross-version map)",
         "Definition names never travel on the wire, but code importing the old class name fails."),
    Rule("type-kind-changed", "type", BREAKING, WIRE, ANY,
         "a definition changed kind (object, union, enum, alias)",
         "Values of the old kind do not validate against the new one."),
    # -- object fields
    Rule("optional-field-added", "field", SAFE, WIRE, ANY,
         "an optional field was added",
         "Objects are open, so old readers ignore the extra key and old writers may leave it out."),
    Rule("request-required-field-added", "field", BREAKING, WIRE, REQUEST,
         "a required field was added to a request",
         "Callers that predate the field do not send it, and the handler rejects their messages."),
    Rule("response-required-field-added", "field", BREAKING, SOURCE, RESPONSE,
         "a required field was added to a response",
         "Old callers ignore the extra key, but code that builds the response must now pass it."),
    Rule("request-field-removed", "field", BREAKING, SOURCE, REQUEST,
         "a field was removed from a request",
         "Old callers that still send it are not rejected (objects are open), but code that sets the "
         "attribute fails and the handler ignores what they meant."),
    Rule("response-required-field-removed", "field", BREAKING, WIRE, RESPONSE,
         "a required field was removed from a response",
         "Old callers require the field and reject responses without it."),
    Rule("response-optional-field-removed", "field", BREAKING, SOURCE, RESPONSE,
         "an optional field was removed from a response",
         "Old callers already cope with its absence, but code reading the attribute fails."),
    Rule("field-renamed", "field", BREAKING, WIRE, ANY,
         "a field was renamed (paired by the cross-version map)",
         "The wire key changes, so each side looks for a key the other no longer writes."),
    Rule("request-field-became-required", "field", BREAKING, WIRE, REQUEST,
         "an optional field of a request became required",
         "Callers that leave the field out, as they were allowed to, are now rejected."),
    Rule("response-field-became-required", "field", BREAKING, SOURCE, RESPONSE,
         "an optional field of a response became required",
         "Old callers only gain a guarantee, but code that builds the response must now pass the field."),
    Rule("request-field-became-optional", "field", POSSIBLY, SOURCE, REQUEST,
         "a required field of a request became optional",
         "Old callers keep sending it, but the handler's code reading the attribute must now cope with "
         "its absence."),
    Rule("response-field-became-optional", "field", BREAKING, WIRE, RESPONSE,
         "a required field of a response became optional",
         "Old callers require the field and reject responses that leave it out."),
    Rule("request-field-became-nullable", "field", POSSIBLY, SOURCE, REQUEST,
         "a field of a request now admits null",
         "Old callers never send null, but the handler's code reading the attribute must now cope with "
         "None."),
    Rule("response-field-became-nullable", "field", BREAKING, WIRE, RESPONSE,
         "a field of a response now admits null",
         "Old callers reject a null they were never promised."),
    Rule("request-field-became-non-nullable", "field", BREAKING, WIRE, REQUEST,
         "a field of a request no longer admits null",
         "Old callers may still send null, which the handler now rejects."),
    Rule("response-field-became-non-nullable", "field", SAFE, WIRE, RESPONSE,
         "a field of a response no longer admits null",
         "Old callers handle null and simply stop receiving it."),
    Rule("field-type-changed", "field", BREAKING, WIRE, ANY,
         "a field's type changed",
         "Values of the old type do not validate against the new one, in either direction."),
    Rule("type-annotation-changed", "field", SAFE, SOURCE, ANY,
         "a field's or alias's type annotation names other definitions but resolves to the same wire type",
         "The same JSON validates as before; only the name used in the annotation differs."),
    Rule("constraints-changed", "field", POSSIBLY, WIRE, ANY,
         "the constraints of a field or alias changed (format, pattern, bounds, lengths)",
         "Tighter constraints reject values old writers produce, looser ones let through values old "
         "readers reject."),
    Rule("field-default-changed", "field", POSSIBLY, WIRE, ANY,
         "the default of a field changed",
         "An omitted field now means something else to the reader than the writer intended."),
    Rule("field-patch-changed", "field", POSSIBLY, WIRE, ANY,
         "a field started or stopped being a patch field (omitted = unchanged, null = clear)",
         "Omitted and null change meaning, so the two sides disagree on what the update does."),
    Rule("tolerance-added", "field", SAFE, WIRE, ANY,
         "a field gained a receiver tolerance marker (x-acp-on-error, x-acp-invalid-items)",
         "Receivers become more lenient while what senders write stays the same."),
    Rule("request-tolerance-removed", "field", POSSIBLY, WIRE, REQUEST,
         "a field of a request lost a receiver tolerance marker",
         "The handler now fails a whole message on a malformed value it used to drop, and old callers may "
         "send one."),
    Rule("response-tolerance-removed", "field", SAFE, WIRE, RESPONSE,
         "a field of a response lost a receiver tolerance marker",
         "Old callers keep their own tolerance, and the handler writes valid values either way."),
    # -- unions
    Rule("request-union-variant-added", "union", SAFE, WIRE, REQUEST,
         "a variant was added to a union in a request",
         "Old callers never send the new variant."),
    Rule("response-closed-union-variant-added", "union", BREAKING, WIRE, RESPONSE,
         "a variant was added to a closed union in a response",
         "Old callers reject a tag their closed union does not list."),
    Rule("response-open-union-variant-added", "union", POSSIBLY, WIRE, RESPONSE,
         "a variant was added to an open union in a response",
         "Old callers keep the new variant as unknown, but cannot act on it."),
    Rule("request-union-variant-removed", "union", BREAKING, WIRE, REQUEST,
         "a variant was removed from a union in a request",
         "Old callers may still send the variant, which the handler rejects or, on an open union, keeps "
         "without understanding it."),
    Rule("response-union-variant-removed", "union", SAFE, WIRE, RESPONSE,
         "a variant was removed from a union in a response",
         "Old callers still understand every variant that can arrive."),
    Rule("union-variant-tag-changed", "union", BREAKING, WIRE, ANY,
         "a union variant kept its definition but changed its tag value",
         "Each side dispatches on a tag value the other no longer writes."),
    Rule("union-variant-type-changed", "union", POSSIBLY, WIRE, ANY,
         "a union tag is now carried by an unrelated definition",
         "The payload under that tag follows a different definition; whether old peers still read it "
         "depends on how far the two differ."),
    Rule("union-discriminator-changed", "union", BREAKING, WIRE, ANY,
         "a union picks its branch differently (another tag property, or presence instead of a tag)",
         "Old readers look for the branch where new writers no longer put it."),
    Rule("union-default-changed", "union", BREAKING, WIRE, ANY,
         "the branch used when the tag is absent changed",
         "Messages without the tag are read as another variant than the writer meant."),
    Rule("union-unknown-reading-changed", "union", POSSIBLY, WIRE, ANY,
         "an unknown tag value of a closed union is now read as the default branch, or no longer is",
         "One side accepts an object with a tag it does not know as the default branch where the other "
         "rejects it (or drops it from a tolerant list)."),
    Rule("union-unknown-required-changed", "union", POSSIBLY, WIRE, ANY,
         "the properties an unknown variant of an open union must carry changed",
         "An unknown variant that lacks one of them is kept by one side and rejected by the other."),
    Rule("object-required-one-of-changed", "type", POSSIBLY, WIRE, ANY,
         "the set of properties of which at least one must be present changed",
         "An object carrying none of them is read by one side and rejected by the other."),
    Rule("alias-same-kind-changed", "alias", POSSIBLY, WIRE, ANY,
         "whether every item of an array must be of the same union branch changed",
         "An array mixing branches is read by one side and rejected by the other."),
    Rule("union-overlap-changed", "union", POSSIBLY, WIRE, ANY,
         "whether an object with several presence keys is read as the first branch changed",
         "An object that fits two untagged branches at once is read by one side and rejected by the other."),
    Rule("union-became-open", "union", POSSIBLY, SOURCE, ANY,
         "a closed union became open",
         "Receivers now accept unknown tags, which is wire compatible, but the generated union gains an "
         "unknown branch that exhaustive code must handle."),
    Rule("request-union-became-closed", "union", BREAKING, WIRE, REQUEST,
         "an open union in a request became closed",
         "Old callers may send unknown or extension variants, which the handler now rejects."),
    Rule("response-union-became-closed", "union", POSSIBLY, SOURCE, RESPONSE,
         "an open union in a response became closed",
         "Old callers stay tolerant, but code that handled the unknown branch no longer type-checks."),
    # -- enums
    Rule("request-enum-value-added", "enum", SAFE, WIRE, REQUEST,
         "a value was added to an enum in a request",
         "Old callers never send the new value."),
    Rule("response-closed-enum-value-added", "enum", BREAKING, WIRE, RESPONSE,
         "a value was added to a closed enum in a response",
         "Old callers reject a value their closed enum does not list."),
    Rule("response-open-enum-value-added", "enum", POSSIBLY, WIRE, RESPONSE,
         "a value was added to an open enum in a response",
         "Old callers keep the value as an unknown string, but cannot act on it."),
    Rule("request-enum-value-removed", "enum", BREAKING, WIRE, REQUEST,
         "a value was removed from an enum in a request",
         "Old callers may still send the value, which the handler rejects or no longer understands."),
    Rule("response-enum-value-removed", "enum", SAFE, WIRE, RESPONSE,
         "a value was removed from an enum in a response",
         "Old callers still understand every value that can arrive."),
    Rule("enum-became-open", "enum", POSSIBLY, SOURCE, ANY,
         "a closed enum became open",
         "Receivers now keep unknown values, which is wire compatible, but the generated type widens from "
         "a Literal to str and exhaustive code must handle other values."),
    Rule("request-enum-became-closed", "enum", BREAKING, WIRE, REQUEST,
         "an open enum in a request became closed",
         "Old callers may send unknown or extension values, which the handler now rejects."),
    Rule("response-enum-became-closed", "enum", POSSIBLY, SOURCE, RESPONSE,
         "an open enum in a response became closed",
         "Old callers stay tolerant, but code that passes other strings no longer type-checks."),
    # -- aliases
    Rule("alias-type-changed", "alias", BREAKING, WIRE, ANY,
         "the type an alias stands for changed",
         "Values of the old type do not validate against the new one, in either direction."),
)

BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
assert len(BY_ID) == len(RULES), "rule ids must be unique"


def rule(rule_id: str) -> Rule:
    return BY_ID[rule_id]


def level_rank(level: str) -> int:
    """0 for breaking, 1 for possibly breaking, 2 for safe."""
    return LEVELS.index(level)
