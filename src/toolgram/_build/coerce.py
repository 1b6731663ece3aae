"""Typing parameter values that models write as raw text (XML-ish formats).

Qwen3-Coder `<parameter=k>v</parameter>`, GLM `<arg_value>`, MiniMax/DSML/Step
`<parameter name="k">`, Kimi K3 and Cohere typed values, nested XML elements
(MiniMax M3, Cohere, BFCL) and Gemma's bare values all give text, not JSON.
`coerce_param` turns that text into the argument's value.

Framing. A string value is the text as the model wrote it, whitespace and all
(indentation in code, a trailing space in ", ", a file's last newline). Only
what the chat template writes around every value is dropped, as the format's
header says (`framing: newline`, Qwen3-Coder's `<parameter=k>\nvalue\n</parameter>`):
one newline right after the open tag and one right before the close tag. A
value read as another type (a number, a boolean, JSON) is decoded with the
whitespace around it ignored.

With a JSON Schema for the parameter, the schema decides:
  - types come from `type` (a name or a list), `enum`/`const` values,
    `anyOf`/`oneOf`/`allOf` alternatives, `properties` (object) and `items`
    (array); `$ref` to `#/$defs/…` or `#/definitions/…` is followed; common
    aliases are understood (int, float, bool, str, dict, list, tuple);
  - a value that reads as JSON of an allowed non-string type is decoded
    (`5` for integer, `["a"]` for array, `null` for ["string", "null"]);
    `5.0` is 5 for integer; true/false/True/False are booleans and
    null/None is null when those types are allowed;
  - otherwise, when string is allowed, the text is kept as written: a zip
    code `03106`, or the text `null`, `true`, `5` for a string parameter;
  - when string is not allowed, JSON slips are repaired (single quotes,
    trailing commas, Python literals; named in the call's repairs);
  - a value that fits no allowed type is kept as the text (validation reports it).
  The type a model wrote (Kimi K3 `type=`, Cohere `type=raw|json|dict|list`,
  DSML `string="true|false"`, BFCL `type=`) only breaks ties among the types the
  schema allows.

Without a schema (no tools given, an unknown tool or parameter, `{}`):
  - a type the model wrote decides: string/raw (DSML string="true") keeps the
    text; any other type (json, number, object, DSML string="false", …) decodes
    the text as JSON, leniently, and keeps the text when that fails;
  - with no type either, a value that is exactly a JSON number, true, false,
    null, object or array is decoded; everything else stays the text as written
    (quoted text such as `"hi"` keeps its quotes; NaN and Infinity stay text; a
    number that JSON writes back otherwise, `3.10`, `1e5`, stays text); a float
    with no digit before or after its point (`.5`, `5.`, `-.5`) is that number.
    (A Gemma bare value spelled as a number is typed "number" by its reader,
    loose.py: `1.50`, `1e5` are numbers there, its strings being delimited.)

Nested elements (`Node` with children) become an object, or an array when the
schema (or the model-written type list/array) says so, or when no child has a
name; repeated names collect into a list. Children are typed by the
`properties` / `additionalProperties` / `items` subschemas.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._recover import repair as _repair
from .._grammar.words import lazy
from .._lalr import extent as _extent
from .._lalr.jsonscan import DECODER_DEPTH, Deeper, deeper, one_nest

_NATIVE_PY = frozenset({"single_quotes", "python_literals"})

KINDS = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})

# Spellings of JSON Schema types seen in tool schemas and in model-written type attributes.
_ALIASES = {
    "str": "string",
    "text": "string",
    "raw": "string",
    "char": "string",
    "varchar": "string",
    "enum": "string",
    "int": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "bool": "boolean",
    "dict": "object",
    "map": "object",
    "list": "array",
    "tuple": "array",
    "none": "null",
}

# Spellings of "decode this as JSON" (DSML string="false", Cohere type="json").
_JSON_HINTS = frozenset({"json", "false", "any"})
_STRING_HINTS = frozenset({"true"})  # DSML string="true"



@dataclass
class Node:
    """A value written as nested elements: text, or named/unnamed children.

    `type` is what the model wrote (None if nothing); `exact` says the text has
    no framing whitespace to drop (it was cut out by a decoder, not between tags).
    """

    key: str | None = None
    type: str | None = None
    text: str = ""
    children: list[Node] = field(default_factory=list)
    exact: bool = False


def frame(raw: str, framing: str = "none", closed: bool = True) -> str:
    """Drop what the template writes around a value between tags (see the module
    docstring): with "newline", one newline after the open tag and one before the
    close tag; with "none", nothing. Not `closed` (the end of the reply cut the
    value): no close tag came, so no newline before it is dropped; the value keeps
    all it has, what the model wrote."""
    if framing != "newline":
        return raw
    for newline in ("\r\n", "\n"):
        if raw.startswith(newline):
            raw = raw[len(newline) :]
            break
    if not closed:
        return raw
    for newline in ("\r\n", "\n"):
        if raw.endswith(newline):
            raw = raw[: -len(newline)]
            break
    return raw


# -- schemas ------------------------------------------------------------------


def _kind_name(name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    t = name.strip().lower()
    t = _ALIASES.get(t, t)
    return t if t in KINDS else None


def _resolve(prop: Any, root: Any, seen: int = 0) -> Any:
    """Follow a local $ref ("#/$defs/X", "#/definitions/X"); None when it cannot be."""
    while isinstance(prop, Mapping) and isinstance(prop.get("$ref"), str) and seen < 16:
        ref = prop["$ref"]
        if not ref.startswith("#/") or not isinstance(root, Mapping):
            return None
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, Mapping) else None
        prop = node
        seen += 1
    return prop if isinstance(prop, Mapping) else None


def kinds_of(prop: Any, root: Any = None, _depth: int = 0) -> frozenset[str] | None:
    """The JSON types a schema allows, or None when it says nothing we can use."""
    prop = _resolve(prop, root) if prop is not None and isinstance(prop, Mapping) else None  # (None: no ABC check)
    if prop is None or _depth > 32:
        return None
    out: set[str] = set()
    t = prop.get("type")
    names = [t] if isinstance(t, str) else list(t) if isinstance(t, (list, tuple)) else []
    if any(isinstance(n, str) and n.strip().lower() == "any" for n in names):
        return None
    for n in names:
        k = _kind_name(n)
        if k:
            out.add(k)
    if not out:
        values = list(prop["enum"]) if isinstance(prop.get("enum"), (list, tuple)) else []
        if "const" in prop:
            values.append(prop["const"])
        for v in values:
            out.add(_value_kind(v))
    if not out:
        for key in ("anyOf", "oneOf", "allOf"):
            subs = prop.get(key)
            if not isinstance(subs, (list, tuple)):
                continue
            for sub in subs:
                k = kinds_of(sub, root, _depth + 1)
                if k is not None:
                    out |= k
                elif key != "allOf":
                    return None  # an alternative that allows anything
    if not out:
        if "properties" in prop or "additionalProperties" in prop:
            out.add("object")
        elif "items" in prop or "prefixItems" in prop:
            out.add("array")
    if "integer" in out and "number" in out:
        out.discard("integer")  # every integer is a number
    return frozenset(out) if out else None


def _value_kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "array"
    return "object"


def _container(prop: Any, root: Any, kind: str, _depth: int = 0) -> Mapping[str, Any] | None:
    """The (sub)schema that describes `kind` ("object"/"array") in prop, if any."""
    prop = _resolve(prop, root) if isinstance(prop, Mapping) else None
    if prop is None or _depth > 32:
        return None
    own = kinds_of({k: v for k, v in prop.items() if k not in ("anyOf", "oneOf", "allOf")}, root)
    if own and kind in own:
        return prop
    for key in ("anyOf", "oneOf", "allOf"):
        subs = prop.get(key)
        if isinstance(subs, (list, tuple)):
            for sub in subs:
                found = _container(sub, root, kind, _depth + 1)
                if found is not None:
                    return found
    return None


# -- decoding -----------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity, -Infinity are not JSON


# (One decoder for every value: json.loads with options makes a new one each call.)
_STRICT = _repair._Bounded(parse_constant=_no_constant, parse_float=_repair._finite_float)


# The characters a JSON value can begin with, as json's scanner dispatches on them (NaN
# and Infinity too: _no_constant refuses those itself). Text that begins otherwise (after
# str.strip, which strips all JSON's blanks) the decoder refuses at once, by an exception
# that costs more than the rest of a plain value's reading: `Paris0`, 16 µs of a call's
# ~300 in a reply of XML-ish calls with no schema (benchmarks/bench_distinct_calls.py).
_JSON_FIRST = frozenset('"{[-0123456789tfnNI')


def _strict(text: str, depth: int = 0) -> tuple[bool, Any]:
    """(True, the JSON value text holds) or (False, None). `depth`: how many containers
    deep coerce_node found the text, frames of its recursion, which leave the decoder
    that many levels fewer (a value that deep in all is nested too deeply anyway)."""
    s = text.strip()
    if not s or s[0] == "\ufeff":  # (json.loads refuses a BOM; the decoder does not look)
        return False, None
    try:
        if depth and deeper(s, 0, DECODER_DEPTH - depth):
            raise Deeper(_repair.TOO_DEEP)
        if s[0] not in _JSON_FIRST:
            return False, None  # (the decoder's answer, without its exception: see _JSON_FIRST)
        # (1e999 too: a float too large is infinite, which JSON cannot write)
        return True, _STRICT.decode(s)
    except Deeper:
        # (Brackets too deep for the decoder: a value closed at its end is one nested too
        # deeply, refused as the decoder's reading of it would be, at any stack depth;
        # else no JSON, as where the decoder fails.)
        if one_nest(s):
            raise _repair.RepairError(_repair.TOO_DEEP) from None
        return False, None
    except ValueError:
        return False, None
    except RecursionError:
        # (The interpreter's own, a caller deep in the stack. Brackets that never close
        # are no JSON, as the decoder would have found; else it is no reading of the text,
        # not taken as "no JSON", a string: it goes on up, and region.py refuses the call.)
        if one_nest(s):
            raise
        return False, None


def _writes_back(value: Any, text: str) -> bool:
    """Whether a number decoded with no schema to ask is written back as the model
    wrote it: `3.10` (a version), `1e5`, `-0` are not, and stay the text, since a
    float would lose what the model wrote. (Other values: always.)"""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    return json.dumps(value) == text.strip()


# A float that Python and JavaScript read and JSON refuses only for the digit left out
# before or after its point (`.5`, `5.`, `-.5`, `5.e3`): a number's spelling and nothing
# else (QA19 R12), read as Python reads it, with no repair (as a Python value's is).
_POINT_FLOAT = lazy(re.compile, r"-?(?:[0-9]+\.|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _point_float(text: str, exponent: bool = True) -> tuple[bool, Any]:
    """(ok, the float) for such a spelling; `exponent=False`: not one with an exponent
    (with no schema to ask, `5.e3` stays the text, as `1e3` does: _writes_back)."""
    s = text.strip()
    if _POINT_FLOAT.fullmatch(s) is None or (not exponent and ("e" in s or "E" in s)):
        return False, None
    value = float(s)
    return (True, value) if math.isfinite(value) else (False, None)


def _word(text: str) -> tuple[bool, Any]:
    w = text.strip().lower()
    if w in ("true", "false"):
        return True, w == "true"
    if w in ("null", "none"):
        return True, None
    return False, None


def _lenient(text: str, depth: int = 0) -> tuple[bool, Any, tuple[str, ...]]:
    """Decode text as JSON, forgiving the usual slips. (ok, value, repairs). (`depth`:
    see _strict.)"""
    ok, value = _strict(text, depth)
    if ok:
        return True, value, ()
    ok, value = _word(text)
    if ok:
        return True, value, ()
    ok, value = _point_float(text)
    if ok:
        return True, value, ()
    s = text.strip()
    if not s:
        return False, None, ()
    try:
        value, repairs = _repair.loads(s)
    except _repair.RepairError:
        return False, None, ()
    # A value between tags is complete: "closing" it only makes sense for a
    # bracketed value the model forgot to close, never for a word like `t`.
    if "closed_json" in repairs and s[0] not in "{[":
        return False, None, ()
    if isinstance(value, float) and value != value:  # NaN
        return False, None, ()
    return True, value, tuple(r for r in repairs if r != "python_literals" or s[0] in "{[(")


def _fit(value: Any, kinds: frozenset[str]) -> tuple[bool, Any]:
    """Whether a decoded value has an allowed type (converting 5.0 to 5 for integer)."""
    if isinstance(value, bool):
        return "boolean" in kinds, value
    if isinstance(value, int):
        return bool(kinds & {"integer", "number"}), value
    if isinstance(value, float):
        if "number" in kinds:
            return True, value
        if "integer" in kinds and value.is_integer() and abs(value) < 2**63:
            return True, int(value)
        return False, value
    if value is None:
        return "null" in kinds, value
    if isinstance(value, dict):
        return "object" in kinds, value
    if isinstance(value, list):
        return "array" in kinds, value
    if isinstance(value, str):
        return "string" in kinds, value
    return False, value


def _hint(typ: str | None) -> str | None:
    """A model-written type: "string", "json" (decode as any JSON), a JSON type, or None."""
    if typ is None:
        return None
    # (The types decoders and templates write, worked out once below: each value a
    # small call makes asks this; a type the model spelled otherwise is worked out.)
    found = _HINT_OF.get(typ, _UNKNOWN)
    if found is not _UNKNOWN:
        return found
    return _hint_of(typ)


def _hint_of(typ: str) -> str | None:
    t = typ.strip().lower()
    if not t:
        return None
    if t in _STRING_HINTS:
        return "string"
    if t in _JSON_HINTS:
        return "json"
    return _kind_name(t) or "json"


_UNKNOWN = object()
_HINT_OF = {t: _hint_of(t) for t in (*KINDS, *_ALIASES, *_JSON_HINTS, *_STRING_HINTS)}


def _scalar(text: str, hint: str | None, kinds: frozenset[str] | None, depth: int = 0) -> tuple[Any, tuple[str, ...]]:
    if kinds is None:
        if hint == "string":
            return text, ()
        if hint is None:
            ok, value = _strict(text, depth)
            if ok and not isinstance(value, str) and _writes_back(value, text):
                return value, ()
            if not ok:
                ok, value = _point_float(text, exponent=False)
                if ok:
                    return value, ()
            return text, ()
        ok, value, repairs = _lenient(text, depth)
        return (value, repairs) if ok else (text, ())
    if "string" in kinds:
        if hint == "string":
            return text, ()
        try:
            ok, value = _strict(text, depth)
        except _repair.RepairError:
            # (Brackets nested past what the decoder reads, where the schema allows no
            # container: no value of another kind it allows, and a string it takes, as
            # the decoder's reading of it was. Refused, a parameter typed string lost its
            # text to "nested too deeply" past 272 levels: qa37 finding 1. Where it allows
            # an array or object, too deep as it is below 272 levels.)
            if kinds & {"array", "object"}:
                raise
            return text, ()
        if ok:
            if isinstance(value, str):
                # A JSON string literal: the model quoted it only if it said "JSON".
                return (value, ()) if hint == "json" else (text, ())
            fits, value = _fit(value, kinds)
            if fits:
                return value, ()
        elif kinds & {"boolean", "null"}:
            ok, value = _word(text)
            if ok and text.strip() in ("True", "False", "None"):
                fits, value = _fit(value, kinds)
                if fits:
                    return value, ()
        return text, ()
    ok, value, repairs = _lenient(text, depth)
    if ok:
        fits, value = _fit(value, kinds)
        if fits:
            return value, repairs
        if isinstance(value, str):  # "5" for an integer: read inside the quotes once
            ok, inner, more = _lenient(value, depth)
            if ok:
                fits, inner = _fit(inner, kinds)
                if fits:
                    return inner, repairs + more
    return text, ()


_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))

# Python's own spellings of a string or a number that JSON and the lenient pass do
# not read: triple-quoted and raw (r"…") strings, string literals written one after
# another ("x" "y", which Python joins), and digits grouped with underscores (1_000).
# The pattern has no nesting, and the alternatives of each repeat start with
# different characters, so matching it is linear; only text it matches whole is
# given to ast.literal_eval (which gives Python's value, escapes and all).
_PY_STRING = r'''
    [rRuU]?(?: """(?:[^"\\]|\\.|"(?!""))*"""
            | \'\'\'(?:[^'\\]|\\.|'(?!''))*\'\'\'
            | "(?:[^"\\\n]|\\.)*"
            | '(?:[^'\\\n]|\\.)*' )
'''
_PY_LITERAL = lazy(
    re.compile,
    rf"(?:{_PY_STRING})(?:\s*(?:{_PY_STRING}))* | [-+]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][-+]?\d+(?:_\d+)*)?",
    re.S | re.X,
)


def _closed_triple(text: str) -> str:
    """A triple-quoted string that never closes (the end of the reply cut it),
    closed; "" for any other text."""
    quote = _extent.triple_quote(text, 0)
    if quote is None or _extent.triple_end(text, 0, quote) is not None:
        return ""
    body = text.rstrip("\\")  # (less an escape the end cut in two)
    if body.endswith(quote[:2]) and len(body) > len(quote) + 1:
        body = body[:-2]  # (the closing quote begun: `"""ab""`)
    elif body.endswith(quote[0]) and len(body) > len(quote):
        body = body[:-1]
    return body + quote


def _python_literal(text: str) -> Any:
    """The value of a Python string or number literal that only Python reads (see
    _PY_LITERAL), as ast.literal_eval gives it; None for anything else."""
    if _PY_LITERAL.fullmatch(text) is None:
        return None
    import ast  # (only here: such literals are rare)

    try:
        # (In brackets: literals on several lines join there, as in a call's brackets.)
        value = ast.literal_eval(f"({text})")
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # (1e999: JSON has no such number)
    return value if isinstance(value, (str, int, float)) else None


# -- entry points -----------------------------------------------------------------


def coerce_param(
    raw: Any, typ: str | None, prop: Any, root: Any = None, framing: str = "none", repeated: str = "error",
    closed: bool = True,
) -> tuple[Any, tuple[str, ...]]:
    """(value, repairs) for one parameter.

    `raw` is the text between the tags (or a `Node` of nested elements); `typ` is
    "python" for Python keyword values, a type the model wrote, or None; `prop`
    the parameter's JSON Schema (None if unknown); `root` the tool's whole schema,
    for `$ref`s; `framing` the format's (see frame); `repeated` the format's (see
    coerce_node); `closed` false for a value the end of the reply cut (see frame).
    """
    if isinstance(raw, Node):
        repairs: list[str] = []
        value = coerce_node(raw, prop, root, repairs, framing, repeated)
        return value, tuple(repairs)
    if typ == "python":
        try:
            value, repairs = _repair.loads(raw, python=True)
        except _repair.RepairError as exc:
            if str(exc) == _repair.TOO_DEEP:
                raise  # (no value, not even its text: see _build/depth.py)
            text = raw.strip()
            found = _python_literal(text)
            if found is not None:
                return found, ()
            bare = text.rstrip("}]) \t\r\n")
            if len(bare) < len(text):
                # A literal only Python reads (`"""x"""`, `r"x"`, `"x" "y"`, `1_000`), then
                # closers: the list's `]` written before the call's `)`. Read as the lenient
                # reader reads any other value so closed (`"x"]`): the value, the closers
                # after it extra (extra_bracket), not the literal misread as `""` then text.
                found = _python_literal(bare)
                if found is not None:
                    return found, ("extra_bracket",)
            found = _python_literal(_closed_triple(text))
            if found is not None:
                return found, ("closed_json",)  # (a triple-quoted string the end cut: closed)
            # A quoted value with its own quotes inside, unescaped, in pairs
            # (`'grep -rn 'TODO' src/'`): its inside (see _repair.quoted_end). One with a
            # quote that nothing pairs (`"Par"is"`, a stray quote), or that ran on past
            # the end the call's structure gives it (`"Par"is")]\n… "…"`), is broken, and
            # no value.
            inside = _repair.unquoted_inside(text)
            if inside is not None:
                return inside, ("unescaped_quotes",)
            # A bare word such as f(unit=celsius), or an expression (`QName("a", "b")`,
            # `[10+2*5, 2]`): keep it as the text it is. Not text whose brackets do not
            # pair (`city="Par"is")]`: a stray quote ran on over the call's closing
            # brackets): that is broken, and no value.
            # (A `,` the value's text ends with, the end of the reply right after it, is
            # the separator before the next keyword, as after `"Paris",`: `"Par"is",` is
            # the stray quote `"Par"is"` too, issue 21.)
            if _repair.stray_quote(text[:-1].rstrip() if text[-1:] == "," else text) or _repair.runs_over(text):
                raise
            if any(text.count(o) != text.count(c) for o, c in _PAIRS):
                raise
            # A string whose quote is still open at the end, quotes inside it (a call
            # quoted in the value, its close left out): its text after the quote.
            opened = _repair.left_open(text)
            if opened is not None:
                return opened, ("closed_json", "unescaped_quotes")
            return text, ("unquoted_string",)
        return value, tuple(r for r in repairs if r not in _NATIVE_PY)
    return _scalar(frame(raw, framing, closed), _hint(typ), kinds_of(prop, root))


def repeated_item(prop: Any, root: Any, repeated: str) -> tuple[bool, Any]:
    """Whether the values of a name written more than once (a parameter tag, an
    element's child) collect into a list, and the schema each is typed by: they do
    where the schema says the parameter is an array, or the format says so (M3's
    `repeated: list`), each typed as an item. Every format's repeated names come
    here (the builder's parameter tags as coerce_node's children), so that one
    reply reads the same in each (QA7 D3: MiniCPM5 and Qwen3-Coder gave an error
    where Gemma collected)."""
    arr = _container(prop, root, "array") if prop is not None else None
    if arr is None and repeated != "list":
        return False, prop
    item = arr.get("items") if arr is not None else prop
    if isinstance(item, (list, tuple)):
        item = None  # (a tuple's items: which one a repeated tag is, nothing tells)
    return True, item


def coerce_node(
    node: Node,
    prop: Any,
    root: Any = None,
    repairs: list[str] | None = None,
    framing: str = "none",
    repeated: str = "error",
    depth: int = 0,
) -> Any:
    """The value of a Node, typed by the schema `prop` (see the module docstring).
    `repeated`: what a name its element's children give twice is, where the schema
    does not say it is an array: "list", the values collect into one (MiniMax M3's
    elements); "error", where the values differ, a RepairError (a key of `{cmd: "ls", cmd: "rm"}`, a parameter written
    twice: which one the model meant, nothing tells), as a JSON key given twice is.
    `depth`: the Node's, under the one coerce_param was given (see _strict)."""
    if repairs is None:
        repairs = []
    hint = _hint(node.type)
    kinds = kinds_of(prop, root)
    if not node.children:
        text = node.text if node.exact else frame(node.text, framing)
        empty = not text.strip()
        if empty and (kinds is None or "string" not in kinds):
            # <items></items>, type="list" with nothing in it: an empty container.
            want = _empty_container(kinds, hint)
            if want is not None:
                return want
        value, more = _scalar(text, hint, kinds, depth)
        for r in more:
            if r not in repairs:
                repairs.append(r)
        return value
    kind = _node_kind(node, prop, root, kinds, hint)
    schema = _container(prop, root, kind) if prop is not None else None
    if kind == "array":
        items = schema.get("items") if schema is not None else None
        out = []
        for i, child in enumerate(node.children):
            sub = items[i] if isinstance(items, (list, tuple)) and i < len(items) else items
            if isinstance(items, (list, tuple)) and i >= len(items):
                sub = None
            out.append(coerce_node(child, sub, root, repairs, framing, repeated, depth + 1))
        return out
    props = schema.get("properties") if schema is not None else None
    extra = schema.get("additionalProperties") if schema is not None else None
    groups: dict[str, list[Node]] = {}
    for child in node.children:
        groups.setdefault(child.key if child.key is not None else "item", []).append(child)
    result: dict[str, Any] = {}
    for key, group in groups.items():
        try:
            sub = props.get(key) if props is not None and isinstance(props, Mapping) and key in props else extra
            if sub is None or not isinstance(sub, Mapping):
                sub = None
            if len(group) == 1:
                result[key] = coerce_node(group[0], sub, root, repairs, framing, repeated, depth + 1)
                continue
            collect, item = repeated_item(sub, root, "list" if key == "item" else repeated)
            if not collect:
                values = [coerce_node(c, sub, root, repairs, framing, repeated, depth + 1) for c in group]
                for other in values[1:]:
                    if other != values[0]:
                        raise _repair.RepairError(_repair.given_twice(key, values[0], other))
                result[key] = values[0]
                continue
            result[key] = [coerce_node(c, item, root, repairs, framing, repeated, depth + 1) for c in group]
        except _repair.RepairError as exc:
            if depth == 0 and str(exc) == _repair.TOO_DEEP:
                exc.key = key  # (the argument a value too deep for the decoder is in: see _strict)
            raise
    text = node.text if node.exact else node.text.strip()
    if text.strip():
        field_name = "$text"
        while field_name in result:
            field_name = "$" + field_name
        result[field_name] = text
    return result


def _empty_container(kinds: frozenset[str] | None, hint: str | None) -> Any:
    if kinds is not None:
        if "array" in kinds and "object" not in kinds:
            return []
        if "object" in kinds and "array" not in kinds:
            return {}
        return None
    if hint == "array":
        return []
    if hint == "object":
        return {}
    return None


def _node_kind(node: Node, prop: Any, root: Any, kinds: frozenset[str] | None, hint: str | None) -> str:
    """"array" or "object" for an element with children: the schema, then the
    type the model wrote, then the shape (no child has a name: an array)."""
    if kinds is not None and ("object" in kinds) != ("array" in kinds):
        return "object" if "object" in kinds else "array"
    if hint in ("array", "object"):
        return hint
    return "array" if all(c.key is None for c in node.children) else "object"
