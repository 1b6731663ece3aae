"""Tags: what a format's header declares about its call and parameter tags, compiled into
the patterns that stream its parameter values as they are written (_stream/xmlecho.py)
and find a call's name early (Scanner.early_call).

    // stream_call: <invoke name="{name}"> … </invoke>
    // stream_param: <parameter name="{key}" string="{type}"> … </parameter>

An opener is a template: `{name}` and `{key}` stand for a plain name (`"{key}"`, an
attribute's value: in double, single or no quotes), ` attr="{type}"` for a type the model
may write (DSML's string="true", Kimi K3's type="string"; it may be left out), `{attrs}`
for other attributes (not name, key, tool, type or string: those decide something), a
space for any blanks (none too), ` | ` between the ways an opener may be written (Step-3's
with and without `function<｜tool_sep｜>`), `{call}` where the call's own text starts when its opener
begins with a token of the block (Step-3's `<｜tool_call_begin｜>{call}<steptml:invoke …`:
parse() gives a later call of the block the span from there); the rest is literal. A
closer is literal. An opener that is only `{name}` (glm45_bare) takes a call only where
a parameter's opener follows it. `stream_sep:` is what a block writes between a call's close and the
next call's opener, besides blanks (a template of literals and blanks).

The patterns are narrower than the grammar (one attribute order, plain names): what
they do not take stops the echo, and the call's rest comes with its end, which is
always right. What they take must be read by the grammar the same way.
"""

from __future__ import annotations

from typing import Any

import regex

from .words import lazy

__all__ = ["AttrTags", "JsonTags", "LooseTags", "PyTags", "Tags", "attr_tags_of", "json_tags_of", "loose_tags_of", "py_tags_of", "tags_of"]

_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.\-:/]{0,127}"
_KEY_FIRST = r"[A-Za-z0-9_]"
_KEY = _KEY_FIRST + r"[A-Za-z0-9_.\-]{0,127}"
_TYPE = r"[A-Za-z0-9_]{1,32}"
# (`{id}`: an id the model writes, Mistral's `[CALL_ID]abc123XYZ`; narrower than the
# grammars' `\w+`: an id it does not take is not announced early, and comes whole)
_SLOTS = {"name": _NAME, "key": _KEY, "type": _TYPE, "index": r"[0-9]{1,9}", "id": r"[A-Za-z0-9_]{1,64}"}
# (`{text}`: words the model writes that nothing reads while streaming, up to the next tag:
# MFCS's <instructions>; at most 1,024 characters, or the call is not announced early)
_SLOTS["text"] = r"[^<]{0,1024}"
# Other attributes ({attrs}): any but those that name or type something.
_ATTRS = (
    r"(?:\s+(?!(?:name|key|tool|type|string)\s*=)[A-Za-z_][\w\-]*\s*=\s*"
    r"""(?:"[^"<>\n]*"|'[^'<>\n]*'|[^\s"'<>=]+))*"""
)
# A template's parts: an attribute holding a slot, a bare slot, {attrs}, blanks, literal text.
_PART = lazy(
    regex.compile,
    r'(?P<attr>\s+([A-Za-z_][\w\-]*)="\{(name|key|type)\}")|\{(?P<slot>name|key|index|id|text)\}|(?P<attrs>\{attrs\})|(?P<own>\{call\})'
    r"|(?P<space>\s+)|(?P<lit>[^\s{]+|\{)",
)
# Blanks between a value's close tag and the next tag (as the formats' VALUE terminals
# allow them: at most 32, a lone \r not among them).
_GAP = r"(?:[ \t]|\r?\n){0,32}"


def _pattern(template: str) -> str:
    out = []
    for m in _PART.finditer(template):
        if m.group("attr"):
            attr, slot = regex.escape(m.group(2)), m.group(3)
            body = _SLOTS[slot]
            value = rf"""(?:"(?P<{slot}>{body})"|'(?P<{slot}>{body})'|(?P<{slot}>{body}))"""
            part = rf"\s+{attr}\s*=\s*{value}"
            out.append(f"(?:{part})?" if slot == "type" else part)  # (a type may be left out)
        elif m.group("slot"):
            slot = m.group("slot")
            out.append(f"(?P<{slot}>{_SLOTS[slot]})" if slot not in ("index", "text") else _SLOTS[slot])
        elif m.group("attrs"):
            out.append(_ATTRS)
        elif m.group("own"):
            out.append("(?P<own>)")
        elif m.group("space"):
            out.append(r"[ \t\r\n]*")
        else:
            out.append(regex.escape(m.group("lit")))
    return "".join(out)


def _alternatives(template: str, part: Any = _pattern) -> str:
    """An opener written more than one way (` | ` between them), as one pattern."""
    return "(?:" + "|".join(part(t) for t in regex.split(r"\s\|\s", template)) + ")"


def _lead(fmt: Any) -> str:
    """What may come before a region's first call: the format's start markers, up to three,
    blanks after each."""
    starts = "|".join(regex.escape(s) for s in sorted(fmt.starts, key=len, reverse=True) if not s.startswith("</"))
    return rf"(?:(?:{starts})[ \t\r\n]*){{0,3}}" if starts else ""


def _head(template: str) -> str:
    """The literal start of an opener (`<parameter=`, `<|open|>argument`): what shows the
    next parameter begins."""
    m = _PART.match(template)
    return m.group("lit") if m is not None and m.group("lit") else template[:1]


def _words(fmt: Any) -> set[str]:
    """The words of a format's tags (`parameter` of `<parameter=` and `</parameter>`)."""
    out = set()
    tags = [*fmt.starts, *fmt.ends, *(t for pair in fmt.nests for t in pair)]
    for pair in (fmt.stream_call, fmt.stream_param):
        if pair is not None:
            tags += [_PART.sub(" ", pair[0]), pair[1]]
    for tag in tags:
        m = regex.match(r"</?([A-Za-z_][^\s<>=|｜/\"']*)", tag)
        if m is not None:
            out.add(m.group(1))
    return out


_ALL_WORDS: set[str] | None = None


def _tag_words(fmt: Any) -> set[str]:
    """The words that may start a tag inside a value: those of every built-in format's
    tags (formats share their VALUE terminals, which stop at each other's tags: Qwen3-Coder's
    at `<seed:tool_call>`) and this format's own."""
    global _ALL_WORDS
    if _ALL_WORDS is None:
        from .registry import default_registry

        words: set[str] = set()
        for other in default_registry().formats.values():
            words |= _words(other)
        _ALL_WORDS = words
    return _ALL_WORDS | _words(fmt)


class Tags:
    """A format's compiled `stream_call` and `stream_param` (see the module docstring):

    call      the call's opener (group `open`), after the region's start markers, then
              blanks and a tag (group `rest`: where the parameters begin); `name`
    next      a call's close (`call_close`), blanks, what the header's `stream_sep:` says
              comes between two calls (Step-3's `<｜tool_call_end｜><｜tool_sep｜>`), blanks,
              and the next call's opener and a tag, as `call` (the next call of a block
              that holds several)
    param     blanks, then a parameter's opener; `key`, and `type` (None when not written)
    close     a value's close tag (group `tag`) where it certainly closes the value: before
              the next parameter; before the call's close (group `call`) it may yet be text
    lt        the first character of every tag (`<`; `]` of MiniMax-M3's `]<]minimax[>[<`)
    tag       what may start a tag after a `<` in a value (else the `<` is text), and the
              header's `stream_stop:` texts (where the value ends whatever follows)
    framing   the format's framing of raw values (coerce.frame)
    """

    def __init__(self, fmt: Any) -> None:
        (call_open, call_close), (param_open, param_close) = fmt.stream_call, fmt.stream_param
        lead = _lead(fmt)
        # What every tag of the format starts with: `<`, or MiniMax-M3's `]<]minimax[>[<`, whose
        # values run to the next `]<]minimax[>[` (lt: its first character).
        head = _head(param_open)
        prefix = head[: head.rindex("<")] if "<" in head[1:] and not head.startswith("<") else ""
        self.lt = prefix[:1] or "<"
        # (A tag must follow, after blanks: `I'll use <function=get_weather>` then a line of
        # prose is a mention, not announced only to be withdrawn.)
        # An opener that is a bare name, no literal (glm45_bare's `{name}` line, GLM's call with
        # its <tool_call> left out), is a call only where a parameter's opener follows it: any
        # prose line followed by a tag (`Head` then `<function name=…>`) would match it, and be
        # announced, then withdrawn.
        # Its key, too, must begin flush against that opener (`Note` then `<arg_key> is a GLM
        # tag I mention.` is prose: glm45_bare's grammar takes a key set apart from its tag
        # only in a pair written whole, which then comes whole, not announced early).
        bare = all(m.group("slot") == "name" or m.group("space") for m in _PART.finditer(call_open))
        tag = regex.escape(head) if bare else regex.escape(self.lt)
        if bare and param_open[len(head) :].startswith("{key}"):
            tag += f"(?={_KEY_FIRST})"
        opener = "(?P<open>" + _alternatives(call_open) + r")(?P<rest>[ \t\r\n]*" + tag + ")"
        self.call = regex.compile(lead + opener)
        # (the group where a call's own text, its span in parse(), starts: see {call})
        self.own = "own" if "own" in self.call.groupindex else "open"
        self.call_close = call_close
        sep = _pattern(fmt.stream_sep) + r"[ \t\r\n]*" if fmt.stream_sep else ""
        self.next = regex.compile(regex.escape(call_close) + r"[ \t\r\n]*" + sep + opener)
        self.param = regex.compile(r"[ \t\r\n]*" + _pattern(param_open))
        self.has_type = "type" in self.param.groupindex
        # (a closer may name its key, `]<]minimax[>[</{key}>`: any name closes, as the grammar reads it)
        closer = _pattern(param_close).replace("(?P<key>", "(?:") if "{key}" in param_close else regex.escape(param_close)
        self.close = regex.compile(
            "(?P<tag>" + closer + ")" + _GAP + rf"(?:{regex.escape(head)}|(?P<call>{regex.escape(call_close)}))"
        )
        if prefix:
            self.tag = regex.compile(regex.escape(prefix))  # (every tag, the value's text up to it)
        else:
            words = sorted(_tag_words(fmt), key=len, reverse=True)
            # (and `</par…>`, which ends a value whose close was left out: Builder's _MISSPELT_CLOSE;
            # and the header's `stream_stop:`, cofl's `</cofl:`, which ends a value whatever
            # follows it: sent as the value's text, it would be taken back at the call's end)
            stops = "".join("|" + regex.escape(t[1:]) for t in fmt.stream_stop if t.startswith("<"))
            self.tag = regex.compile(r"<(?:/\s*par" + stops + "|/?(?:[|｜]|" + "|".join(regex.escape(w) for w in words) + "))")
        self.framing = fmt.framing


_TAGS: dict[Any, Tags | None] = {}


def _compiled(cache: dict, fmt: Any, make: Any) -> Any:
    """make(fmt), made once per format (None: the header declares none)."""
    try:
        return cache[fmt]
    except KeyError:
        tags = cache[fmt] = make(fmt)
        return tags


def tags_of(fmt: Any) -> Tags | None:
    """The format's Tags, None when its header declares none."""
    return _compiled(_TAGS, fmt, lambda f: Tags(f) if f.stream_call is not None and f.stream_param is not None else None)


class JsonTags:
    """A format's compiled `stream_json` (and `stream_sep`): the opener of a call whose
    arguments are a JSON object after it, streamed by JsonEcho.

    call      the region's start markers, the call's opener (group `open`; `own` where the
              call's own text starts, see {call}), blanks and the arguments' `{` (group
              `rest`); `name`, and `id` where the opener holds `{index}`: the blank-free
              part of it that holds the slot is the id the model writes (Kimi K2's
              `functions.get_weather:0`, which parse() keeps as the call's id), or `{id}`:
              the id itself (Mistral's `[CALL_ID] {id} [ARGS]`). Openers written more than
              one way are alternatives, ` | ` between them.
    next      after a call's arguments closed: blanks, the `stream_sep`, blanks, the next
              call's opener and its arguments' `{`, as `call`
    markers   the format's start, end and end-of-turn markers: a string value left open
              before one ends there (JsonEcho stops at one)
    list      with `stream_json_list:`: the region's start markers, what the header says
              comes before a JSON list of call objects (Mistral's `[` before v11), blanks and
              the first object's `{` (group `rest`). Such a list's calls are announced one by
              one once each one's id is certain (StreamParser's _ListCalls): Mistral Nemo
              writes an object's `"id"` after its arguments, so at its closing `}`, or at its
              arguments' `{` where `"name"` and `"id"` came before them.
    """

    def __init__(self, fmt: Any) -> None:
        opener = "(?P<open>" + _alternatives(fmt.stream_json, _json_opener) + r")[ \t\r\n]*(?P<rest>\{)"
        self.call = regex.compile(_lead(fmt) + opener)
        self.own = "own" if "own" in self.call.groupindex else "open"
        self.has_id = "id" in self.call.groupindex
        # (a string value holding one of these may be cut there: JsonEcho holds them)
        self.markers = tuple(dict.fromkeys((*fmt.starts, *fmt.ends, *fmt.end_of_turn)))
        sep = _pattern(fmt.stream_sep) + r"[ \t\r\n]*" if fmt.stream_sep else ""
        self.next = regex.compile(r"[ \t\r\n]*" + sep + opener)
        listed = getattr(fmt, "stream_json_list", "")
        self.list = regex.compile(_lead(fmt) + _alternatives(listed) + r"[ \t\r\n]*(?P<rest>\{)") if listed else None


def _json_opener(template: str) -> str:
    """A `stream_json:` opener: its blank-free parts, any blanks between them; the part
    that holds `{index}` is the id (group `id`)."""
    parts = []
    for part in template.split():
        body = _pattern(part)
        parts.append(f"(?P<id>{body})" if "{index}" in part else body)
    return r"[ \t\r\n]*".join(parts)


_JSON_TAGS: dict[Any, JsonTags | None] = {}


def json_tags_of(fmt: Any) -> JsonTags | None:
    """The format's JsonTags, None when its header declares no `stream_json`."""
    return _compiled(_JSON_TAGS, fmt, lambda f: JsonTags(f) if getattr(f, "stream_json", "") else None)


# A Python-style call's name (as pycall's NAME, but for a Markdown-escaped `\_`: that one
# is not announced) and its opening parenthesis.
_PY_NAME = r"(?P<name>[A-Za-z_][\w.\-]{0,127})"
_PY_CALL = r"(?P<open>" + _PY_NAME + r")[ \t\r\n]*(?P<rest>\()"


class PyTags:
    """A format's compiled `stream_python`: a list of Python-style calls.

    call      the region's start markers, what the header says comes before the first
              call (`[`), blanks, and the call's name and `(` (group `open` where the call
              starts, `name`, `rest` where its arguments begin)
    next      after a call's closing `)`: blanks, a comma (or a `;`, or none), blanks, the next
              call's name and `(`
    """

    own = "open"

    def __init__(self, fmt: Any) -> None:
        template = fmt.stream_python or fmt.stream_pycall
        if fmt.stream_pycall:
            # (the call's own opener before its `(`: Llama 3.1's `{name}.call` after
            # <|python_tag|>, a bare call's `{name}` opening the reply; its name as a Python
            # call's, _PY_CALL's)
            own = _alternatives(template).replace(f"(?P<name>{_NAME})", _PY_NAME)
            call = "(?P<open>" + own + r")[ \t\r\n]*(?P<rest>\()"
            self.call = regex.compile(_lead(fmt) + call)
        else:
            call = _PY_CALL
            self.call = regex.compile(_lead(fmt) + _alternatives(template) + r"[ \t\r\n]*" + call)
        # (a `;` in place of the comma, or none, as the grammars' missing_comma reads it; OLMo 3
        # writes a call a line)
        self.next = regex.compile(r"[ \t\r\n]*[,;]?[ \t\r\n]*" + call)


_PY_TAGS: dict[Any, PyTags | None] = {}


def py_tags_of(fmt: Any) -> PyTags | None:
    """The format's PyTags, None when its header declares no `stream_python`."""
    return _compiled(_PY_TAGS, fmt, lambda f: PyTags(f) if getattr(f, "stream_python", "") or getattr(f, "stream_pycall", "") else None)


class LooseTags:
    """A format's compiled `stream_loose`: the opener of a call whose arguments are Gemma's
    loose object (bare keys, strings between the format's delimiters), streamed by
    LooseEcho (_stream/looseecho.py).

    call      the region's start markers, the call's opener (`call:{name}`; group `open`),
              blanks and the arguments' `{` (group `rest`); `name`
    markers   the start, end and end-of-turn markers of the formats that declare
              `stream_loose`: a string's text that may begin one is held, and one that does
              stops the echo (a string left open may end there)
    fmt       the format (its name, its `repeated`, its framing: what the builder types with)
    """

    own = "open"

    def __init__(self, fmt: Any) -> None:
        # (its name as Gemma's NAME reads it: no `:` or `/`, which the template's {name} takes)
        own = _alternatives(fmt.stream_loose).replace(f"(?P<name>{_NAME})", r"(?P<name>\w[\w.\-]{0,127})")
        opener = "(?P<open>" + own + r")[ \t\r\n]*(?P<rest>\{)"
        self.call = regex.compile(_lead(fmt) + opener)
        # (and those of the other formats that read these objects: Gemma's bare call body
        # ends its arguments at any of them, though it declares none)
        from .registry import default_registry

        kin = [f for f in default_registry().formats.values() if getattr(f, "stream_loose", "")]
        self.markers = tuple(dict.fromkeys(m for f in (fmt, *kin) for m in (*f.starts, *f.ends, *f.end_of_turn)))
        self.fmt = fmt


_LOOSE_TAGS: dict[Any, LooseTags | None] = {}


def loose_tags_of(fmt: Any) -> LooseTags | None:
    """The format's LooseTags, None when its header declares no `stream_loose`."""
    return _compiled(_LOOSE_TAGS, fmt, lambda f: LooseTags(f) if getattr(f, "stream_loose", "") else None)


class AttrTags:
    """A format's compiled `stream_attr`: the opener of a call whose parameters are elements
    holding their value in an attribute (BFCL's `<function name="{name}">`, then
    `<param name="KEY" value="VALUE" type="TYPE"/>`), streamed by AttrEcho
    (_stream/attrecho.py).

    call      the region's start markers, the call's opener (group `open`), blanks and a
              tag's `<` (group `rest`: where its parameters begin); `name`
    fmt       the format (its framing and `repeated`: what the builder types with; its
              closers, which AttrEcho holds back at a value's end, it reads from the
              compiled grammar itself: _lalr is a layer above this module)
    """

    own = "open"

    def __init__(self, fmt: Any) -> None:
        # (its name as the grammar's ATTR reads it: no `/`, which the template's {name} takes)
        own = _alternatives(fmt.stream_attr).replace(f"(?P<name>{_NAME})", r"(?P<name>[A-Za-z0-9_][A-Za-z0-9_.\-:]{0,127})")
        self.call = regex.compile(_lead(fmt) + "(?P<open>" + own + r")(?P<rest>[ \t\r\n]*<)")
        self.fmt = fmt


_ATTR_TAGS: dict[Any, AttrTags | None] = {}


def attr_tags_of(fmt: Any) -> AttrTags | None:
    """The format's AttrTags, None when its header declares no `stream_attr`."""
    return _compiled(_ATTR_TAGS, fmt, lambda f: AttrTags(f) if getattr(f, "stream_attr", "") else None)
