"""toolgram.constrain: the grammar of a reply in a format, calling only the given tools."""

from __future__ import annotations

from typing import Any

from .._tools.tools import normalize_tools
from .canonical import Canonical, Piece, canonical
from .emit import Grammar, Node, alt, lit, rep, seq
from .schema import Values, llguidance_json, subset

ENGINES = ("llguidance", "gbnf")


def constrain(tools: Any, format: str, *, engine: str = "llguidance", prose: bool = True,
              max_calls: int | None = None, special_tokens: Any = None) -> str:  # fmt: skip
    """The grammar text, for `engine` ("llguidance": its Lark syntax with %json; "gbnf":
    llama.cpp's GBNF, which xgrammar reads too), of a reply in `format` made of one or more
    calls (at most `max_calls`) that name only the given tools, with arguments that follow
    their JSON Schemas (the subset docs/constrain.md lists), written in the format's
    canonical form (what toolgram.prompts.render_call writes).

    `prose=True` allows text before the first call when the region opens with one of the
    format's `start:` markers (a bare llama3_json object opens the reply; a pythonic list
    `[`, whose anchor is a line, comes after a line break). `special_tokens`: the markers the
    model's tokenizer has as single special tokens (`<|tool_call_start|>`); llguidance then
    requires each as that token, not as text (GBNF writes markers as text whatever this says).

    Raises ValueError for an unknown engine or format, a format without a canonical form
    (see toolgram.prompts.render_call), no tools, or max_calls below 1.
    """
    if engine not in ENGINES:
        raise ValueError(f'engine must be one of {", ".join(ENGINES)}, not "{engine}".')
    if max_calls is not None and max_calls < 1:
        raise ValueError("max_calls must be 1 or more (or None: any number).")
    toolset = normalize_tools(tools)
    listed = list(toolset.tools) if toolset is not None else []
    if not listed:
        raise ValueError("constrain needs at least one tool.")
    c = canonical(format)
    specials = set(special_tokens or ()) if engine == "llguidance" else set()
    for token in specials:
        if not (token.startswith("<") and token.endswith(">") and len(token) > 2):
            raise ValueError(f"llguidance names a special token as <…>; {token!r} is not written so.")
    g = Grammar(engine)
    builder = _Builder(c, g, Values(g), specials)
    tools_ = [(t.name, subset(t.parameters or {})) for t in listed]
    # The region's opening marker (its first text, up to a placeholder, that a `start:`
    # marker opens), written apart: prose before the calls runs into it.
    head = c.region[0].text if c.region and not c.region[0].slot else ""
    # A region that opens with no start marker (llama3_json's bare object) must open the
    # reply: no text before it.
    start_marker = c.start_marker
    marker = start_marker or head
    opening = builder.literal(marker)
    if prose and start_marker:
        line = c.anchor == "line"
        token = ("tok", marker) if marker in specials else lit(marker)
        opening = alt(opening, ("prose", token, marker, line))
    rest = (Piece(text=head[len(marker) :]),) if head[len(marker) :] else ()
    high = None if max_calls is None else max_calls - 1
    # The separator is written into the calls after the first: a literal of its own would
    # meet the close marker's literal, both starting with a line break, and llguidance's
    # greedy lexer would take the longer one for good.
    sep = (Piece(text=c.sep),) if c.sep else ()
    later = builder.calls("later", tools_, _merged(sep + c.call))
    if c.many:
        first = builder.calls("call", tools_, c.call)
        start = seq(opening, builder.text(rest + c.region[1:], calls=seq(first, rep(later, 0, high))))
    else:
        first = builder.calls("first", tools_, _merged(rest + c.call[1:]))
        start = seq(opening, first, rep(later, 0, high))
    return g.text(start)


class _Builder:
    def __init__(self, c: Canonical, g: Grammar, values: Values, specials: set[str]) -> None:
        self.c, self.g, self.values, self.specials = c, g, values, specials
        self.count = 0

    def literal(self, text: str) -> Node:
        """Text, with the special tokens in it required as tokens."""
        nodes = []
        at = 0
        while self.specials and at < len(text):
            hits = [(text.find(t, at), t) for t in self.specials if text.find(t, at) >= 0]
            if not hits:
                break
            where, token = min(hits, key=lambda h: (h[0], -len(h[1])))
            nodes += [lit(text[at:where]), ("tok", token)]
            at = where + len(token)
        nodes.append(lit(text[at:]))
        return seq(*nodes)

    def text(self, template: tuple[Piece, ...], name: str = "", schema: dict | None = None,
             calls: Node | None = None, key: str = "", value: Node | None = None) -> Node:  # fmt: skip
        nodes = []
        for p in template:
            if not p.slot:
                nodes.append(self.literal(p.text))
            elif p.slot == "name":
                nodes.append(lit(_json_text(name) if p.spelling == "json" else name))
            elif p.slot == "calls":
                nodes.append(calls)
            elif p.slot == "key":
                nodes.append(lit(key))
            elif p.slot == "index":
                # (The call's position in the reply, which a grammar does not count: any.)
                nodes.append(alt(lit("0"), seq(("cls", "1-9"), rep(("cls", "0-9"), 0, 2))))
            elif p.slot == "value":
                nodes.append(value)
            else:
                nodes.append(self.args(schema or {}, p.spelling))
        return seq(*nodes)

    def calls(self, rule: str, tools: list[tuple[str, dict]], template: tuple[Piece, ...]) -> Node:
        """One call of any of the tools: the text every call starts with, then one rule
        per tool. (Written once, the common text is one lexeme, not one per tool beside a
        tool's lexeme that starts alike: a greedy lexer, llguidance's, would take the longer
        and fail where it ends.)"""
        common = template[0] if template and not template[0].slot else None
        tail = template[1:] if common else template
        calls = self.g.rule(rule, alt(*(self.call(n, s, tail) for n, s in tools)))
        return seq(self.literal(common.text), calls) if common else calls

    def call(self, name: str, schema: dict, template: tuple[Piece, ...]) -> Node:
        self.count += 1
        return self.g.rule(f"call{self.count}", self.text(template, name=name, schema=schema))

    def args(self, schema: dict, spelling: str) -> Node:
        if "properties" not in schema:
            # No declared arguments: any JSON object; none as keywords or parameters.
            schema = {**schema, "type": "object"}
        if spelling == "json":
            if self.g.engine == "llguidance":
                return self.g.rule(f"args{self.count}", ("json", llguidance_json(schema)))
            return self.values.value(schema, "json")
        props = schema.get("properties", {})
        if spelling == "python":
            items = [(k, seq(lit(f"{k}="), self.values.value(v, "python"))) for k, v in props.items()]
            return self.values.ordered(items, schema.get("required", ()), ", ")
        items = [(k, self.text(self.c.param, key=k, value=self.values.value(v, "raw"))) for k, v in props.items()]
        return self.values.ordered(items, schema.get("required", ()), "")


def _merged(template: tuple[Piece, ...]) -> tuple[Piece, ...]:
    out: list[Piece] = []
    for p in template:
        if out and not p.slot and not out[-1].slot:
            out[-1] = Piece(text=out[-1].text + p.text)
        elif p.slot or p.text:
            out.append(p)
    return tuple(out)


def _json_text(name: str) -> str:
    from .._tools.prompts import _json

    return _json(name)
