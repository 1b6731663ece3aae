"""XmlParamEcho: Qwen3-Coder's XML parameters, written as json.dumps writes the arguments,
as they stream in.

StreamParser(announce="name") announces a call `<function=NAME>` that qwen3_coder_xml
reads once its name is complete, and streams its arguments with this echo: fed the text
after `<function=NAME>`, it gives back the JSON text json.dumps(call.arguments,
ensure_ascii=False) starts with, as far as it is certain:

    <parameter=path>\\nnotes.md\\n</parameter>\\n<parameter=content>\\nDay one…
    {"path": "notes.md", "content": "Day one…

A parameter's value is raw text, typed by the tool's schema, one newline on each side
being framing (coerce.frame). Its characters go out as they come when it is certain to
be a string: the schema says string and nothing else, or there is no schema and the text
can no longer be a JSON number, true, false, null, object or array (what an untyped value
decodes to, coerce._scalar). Held back meanwhile: the whitespace at the end (a newline of it
may be framing, all of it if the close tag was left out) and a `<` until it shows what
it is; a parameter's key goes out with its value's first character (a parameter the end
cuts before its value is dropped). A value ends at `</parameter>` followed by the next
`<parameter=`. Anything else stops the echo for good (`stopped`): a `<` that may start
another tag of the format (or of the pairs it nests), `</parameter></function>` (text,
when the line goes on: a close-tag run written inline; the call's end otherwise, which
brings the last `"}` anyway), a parameter that is not a string, a key seen twice, a
value that starts on its tag's line with a space, a JSON object in place of parameters.
The rest then comes with the call's end, where the caller checks that the final text
starts with what was sent (else the call is withdrawn and sent again whole). Work is in proportion to the text fed: what is held back is at
most _HOLD characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import regex

from .._build.coerce import kinds_of
from .._grammar.words import lazy

__all__ = ["XmlParamEcho"]

# What str.strip() strips (coerce._strict strips a value so before json.loads; an
# unclosed value is rstrip()ped): the characters str.isspace() is true of, written
# out (working them out walks all of Unicode: a tenth of a second at import;
# tests/test_stream_announce.py checks the list against str.isspace).
_WS = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_W = "[" + regex.escape(_WS) + "]"
# A parameter's open tag, as a model writes one, after the call's name or a closed value.
_PARAM = lazy(regex.compile, r"[ \t\r\n]*<parameter=([A-Za-z0-9_][A-Za-z0-9_.\-]{0,127})>")
# A value's close tag where it certainly closes it (grammars/shared/function_param.lark,
# VALUE): before the next parameter. (Before `</function>` it may yet be the value's
# text, when text follows on the line: a close-tag run written inline.)
_CLOSE = lazy(regex.compile, r"</parameter>[ \t\r\n]{0,32}(?:<parameter=|(</function>))")
# An untyped value that json.loads would make something else than a string.
_JSONISH = lazy(
    regex.compile,
    _W + r"*(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|[\[{][\s\S]*)" + _W + "*",
)
_TAG = frozenset("/pfts")  # what may follow "<" in a tag of the format: </…, <parameter, <function, <tool_call, <seed:…
_HOLD = 200  # characters held back at most (a tag's lookahead, an undecided value); past it, stop
_BETWEEN, _VALUE = "between", "value"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


class XmlParamEcho:
    def __init__(self, schema: Any = None) -> None:
        self.stopped = False
        self.done = False  # (never: the call's end comes with its CallDone)
        self.state = _BETWEEN
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        self.props = props if isinstance(props, Mapping) else None
        self.schema = schema
        self.keys: list[str] = []
        self.held = ""  # the text taken, not yet answered for
        self.prefix = ""  # what goes before the value's first character: `{"key": "`, `, "key": "`
        self.lead = True  # a value's leading framing newline not yet passed
        self.typed = False  # the value is certain to be a string

    def feed(self, text: str) -> str:
        """Take more of the call's text; return what json.dumps would write of its
        arguments, now certain ("" when nothing is, or once stopped)."""
        if self.stopped:
            return ""
        out: list[str] = []
        s: str | None = self.held + text
        while s is not None and not self.stopped:
            s = self._between(s) if self.state is _BETWEEN else self._value(s, out)
        if self.stopped:
            self.held = ""
        return "".join(out)

    def _stop(self) -> None:
        self.stopped = True

    def _hold(self, rest: str) -> None:
        self.held = rest
        if len(rest) > _HOLD:
            self.stopped = True

    def _send(self, out: list[str], text: str, close: bool = False) -> None:
        """A value's characters (its prefix first, once it has some), and its close quote."""
        if text or close:
            out.append(self.prefix + _quoted(text) + ('"' if close else ""))
            self.prefix = ""

    def _between(self, s: str) -> str | None:
        m = _PARAM.match(s, partial=True)
        if m is None:
            # (`</function>` with no parameter, a JSON object instead, anything else: the
            # rest comes with the call's end)
            return self._stop()
        if m.partial:
            return self._hold(s)
        key = m.group(1)
        if key in self.keys:
            return self._stop()  # (the last value would win, at the first key's place)
        prop = self.props.get(key) if self.props is not None else None
        kinds = kinds_of(prop, self.schema)
        if kinds is not None and kinds != {"string"}:
            return self._stop()
        # (The key goes out with the value's first character: a parameter the end cuts
        # before its value begins is dropped, repair dropped_partial_argument.)
        self.prefix = ("{" if not self.keys else ", ") + json.dumps(key, ensure_ascii=False) + ': "'
        self.keys.append(key)
        self.state, self.lead, self.typed = _VALUE, True, kinds is not None
        return s[m.end() :]

    def _value(self, s: str, out: list[str]) -> str | None:
        if self.lead:  # (coerce.frame: one newline after the open tag is framing)
            if not s or s == "\r":
                return self._hold(s)
            if s.startswith("\r\n") or s[0] == "\n":
                s = s[2:] if s[0] == "\r" else s[1:]
            elif s[0] in " \t":
                # On the tag's line: spaces kept if the value is closed, dropped if its
                # close tag was left out (layout, _param_value); only its end tells.
                return self._stop()
            self.lead = False
        if not self.typed:
            return self._untyped(s, out)
        i = at = 0  # s[:i] is sent; a tag may start from s[at:] on
        while True:
            j = s.find("<", at)
            if j < 0:
                k = _run(s, i, len(s))
                self._send(out, s[i:k])
                return self._hold(s[k:])
            after = s[j + 1 : j + 2]
            if after and after not in _TAG:  # (text: no tag starts so)
                at = j + 1
                continue
            m = _CLOSE.match(s, j, partial=True) if after else None
            if after and m is None:
                self._send(out, s[i : _run(s, i, j)])
                return self._stop()  # (another tag: the rest comes with the call's end)
            if not after or m.partial or m.group(1):
                k = _run(s, i, j)
                self._send(out, s[i:k])
                # (before </function>: the close may yet be text, if text follows it on its line)
                return self._stop() if m is not None and not m.partial else self._hold(s[k:])
            self._send(out, _framed(s[i:j]), close=True)
            self.state = _BETWEEN
            return s[j + len("</parameter>") :]

    def _untyped(self, s: str, out: list[str]) -> str | None:
        """A value no schema types: held until it cannot be JSON other than a string."""
        j = s.find("<")
        end = len(s) if j < 0 else j
        if j >= 0 and s[j + 1 : j + 2] and s[j + 1] not in _TAG:
            end = j + 1  # (a "<" that is text: part of what may or may not be JSON)
        if _JSONISH.fullmatch(s, 0, end, partial=True) is None:
            self.typed = True
            return s
        if j < 0:
            return self._hold(s)
        if end > j:
            return self._stop()  # (JSON with a "<" in it: comes with the call's end)
        m = _CLOSE.match(s, j, partial=True) if s[j + 1 : j + 2] else None
        if m is None and s[j + 1 : j + 2]:
            return self._stop()
        if m is None or m.partial:
            return self._hold(s)
        if m.group(1) or _JSONISH.fullmatch(_framed(s[:j])) is not None:
            return self._stop()  # (a number, a literal or JSON; or a close that may be text)
        self._send(out, _framed(s[:j]), close=True)
        self.state = _BETWEEN
        return s[j + len("</parameter>") :]


def _run(s: str, i: int, j: int) -> int:
    """Where the whitespace that ends s[i:j] starts: held back (a newline of it may be
    framing; all of it, if the value's close tag was left out)."""
    return i + len(s[i:j].rstrip(_WS))


def _framed(value: str) -> str:
    """coerce.frame's end of a value: one newline before the close tag is framing."""
    return value[:-2] if value.endswith("\r\n") else value.removesuffix("\n")
