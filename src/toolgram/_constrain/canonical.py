"""A format's canonical form: the `// canonical…:` header keys read into pieces, and calls
written with them (render_call).

    // canonical: <|tool_call_start|>[{calls}]<|tool_call_end|>   the region
    // canonical_call: {name}({args:python})                      a call in {calls}
    // canonical_param: <parameter={key}>\\n{value:raw}\\n</parameter>\\n   an argument in {args:params}
    // canonical_sep: ,\\s                                         between calls (or regions)

Without {calls} in `canonical`, the region is one call, and regions follow each other
with the separator between them.
"""

from __future__ import annotations

import json

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._grammar.header import Format
from .._grammar.registry import default_registry
from .._tools.prompts import _json, _py

# The placeholders; any other brace is text (JSON's own braces).
_PLACEHOLDER = re.compile(r"\{(name|args|calls|key|value|args_key|index)(?::(json|python|params|raw))?\}")
# Which spellings each placeholder has (None: plain).
_SPELLINGS = {"name": (None, "json"), "args": ("json", "python", "params"), "calls": (None,), "key": (None,),
              "value": ("raw",), "args_key": (None,), "index": (None,)}  # fmt: skip


class NotConstrainable(ValueError):
    """The format declares no canonical form (it cannot be rendered or constrained yet)."""


@dataclass(frozen=True)
class Piece:
    """A run of literal text (`text`), or a placeholder (`slot`, `spelling`)."""

    text: str = ""
    slot: str = ""
    spelling: str | None = None


@dataclass(frozen=True)
class Canonical:
    format: Format
    region: tuple[Piece, ...]
    call: tuple[Piece, ...]  # the region itself when it holds one call
    param: tuple[Piece, ...]
    sep: str
    many: bool  # the region holds {calls}

    @property
    def anchor(self) -> str:
        return self.format.anchor

    @property
    def start_marker(self) -> str:
        """The `start:` marker the region's first text opens with (the longest), or ""
        when it opens with none (llama3_json's bare object): prose may come before the
        first only, and the second must open the reply."""
        head = self.region[0].text if self.region and not self.region[0].slot else ""
        return next((s for s in sorted(self.format.starts, key=len, reverse=True) if s and head.startswith(s)), "")


def pieces(template: str, fmt: Format, key: str) -> tuple[Piece, ...]:
    out: list[Piece] = []
    at = 0
    for m in _PLACEHOLDER.finditer(template):
        slot, spelling = m.group(1), m.group(2)
        if spelling not in _SPELLINGS[slot]:
            raise NotConstrainable(f"{fmt.path}: '{key}: …{m.group(0)}…' is no placeholder (see grammars/README.md)")
        if m.start() > at:
            out.append(Piece(text=template[at : m.start()]))
        if slot == "args_key":  # the header's own key, as text
            out.append(Piece(text=fmt.args_key))
        else:
            out.append(Piece(slot=slot, spelling=spelling))
        at = m.end()
    if at < len(template):
        out.append(Piece(text=template[at:]))
    # Adjacent texts (an args_key between two literals) are one.
    merged: list[Piece] = []
    for p in out:
        if merged and p.text and not p.slot and merged[-1].text and not merged[-1].slot:
            merged[-1] = Piece(text=merged[-1].text + p.text)
        else:
            merged.append(p)
    return tuple(merged)


def canonical(format: str | Format) -> Canonical:
    """The canonical form of a format (a name or a Format); NotConstrainable without one."""
    fmt = format if isinstance(format, Format) else default_registry().select([format])[0]
    c = fmt.canonical
    if "canonical" not in c:
        raise NotConstrainable(
            f'The "{fmt.name}" format declares no canonical form (no "// canonical:" header line), '
            f"so it cannot be rendered or constrained; the formats that can: {', '.join(constrainable())}."
        )
    region = pieces(c["canonical"], fmt, "canonical")
    many = any(p.slot == "calls" for p in region)
    call = pieces(c["canonical_call"], fmt, "canonical_call") if many else region
    if many and "canonical_call" not in c:
        raise NotConstrainable(f"{fmt.path}: a canonical region with {{calls}} needs '// canonical_call:'")
    param = pieces(c.get("canonical_param", ""), fmt, "canonical_param")
    if any(p.slot == "args" and p.spelling == "params" for p in call) and not param:
        raise NotConstrainable(f"{fmt.path}: {{args:params}} needs '// canonical_param:'")
    return Canonical(fmt, region, call, param, c.get("canonical_sep", ""), many)


def constrainable() -> list[str]:
    """The built-in formats that declare a canonical form, in the order formats=None tries them."""
    return [f.name for f in default_registry().select(None) if "canonical" in f.canonical]


# --- rendering ----------------------------------------------------------------------------


def _name_args(call: Any) -> tuple[str, Mapping[str, Any]]:
    """The name and arguments of a call: a ToolCall, {"name", "arguments"|"parameters"},
    or OpenAI's {"type": "function", "function": {"name", "arguments"}} with the
    arguments as a JSON object or its text. Anything else is a TypeError: a call written
    with no name, or without the arguments it was given, would be a silent error."""
    if isinstance(call, Mapping):
        inner = call.get("function")
        if isinstance(inner, Mapping) and "name" not in call:
            call = inner  # (OpenAI's tool call, as ToolCall.to_openai() gives it)
        name, args = call.get("name"), call.get("arguments", call.get("parameters"))
    else:
        name, args = getattr(call, "name", None), getattr(call, "arguments", None)
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            raise TypeError(f"render_call: the arguments of {name!r} are text that is no JSON object: {args[:60]!r}") from None
    if args is None:
        args = {}
    if not isinstance(name, str) or not name:
        raise TypeError(f"render_call: a call needs a name (a ToolCall, or a mapping with 'name' and 'arguments'), got {call!r:.80}")
    if not isinstance(args, Mapping):
        raise TypeError(f"render_call: the arguments of {name!r} must be a mapping (or its JSON text), got {type(args).__name__}")
    return name, args


def _raw(value: Any) -> str:
    # A parameter value is raw text; what is no string is written as JSON (typed back by
    # the tool's schema).
    return value if isinstance(value, str) else _json(value)


def _fill(template: tuple[Piece, ...], c: Canonical, name: str = "", args: Mapping[str, Any] | None = None,
          calls: str = "", key: str = "", value: Any = None, index: int = 0) -> str:  # fmt: skip
    out = []
    for p in template:
        if not p.slot:
            out.append(p.text)
        elif p.slot == "name":
            out.append(_json(name) if p.spelling == "json" else name)
        elif p.slot == "calls":
            out.append(calls)
        elif p.slot == "key":
            out.append(key)
        elif p.slot == "index":
            out.append(str(index))
        elif p.slot == "value":
            out.append(_raw(value))
        elif p.spelling == "json":
            out.append(_json(dict(args or {})))
        elif p.spelling == "python":
            out.append(", ".join(f"{k}={_py(v)}" for k, v in (args or {}).items()))
        else:  # params
            out.append("".join(_fill(c.param, c, key=str(k), value=v) for k, v in (args or {}).items()))
    return "".join(out)


def render_call(call: Any, format: str | Format) -> str:
    """`call` (a ToolCall, a mapping with "name" and "arguments", or a list of them) written
    as `format`'s chat template writes it: its canonical form (grammars/README.md). The
    arguments are written in their order. toolgram.parse reads it back, and
    toolgram.constrain(tools, format) accepts it when the arguments follow the tools'
    schemas in the order of their properties. Raises ValueError (NotConstrainable) for a
    format without a canonical form."""
    c = canonical(format)
    calls = list(call) if isinstance(call, (list, tuple)) else [call]
    texts = [_fill(c.call, c, *_name_args(x), index=i) for i, x in enumerate(calls)]
    if c.many:
        return _fill(c.region, c, calls=c.sep.join(texts))
    return c.sep.join(texts)
