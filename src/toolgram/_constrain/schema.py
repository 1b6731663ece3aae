"""Argument values as grammar: a tool's JSON Schema, reduced to the subset a grammar says,
then written as JSON (the %json of llguidance, or rules for GBNF), as Python literals
(pythonic calls) or as raw parameter text (XML-ish formats).

The subset (docs/constrain.md): `type` (one or a list), `enum`, `const`, `properties`
with `required` (objects are closed: no property beyond those declared; written in the
order of `properties`), `items` with `minItems`/`maxItems`, strings' `minLength`/
`maxLength`, `anyOf`/`oneOf`. `minimum`/`maximum` are kept for llguidance and relaxed in
GBNF. Anything else (`$ref`, `allOf`, `not`, `pattern`, `format`, `if`…) is relaxed: the
part it is on is any JSON value of its type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .emit import Grammar, Node, alt, lit, ref, rep, seq

_KEEP = ("type", "enum", "const", "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
         "exclusiveMinimum", "exclusiveMaximum")  # fmt: skip
_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
_MAX_DEPTH = 12


def subset(schema: Any, depth: int = 0) -> dict[str, Any]:
    """The schema reduced to the subset (a new dict); {} is any value."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return {}
    out: dict[str, Any] = {k: schema[k] for k in _KEEP if k in schema}
    kinds = out.get("type")
    if isinstance(kinds, list):
        kinds = [k for k in kinds if k in _TYPES]
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
        if not kinds:
            del out["type"]
    elif kinds is not None and kinds not in _TYPES:
        del out["type"]
    if out.get("type") == "number" and not any(k in out for k in ("minimum", "maximum")):
        # A finite number: llguidance's JSON allows any exponent, and 1e400 is no float
        # (toolgram reads it as null, repair non_finite_number).
        out.update(minimum=-1e15, maximum=1e15)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            out["anyOf"] = [subset(b, depth + 1) for b in schema[key]]
            break
    if isinstance(schema.get("properties"), Mapping):
        props = {str(k): subset(v, depth + 1) for k, v in schema["properties"].items()}
        out["properties"] = props
        out["required"] = [k for k in schema.get("required") or () if k in props]
        out["additionalProperties"] = False
        out.setdefault("type", "object")
    if isinstance(schema.get("items"), Mapping):
        out["items"] = subset(schema["items"], depth + 1)
        out.setdefault("type", "array")
    return out


def llguidance_json(schema: dict[str, Any]) -> dict[str, Any]:
    """The %json schema: separators as the renderer writes them (json.dumps's), no other
    whitespace."""
    return {**schema, "x-guidance": {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}}


# --- values as rules ----------------------------------------------------------------------

_INT = seq(rep(lit("-"), 0, 1), alt(lit("0"), seq(("cls", "1-9"), rep(("cls", "0-9")))))
_FRACTION = seq(lit("."), rep(("cls", "0-9"), 1))
# (Two digits at most: a larger exponent can leave the range of a float.)
_EXPONENT = seq(("cls", "eE"), rep(("cls", "+-"), 0, 1), rep(("cls", "0-9"), 1, 2))


class Values:
    """Rules for the values of one grammar; each schema part becomes one rule, named
    after its place, and the shared ones (a JSON string, any value) are written once."""

    def __init__(self, g: Grammar) -> None:
        self.g = g
        self.count = 0

    def _new(self, node: Node) -> Node:
        self.count += 1
        return self.g.rule(f"v{self.count}", node)

    def _shared(self, name: str, build: Any) -> Node:
        if name not in self.g.rules:
            self.g.rules[name] = ("lit", "")  # (reserved first: "any" refers to itself)
            self.g.rules[name] = build()
        return ref(name)

    def string(self, low: int = 0, high: int | None = None) -> Node:
        node = ("text", "string", low, high)
        return self._shared("jstring", lambda: node) if (low, high) == (0, None) else node

    def number(self, integer: bool) -> Node:
        if integer:
            return self._shared("jint", lambda: _INT)
        return self._shared("jnumber", lambda: seq(_INT, rep(_FRACTION, 0, 1), rep(_EXPONENT, 0, 1)))

    def any(self, dialect: str, kind: str = "value") -> Node:
        """Any value (`kind` "value") or any object ("object") of the dialect."""
        if kind == "object":

            def members() -> Node:
                member = seq(self.string(), lit(": "), self.any(dialect))
                return seq(lit("{"), rep(seq(member, rep(seq(lit(", "), member))), 0, 1), lit("}"))

            return self._shared("anypyobject" if dialect == "python" else "anyobject", members)
        name = "anypy" if dialect == "python" else "anyjson"
        words = ("True", "False", "None") if dialect == "python" else ("true", "false", "null")

        def build() -> Node:
            me = ref(name)
            items = seq(me, rep(seq(lit(", "), me)))
            return alt(self.string(), self.number(False), *(lit(w) for w in words),
                       seq(lit("["), rep(items, 0, 1), lit("]")), self.any(dialect, "object"))  # fmt: skip

        return self._shared(name, build)

    def literal(self, value: Any, dialect: str) -> Node:
        from .._tools.prompts import _json, _py

        if dialect == "raw" and isinstance(value, str):
            return lit(value)
        return lit(_py(value) if dialect == "python" else _json(value))

    def value(self, schema: dict[str, Any], dialect: str) -> Node:
        """A value of `schema` (a subset() result) in `dialect`: json, python or raw."""
        if "const" in schema:
            return self.literal(schema["const"], dialect)
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return alt(*dict.fromkeys(self.literal(v, dialect) for v in schema["enum"]))
        if "anyOf" in schema:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            # (Raw text stays in sight, not in a rule: llguidance joins it to the close tag.)
            wrap = (lambda n: n) if dialect == "raw" else self._new
            return wrap(alt(*(self.value({**rest, **b} if rest else b, dialect) for b in schema["anyOf"])))
        kinds = schema.get("type")
        if isinstance(kinds, list):
            wrap = (lambda n: n) if dialect == "raw" else self._new
            return wrap(alt(*(self.value({**schema, "type": k}, dialect) for k in kinds)))
        if dialect == "raw":
            if kinds == "string":
                return ("text", "raw", schema.get("minLength", 0), schema.get("maxLength"))
            if kinds is None:
                return alt(("text", "raw", 0, None), self.any("json"))
            return self.value(schema, "json")
        if kinds == "string":
            return self.string(schema.get("minLength", 0), schema.get("maxLength"))
        if kinds in ("integer", "number"):
            return self.number(kinds == "integer")
        if kinds == "boolean":
            return alt(lit("True"), lit("False")) if dialect == "python" else alt(lit("true"), lit("false"))
        if kinds == "null":
            return lit("None" if dialect == "python" else "null")
        if kinds == "array":
            item = self.value(schema.get("items", {}), dialect)
            low, high = schema.get("minItems", 0), schema.get("maxItems")
            if high == 0:
                return lit("[]")
            more = rep(seq(lit(", "), item), max(low - 1, 0), None if high is None else high - 1)
            body = seq(item, more)
            return self._new(seq(lit("["), body if low > 0 else rep(body, 0, 1), lit("]")))
        dialect = "python" if dialect == "python" else "json"
        if kinds == "object":
            if "properties" in schema:
                return self._new(seq(lit("{"), self.members(schema, dialect), lit("}")))
            return self.any(dialect, "object")
        return self.any(dialect)

    def members(self, schema: dict[str, Any], dialect: str) -> Node:
        """A closed object's members, `"key": value` apart by ", ", in the order of its
        properties (the required ones always there)."""
        props = schema.get("properties", {})
        return self.ordered(
            [(k, seq(lit(json.dumps(k, ensure_ascii=False) + ": "), self.value(v, dialect))) for k, v in props.items()],
            schema.get("required", ()),
            ", ",
        )

    def ordered(self, items: list[tuple[str, Node]], required: Any, sep: str) -> Node:
        """The items in their order, each optional unless required, `sep` between two.
        Two rules per item (what follows when something came before it, or nothing did),
        so the grammar grows linearly with the properties."""
        required = set(required)
        after: Node = lit("")  # what follows the last item, something before it or not
        first: Node = lit("")
        for key, item in reversed(items):
            joined = seq(lit(sep), item) if sep else item
            if key in required:
                after, first = self._new(seq(joined, after)), self._new(seq(item, after))
            else:
                after, first = (self._new(alt(seq(joined, after), after)),
                                self._new(alt(seq(item, after), first)))  # fmt: skip
        return first
