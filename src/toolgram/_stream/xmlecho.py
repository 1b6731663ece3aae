"""XmlParamEcho: an XML-ish call's parameters, written as json.dumps writes the arguments,
as they stream in.

StreamParser(announce="name") announces a call of a format whose header declares its tags
(`stream_call:`, `stream_param:`; _grammar/tags.py) once its name is complete, and streams its
arguments with this echo: fed the text after the call's opener, it gives back the JSON
text json.dumps(call.arguments, ensure_ascii=False) starts with, as far as it is certain:

    <parameter=path>\\nnotes.md\\n</parameter>\\n<parameter=content>\\nDay one…
    {"path": "notes.md", "content": "Day one…

A parameter's value is raw text, typed by the tool's schema and the type the model wrote
(DSML string="true", Kimi K3 type="string"), the format's framing dropped (coerce.frame).
Its characters go out as they come when it is certain to be a string: the schema says
string and nothing else (and the model wrote no JSON type), the model wrote a string type
that the schema allows (or there is no schema), or there is neither and the text can no
longer be a JSON number, true, false, null, object or array (what an untyped value
decodes to, coerce._scalar). Held back meanwhile: the whitespace at the end (a newline of
it may be framing, all of it if the close tag was left out) and a `<` until it shows what
it is; a parameter's key goes out with its value's first character (a parameter the end
cuts before its value is dropped). A value ends at its close tag followed by the next
parameter's opener. Anything else stops the echo for good (`stopped`): a `<` that may
start a tag of any format (Tags.tag), the value's close before the call's (text, when the
line goes on: a close-tag run written inline; the call's end otherwise, which brings the
last `"}` anyway), a parameter that is not a string, a key seen twice, a value that starts
on its tag's line with a space, an opener the declared tags do not take, a JSON object in
place of parameters, a parameter the schema says is an array (written again, its values
collect into a list). The rest then comes with the call's end, where the caller checks that
the final text starts with what was sent (else the call is withdrawn and sent again
whole). Work is in proportion to the text fed: what is held back is at most stepecho.HOLD
characters (a value of another type, _HOLD_VALUE). The feed loop is StepEcho's (its
states `_between` and `_value`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import regex

from .._build.coerce import _hint, coerce_param, kinds_of, repeated_item
from .._recover.repair import RepairError
from .._grammar.words import lazy
from .._grammar.tags import Tags
from .stepecho import StepEcho

__all__ = ["XmlParamEcho"]

# What str.strip() strips (coerce._strict strips a value so before json.loads; an
# unclosed value is rstrip()ped): the characters str.isspace() is true of, written
# out (working them out walks all of Unicode: a tenth of a second at import;
# tests/test_stream_announce.py checks the list against str.isspace).
_WS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_W = "[" + regex.escape(_WS) + "]"
# An untyped value that json.loads would make something else than a string.
_JSONISH = lazy(
    regex.compile,
    _W + r"*(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|[\[{][\s\S]*)" + _W + "*",
)
_HOLD_VALUE = 4096  # a value of another type held until its close, at most; past it, stop
_BETWEEN, _VALUE = "between", "value"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


class XmlParamEcho(StepEcho):
    def __init__(self, schema: Any = None, tags: Tags | None = None) -> None:
        if tags is None:
            from .._grammar.registry import default_registry
            from .._grammar.tags import tags_of

            tags = tags_of(default_registry().formats["qwen3_coder_xml"])
        self.tags: Tags = tags
        self.stopped = False
        self.done = False  # (never: the call's end comes with its CallDone)
        self.state = _BETWEEN
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        self.props = props if isinstance(props, Mapping) else None
        self.schema = schema
        self.keys: list[str] = []
        self.held = ""  # the text taken, not yet answered for
        self.prefix = ""  # what goes before the value's first character: `{"key": "`, `, "key": "`
        self.lead = True  # a value's start not yet passed (its framing newline, its first blank)
        self.typed = False  # the value is certain to be a string
        self.sure = False  # its type is decided (a string, or held until its close: _whole)
        self.type: str | None = None  # the type the model wrote for the value, if any
        self.cut = ""  # the framing newline dropped at the value's start (coerce_param frames again)
        self.seen = 0  # how far the held value was searched for its close (see _whole)

    def _send(self, out: list[str], text: str, close: bool = False) -> None:
        """A value's characters (its prefix first, once it has some), and its close quote."""
        if text or close:
            out.append(self.prefix + _quoted(text) + ('"' if close else ""))
            self.prefix = ""

    def _between(self, s: str, out: list[str]) -> str | None:
        m = self.tags.param.match(s, partial=True)
        if m is None:
            # (the call's close with no parameter, a JSON object instead, an opener the
            # declared tags do not take, anything else: the rest comes with the call's end)
            return self._stop()
        if m.partial:
            return self._hold(s)
        key = m.group("key")
        if key in self.keys:
            return self._stop()  # (the last value would win, at the first key's place)
        prop = self.props.get(key) if self.props is not None else None
        if repeated_item(prop, self.schema, "error")[0]:
            # (an array parameter: written again further on, its values collect into a
            # list, which only the call's end shows; it comes then)
            return self._stop()
        self.type = m.group("type") if self.tags.has_type else None
        certain = _string(kinds_of(prop, self.schema), _hint(self.type))
        # (The key goes out with the value's first character: a parameter the end cuts
        # before its value begins is dropped, repair dropped_partial_argument.)
        self.prefix = ("{" if not self.keys else ", ") + json.dumps(key, ensure_ascii=False) + ': "'
        self.keys.append(key)
        self.state, self.lead, self.typed, self.sure = _VALUE, True, certain is True, certain is not None
        self.cut, self.seen = "", 0
        return s[m.end() :]

    def _value(self, s: str, out: list[str]) -> str | None:
        if self.lead:
            if not s or s == "\r":
                return self._hold(s)
            if self.tags.framing == "newline" and (s.startswith("\r\n") or s[0] == "\n"):
                n = 2 if s[0] == "\r" else 1  # (coerce.frame: one newline after the open tag is framing)
                self.cut, s = s[:n], s[n:]
            elif s[0] in " \t":
                # On the tag's line: spaces kept if the value is closed, dropped if its
                # close tag was left out (layout, _param_value); only its end tells.
                return self._stop()
            self.lead = False
        if not self.typed:
            return self._whole(s, out) if self.sure else self._untyped(s, out)
        tags = self.tags
        i = at = 0  # s[:i] is sent; a tag may start from s[at:] on
        while True:
            j = s.find(tags.lt, at)
            if j < 0:
                k = _run(s, i, len(s))
                self._send(out, s[i:k])
                return self._hold(s[k:])
            tag = tags.tag.match(s, j, partial=True)
            if tag is None:  # (text: no tag starts so)
                at = j + 1
                continue
            m = tags.close.match(s, j, partial=True) if not tag.partial else None
            if not tag.partial and m is None:
                self._send(out, s[i : _run(s, i, j)])
                return self._stop()  # (another tag: the rest comes with the call's end)
            if tag.partial or m.partial or m.group("call"):
                k = _run(s, i, j)
                self._send(out, s[i:k])
                # (before the call's close: the value's close may yet be text, if text follows it on its line)
                return self._stop() if m is not None and not m.partial else self._hold(s[k:])
            self._send(out, _framed(s[i:j], tags.framing), close=True)
            self.state = _BETWEEN
            return s[m.end("tag") :]

    def _untyped(self, s: str, out: list[str]) -> str | None:
        """A value no schema or written type types: a string once it cannot be JSON other
        than a string (then streamed), else held as any other value (_whole)."""
        lt = self.tags.lt
        j = s.find(lt)
        while j >= 0 and self.tags.tag.match(s, j, partial=True) is None:
            j = s.find(lt, j + 1)  # (a "<" that is text: part of what may or may not be JSON)
        end = len(s) if j < 0 else j
        if _JSONISH.fullmatch(s, 0, end, partial=True) is None:
            self.typed = True
            return s
        if s.lstrip(_WS)[:1] in ("[", "{"):
            self.sure = True  # (JSON whatever follows: held until its close, not looked at again)
        return self._whole(s, out)

    def _whole(self, s: str, out: list[str]) -> str | None:
        """A value that may be read as another type than a string: held until its close
        is certain, then sent as the call's end will read it (coerce_param)."""
        tags = self.tags
        j = s.find(tags.lt, self.seen)
        while j >= 0:
            tag = tags.tag.match(s, j, partial=True)
            if tag is None:  # (text)
                j = s.find(tags.lt, j + 1)
                continue
            m = tags.close.match(s, j, partial=True) if not tag.partial else None
            if tag.partial or (m is not None and m.partial):
                self.seen = j
                return self._hold(s, _HOLD_VALUE)
            if m is None or m.group("call"):
                return self._stop()  # (another tag, or a close that may be text: comes with the call's end)
            key = self.keys[-1]
            prop = self.props.get(key) if self.props is not None else None
            try:
                value, _ = coerce_param(self.cut + s[:j], self.type, prop, self.schema, tags.framing)
            except (RepairError, RecursionError):
                return self._stop()  # (the call cannot be read: it fails at its end)
            try:
                text = json.dumps(value, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError):  # pragma: no cover - decoded values are JSON data
                return self._stop()
            out.append(self.prefix[:-1] + text)  # (the prefix ends with the quote a string opens)
            self.prefix = ""
            self.state = _BETWEEN
            return s[m.end("tag") :]
        self.seen = len(s)
        return self._hold(s, _HOLD_VALUE)


def _string(kinds: frozenset[str] | None, hint: str | None) -> bool | None:
    """Whether a raw value is certainly its text, a string (coerce._scalar): True, False
    (it may be read as something else), None (no schema and no written type: untyped,
    a string unless it is JSON)."""
    if kinds is None:
        return None if hint is None else hint == "string"
    if hint == "string":
        return "string" in kinds
    return kinds == {"string"} and hint != "json"


def _run(s: str, i: int, j: int) -> int:
    """Where the whitespace that ends s[i:j] starts: held back (a newline of it may be
    framing; all of it, if the value's close tag was left out)."""
    return i + len(s[i:j].rstrip(_WS))


def _framed(value: str, framing: str) -> str:
    """coerce.frame's end of a value: with "newline", one newline before the close tag is framing."""
    if framing != "newline":
        return value
    return value[:-2] if value.endswith("\r\n") else value.removesuffix("\n")
