"""AttrEcho: a call whose parameters hold their value in an attribute (BFCL's verbose XML),
written as json.dumps writes the arguments, as they stream in.

StreamParser(announce="name") announces a call of a format whose header declares its
opener (`stream_attr: <function name="{name}">`) once its name and a tag after it show,
and streams its parameters with this echo: fed the text after the opener, it gives back
the JSON text json.dumps(call.arguments, ensure_ascii=False) starts with, as far as it is
certain:

    <params><param name="path" value="notes.md" type="string"/><param name="content" value="Day one…
    {"path": "notes.md", "content": "Day one…

A value is an attribute's text up to its quote, its character references read as parse()
reads them (`&quot;` is `"`: builder.xml_refs; a reference begun, `&quo`, is held back
until it ends or cannot be one), typed by the tool's schema and the `type=` the model
wrote, which may come after it; a key and a type are read so too. So a value's characters go out as they
come only where its type is certain when the value begins: the schema says string and
nothing else, or a `type=` written before it says string and the schema allows one (or
there is none); and its key (`name=`) came before it. Held back meanwhile: a value's text
while it is only blanks (a value the end cuts there is dropped), and a run of the
grammar's closers at its end (`</param` of `</param>`, which the end of the reply may cut
as markup: close.cut_markup). A value that begins with a `"` (only a single-quoted one
can) stops the echo: typed `json`, it would be that JSON string. The parameter's
string closes at its element's `/>` (a second `value=` before it adds to the text, as
the grammar reads it). Any other value (a number, a boolean, a value the schema types
otherwise, one whose key or type comes after it, one with no schema and no type before
it) goes out whole at its element's `/>`, typed as the builder types it (coerce_param on
the object of that one element).

Anything else stops the echo for good (`stopped`): a key given twice or that the schema
says is an array (written again, its values collect into a list), an element with
content (`>`: a <dict>, a <list>, text), an attribute written otherwise than plainly, a
`name=` or a `type=` after a value that streams on the strength of what came before it,
a value held past _HOLD_VALUE characters (one sent whole) or _HOLD (blanks or closers held
back from a streaming one: a run that long is no one's text to send early). The rest comes with the call's end, where the
caller checks that the final text starts with what was sent (else the call is withdrawn).
The arguments' `}` comes with the end too. Work is in proportion to the text fed: what is
held back is bounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import regex

from .._build.builder import XML_REF_SOURCE, xml_refs
from .._build.coerce import Node, _container, _hint, _node_kind, coerce_param, kinds_of, repeated_item
from .._lalr.close import value_closers
from .._recover.repair import RepairError
from .stepecho import HOLD, StepEcho
from .xmlecho import _WS, _quoted, _string

__all__ = ["AttrEcho"]

_B = r"[ \t\f\r\n]"  # (the grammar's ignored WS)
_ATTR = r"""[^\s"'<>=/]"""
# (a plain attribute value: in quotes, or bare and followed by what may end it; what
# the grammar reads otherwise, `name="a'`, is not taken: the echo stops)
_PLAIN = rf"""(?:"(?P<{{0}}>{_ATTR}+)"|'(?P<{{0}}>{_ATTR}+)'|(?P<{{0}}>{_ATTR}+)(?=[\s/>]))"""
_OTHER = rf"""(?:"{_ATTR}*"|'{_ATTR}*'|{_ATTR}*(?=[\s/>]))"""
_WORD_END = r"(?![\w\-])"
_START = regex.compile(rf"{_B}*(?:(?P<wrap><params>)|<param(?={_B}))")
_NEXT = regex.compile(rf"{_B}*<param(?={_B})")
_ATTRS = regex.compile(
    rf"{_B}*(?:name{_WORD_END}{_B}*={_B}*{_PLAIN.format('key')}"
    rf"|type{_WORD_END}{_B}*={_B}*{_PLAIN.format('type')}"
    rf"|value{_WORD_END}{_B}*={_B}*(?P<quote>[\"'])"
    rf"|(?!(?:name|type|value){_WORD_END})[A-Za-z_][\w\-]*{_B}*={_B}*{_OTHER}"
    rf"|(?P<close>/>)|(?P<content>>))"
)
_HOLD = HOLD  # an attribute, a closers' run, at most; past it, stop
# (a character reference, whole or begun: `&quot;`, `&#x22;`; the longest is 10 characters)
_REF = regex.compile(XML_REF_SOURCE)
_REF_MOST = 10
_HOLD_VALUE = 4096  # a value sent whole, held until its element's end, at most
_OPEN, _BETWEEN, _ELEMENT, _VALUE = "open", "between", "element", "value"
_WHOLE, _EXACT = "whole", "exact"


class AttrEcho(StepEcho):
    def __init__(self, name: str, schema: Any, tags: Any) -> None:
        self.name = name
        self.schema = schema if isinstance(schema, Mapping) else None
        self.fmt = tags.fmt
        self.stopped = False
        self.done = False  # (never: the call's end comes with its CallDone)
        self.state = _OPEN
        self.held = ""
        self.keys: list[str] = []
        # (a closers' run that may end a value's text: the grammar's closing literals, what the
        # end of the reply may cut from a value's end as markup: `</param` of `</param>`)
        closers = sorted(value_closers(tags.fmt.compiled)[0], key=len, reverse=True)
        one = "(?:" + "|".join(regex.escape(c) for c in closers) + ")"
        ws = "[" + regex.escape(_WS) + "]"
        self.run = regex.compile(f"{one}(?:{ws}*{one})*")
        self.run_chars = "".join(sorted(set("".join(closers)) | set(_WS)))
        self._reset()

    def _reset(self) -> None:
        """A new element: nothing of it read yet."""
        self.key: str | None = None
        self.type: str | None = None
        self.mode: str | None = None  # _EXACT: streams; _WHOLE: sent at its `/>`
        self.by_hint = False  # (streams on the strength of a type written before it)
        self.texts: list[str] = []  # the element's value text so far, _WHOLE (every value= of it)
        self.size = 0  # its length
        self.pending = ""  # _EXACT: the value's text not sent yet (held back)
        self.sent = False  # _EXACT: some of it went out (more than blanks)
        self.quote = ""
        self.prefix = ""

    def _open(self, s: str, out: list[str]) -> str | None:
        m = _START.match(s, partial=True)
        if m is None:
            return self._stop()  # (`<params/>`: no parameters; anything else: with the end)
        if m.partial:
            return self._hold(s)
        self.state = _BETWEEN if m.group("wrap") else _ELEMENT
        return s[m.end() :]

    def _between(self, s: str, out: list[str]) -> str | None:
        m = _NEXT.match(s, partial=True)
        if m is None:
            return self._stop()  # (`</params>`, `</function>`: the rest, `}`, comes with the end)
        if m.partial:
            return self._hold(s)
        self.state = _ELEMENT
        self._reset()
        return s[m.end() :]

    def _member(self) -> Any:
        """The schema the builder types the element's value by (coerce_node, its object's
        member `key`); False where the arguments would not be an object."""
        schema = self.schema
        if schema is None:
            return None
        top = Node(type="object", children=[Node(key=self.key)])
        if _node_kind(top, schema, schema, kinds_of(schema, schema), _hint("object")) != "object":
            return False
        found = _container(schema, schema, "object")
        props = found.get("properties") if found is not None else None
        extra = found.get("additionalProperties") if found is not None else None
        sub = props.get(self.key) if isinstance(props, Mapping) and self.key in props else extra
        return sub if isinstance(sub, Mapping) else None

    def _element(self, s: str, out: list[str]) -> str | None:
        m = _ATTRS.match(s, partial=True)
        if m is None or (m.group("content") is not None and not m.partial):
            return self._stop()  # (content, a <dict> or text: with the end; an attribute the echo does not read)
        if m.partial:
            return self._hold(s)
        rest = s[m.end() :]
        if m.group("key") is not None:
            if self.mode is _EXACT:
                return self._stop()  # (its value went out under the key before)
            self.key = xml_refs(m.group("key"))
        elif m.group("type") is not None:
            if self.mode is _EXACT and self.by_hint:
                return self._stop()  # (it streamed as the type before said)
            self.type = xml_refs(m.group("type"))
        elif m.group("quote") is not None:
            if self.mode is _EXACT:
                return self._stop()  # (a second value= adds to the text: rare, and a cut there reads otherwise)
            if self.mode is None and self.key is not None and not self._begin():
                return None
            self.quote = m.group("quote")
            self.state = _VALUE
        elif m.group("close") is not None:
            return self._close(rest, out)
        return rest

    def _takes(self) -> Any:
        """The schema of the element's key, as the builder types its value; False where
        it cannot go out: no key, a key given before (an error, or the same value), one
        the schema says is an array (its values collect into a list)."""
        sub = self._member() if self.key is not None else False
        if sub is False or self.key in self.keys or repeated_item(sub, self.schema, self.fmt.repeated)[0]:
            return False
        return sub

    def _begin(self) -> bool:
        """A value begins after its key: whether it streams (_EXACT) or waits (_WHOLE)."""
        sub = self._takes()
        if sub is False:
            self._stop()
            return False
        hint = _hint(self.type)
        if _string(kinds_of(sub, self.schema), hint) is True:
            self.mode = _EXACT
            self.by_hint = kinds_of(sub, self.schema) != frozenset({"string"})
            self.prefix = ("{" if not self.keys else ", ") + json.dumps(self.key, ensure_ascii=False) + ': "'
            self.keys.append(self.key)
        else:
            self.mode = _WHOLE
        return True

    def _value(self, s: str, out: list[str]) -> str | None:
        j = s.find(self.quote)
        piece = s if j < 0 else s[:j]
        if self.mode is not _EXACT:
            self.texts.append(piece)
            self.size += len(piece)
            if self.size > _HOLD_VALUE:
                return self._stop()
        else:
            text = self.pending = self.pending + piece  # (held back: a few characters)
            ready = len(text) if j >= 0 else self._certain(text)
            if "&" in text:
                if j < 0:
                    ready = _before_ref(text, ready)
                shown = xml_refs(text[:ready])  # (what parse() reads of it: no reference is cut)
            else:
                shown = text[:ready]
            if not self.sent:
                lead = len(shown) - len(shown.lstrip(_WS))
                if shown[lead : lead + 1] == '"' or text[len(text) - len(text.lstrip(_WS)) :][:1] == '"':
                    return self._stop()  # (a JSON string, typed `json`: its value, not its text)
                if lead >= len(shown):
                    ready = 0  # (blanks only: a value the end cuts there is dropped)
            if ready:
                self._send(out, shown)
                self.pending = text[ready:]
                self.sent = True
            if len(self.pending) > _HOLD:
                return self._stop()  # (blanks, or closers, that long: the rest with the end)
        if j < 0:
            return None
        self.state = _ELEMENT
        return s[j + 1 :]

    def _certain(self, text: str) -> int:
        """How much of the value's text not yet sent is certain while the value is open:
        all but a run of the grammar's closers at its end (whole ones, blanks between them,
        the last maybe begun), which the end of the reply may cut off as markup
        (close.cut_markup). (What is held is such a run, or blanks: a few characters.)"""
        for i in range(len(text.rstrip(self.run_chars)), len(text)):
            if text[i] in "</" and self.run.fullmatch(text, i, partial=True) is not None:
                return i
        return len(text)

    def _send(self, out: list[str], text: str, close: bool = False) -> None:
        out.append(self.prefix + _quoted(text) + ('"' if close else ""))
        self.prefix = ""

    def _close(self, rest: str, out: list[str]) -> str | None:
        """The element's `/>`: its value is certain."""
        if self.mode is _EXACT:
            self._send(out, xml_refs(self.pending), close=True)
        elif not self._whole(out):
            return self._stop()
        self.state = _BETWEEN
        return rest

    def _whole(self, out: list[str]) -> bool:
        """The element's value, typed as the builder types it, once its `/>` came."""
        key = self.key
        if self._takes() is False:
            return False
        try:
            node = Node(type="object", children=[Node(key=key, type=self.type, text=xml_refs("".join(self.texts)))])
            value, _ = coerce_param(node, None, self.schema, self.schema, self.fmt.framing, self.fmt.repeated)
            text = json.dumps(value[key], ensure_ascii=False, allow_nan=False)
        except (RepairError, RecursionError, ValueError, TypeError, KeyError):
            return False
        out.append(("{" if not self.keys else ", ") + json.dumps(key, ensure_ascii=False) + ": " + text)
        self.keys.append(key)
        return True


def _before_ref(text: str, ready: int) -> int:
    """`ready` (how much of a streaming value's text is certain), moved back to the `&` of
    a character reference that its end may still complete (`&quo`, `&#x2`): sent only
    once it ends (read as parse() reads it) or cannot be one (sent as written). (Only the
    last `&` can: a reference holds none.)"""
    i = text.rfind("&", max(0, ready - _REF_MOST), ready)
    if i >= 0 and text.find(";", i, ready) < 0:  # (a `;` after it: it ended, or is none)
        m = _REF.fullmatch(text, i, ready, partial=True)
        if m is not None and m.partial:
            return i
    return ready
