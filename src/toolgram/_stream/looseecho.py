"""LooseEcho: a Gemma-style call's loose arguments, written as json.dumps writes the
arguments, as they stream in.

StreamParser(announce="name") announces a call of a format whose header declares its
opener (`stream_loose: call:{name}`; Gemma 4, FunctionGemma) once its name and the
arguments' `{` show, and streams them with this echo: fed the text from that `{` on, it
gives back the JSON text json.dumps(call.arguments, ensure_ascii=False) starts with, as
far as it is certain:

    {path:<|"|>notes.md<|"|>,content:<|"|>Day one: we walked…
    {"path": "notes.md", "content": "Day one: we walked…

A delimited string (`<|"|>…<|"|>`, `<escape>…<escape>`) is its text as written, no
escapes (_build/loose.py): where the tool's schema allows a string (or there is none),
its characters go out as they come. Held back meanwhile: a `<` until it shows it is no
delimiter and no marker of these formats, and a line break until it shows no `call:` line
begins (either stops the echo: a string left open may end there), and the run of blanks and closers at the end (a string never closed ends at the
object's `}`, blanks stripped: loose.brace_closes). The string's close is the first of
its delimiters that a value's end follows (a `}`, or a `,` and the next `key:`, as
loose._may_follow tells); one that anything else follows stops the echo (the reader
takes it as text, or cannot read the call). Any other value (a number, a word, an
object, a list, a delimited string the schema types otherwise) goes out whole once its
end shows, typed as the builder types it (decode_loose, then coerce_param on the object
of that one member). A key goes out with its value.

Anything else stops the echo for good (`stopped`): a key not plainly written, a key given
twice or that the schema says is an array, a value held past _HOLD_VALUE characters. The
rest comes with the call's end, where the caller checks that the final text starts with
what was sent (else the call is withdrawn). The arguments' `}` comes with the end too.
Work is in proportion to the text fed: what is held back is bounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import regex

from .._build.coerce import Node, coerce_param, kinds_of, repeated_item
from .._build.loose import DELIMITERS, _NEXT_KEY, decode_loose
from .._recover.repair import RepairError
from .stepecho import HOLD, StepEcho

__all__ = ["LooseEcho"]

_KEY = regex.compile(r"[ \t\r\n]*([A-Za-z_][A-Za-z0-9_\-]{0,127})[ \t]*:")
_BLANKS = regex.compile(r"[ \t\r\n]*")
_HOLD = HOLD  # a key, what follows a string's close, at most; past it, stop
_HOLD_VALUE = 4096  # a value sent whole, held until its end, at most
_OPEN, _KEY_, _START, _STRING, _AFTER, _WHOLE = "open", "key", "start", "string", "after", "whole"
_TAIL = " \t\r\n\x0b\x0c}]"
_STOP = regex.compile(r"[<\n]")  # (what may end a string's text: a delimiter, a marker, a line's call)
_LINE_CALL = regex.compile(r"\n\s*call:")  # (held at a string's end: what a string never closed may lose)


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


class LooseEcho(StepEcho):
    def __init__(self, name: str, schema: Any, tags: Any) -> None:
        self.name = name
        self.schema = schema
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        self.props = props if isinstance(props, Mapping) else None
        self.fmt = tags.fmt
        self.markers = tuple(m for m in tags.markers if m.startswith("<")) + DELIMITERS
        self.stopped = False
        self.done = False  # (never: the call's end comes with its CallDone)
        self.state = _OPEN
        self.held = ""
        self.keys: list[str] = []
        self.prefix = ""  # what goes before the value: `{"key": `, `, "key": `
        self.delim = ""  # the delimiter the string being written opened with
        self.raw_key = ""  # the key as written (for a value sent whole)

    def _open(self, s: str, out: list[str]) -> str | None:
        if not s:
            return self._hold(s)
        if s[0] != "{":
            return self._stop()
        self.state = _KEY_
        return s[1:]

    def _key(self, s: str, out: list[str]) -> str | None:
        m = _KEY.match(s, partial=True)
        if m is None:
            return self._stop()  # (`}` of no arguments, a quoted or delimited key, …: with the end)
        if m.partial:
            return self._hold(s)
        key = m.group(1)
        prop = self.props.get(key) if self.props is not None else None
        if key in self.keys or repeated_item(prop, self.schema, self.fmt.repeated)[0]:
            return self._stop()  # (given twice it is an error, or its values collect into a list)
        self.prefix = ("{" if not self.keys else ", ") + json.dumps(key, ensure_ascii=False) + ": "
        self.keys.append(key)
        self.raw_key = key
        self.state = _START
        return s[m.end() :]

    def _start(self, s: str, out: list[str]) -> str | None:
        at = _BLANKS.match(s).end()
        if at == len(s):
            return self._hold(s)
        for d in DELIMITERS:
            if s.startswith(d, at):
                key = self.keys[-1]
                prop = self.props.get(key) if self.props is not None else None
                kinds = kinds_of(prop, self.schema)
                if kinds is None or "string" in kinds:
                    self.prefix += '"'
                    self.delim = d
                    self.state = _STRING
                    return s[at + len(d) :]
                break
            if d.startswith(s[at:]):
                return self._hold(s)  # (a delimiter begun)
        self.state = _WHOLE
        return s

    def _send(self, out: list[str], text: str, close: bool = False) -> None:
        if text or close:
            out.append(self.prefix + _quoted(text) + ('"' if close else ""))
            self.prefix = ""

    def _string(self, s: str, out: list[str]) -> str | None:
        at = 0
        while True:
            j = _STOP.search(s, at)
            if j is None:
                k = len(s.rstrip(_TAIL))
                self._send(out, s[:k])
                return self._hold(s[k:])
            j = j.start()
            if s[j] == "\n":
                # (a line that starts another call, `call:`, ends the bare body's arguments)
                m = _LINE_CALL.match(s, j, partial=True)
                if m is None:
                    at = j + 1
                    continue
                k = len(s[:j].rstrip(_TAIL))
                self._send(out, s[:k])
                return self._hold(s[k:]) if m.partial else self._stop()
            rest = s[j:]
            if rest.startswith(self.delim):
                self._send(out, s[:j])  # (the text up to a delimiter is the string's, whatever it is)
                self.state = _AFTER
                return s[j + len(self.delim) :]
            if any(m.startswith(rest) for m in self.markers if len(m) > len(rest)):
                k = len(s[:j].rstrip(_TAIL))
                self._send(out, s[:k])
                return self._hold(s[k:])  # (a delimiter or a marker begun: the next text tells)
            if any(rest.startswith(m) for m in self.markers):
                k = len(s[:j].rstrip(_TAIL))
                self._send(out, s[:k])
                return self._stop()  # (a marker, or the other delimiter: the call's end tells)
            at = j + 1

    def _after(self, s: str, out: list[str]) -> str | None:
        """After a delimiter that may close the string: closed where a `}` or a `,` and the
        next key follows (loose._may_follow); stopped where anything else does."""
        at = _BLANKS.match(s).end()
        if at == len(s):
            return self._hold(s)
        ch = s[at]
        if ch == "}":
            self._send(out, "", close=True)
            return self._stop()  # (the arguments closed: the `}` comes with the call's end)
        if ch != ",":
            return self._stop()
        if s.find(":", at + 1) < 0:
            return self._hold(s)  # (the next key is being written, or a `}` after a comma comes)
        if _NEXT_KEY.match(s, at + 1) is None:
            return self._stop()
        self._send(out, "", close=True)
        self.state = _KEY_
        return s[at + 1 :]

    def _whole(self, s: str, out: list[str]) -> str | None:
        """A value other than a string as it comes: held to its end (a `}` closing the
        arguments, or a `,` and the next key, outside brackets and delimited strings),
        then sent as the builder types it."""
        depth = 0
        i, n = 0, len(s)
        while i < n:
            ch = s[i]
            if ch == "<":
                d = next((d for d in DELIMITERS if s.startswith(d, i)), None)
                if d is None:
                    if any(m.startswith(s[i:]) for m in self.markers if len(m) > n - i):
                        return self._hold(s, _HOLD_VALUE)
                    return self._stop()  # (markup, or a `<` in a bare value: the end tells)
                close = s.find(d, i + len(d))
                if close < 0:
                    return self._hold(s, _HOLD_VALUE)
                i = close + len(d)
                continue
            if ch in "{[":
                depth += 1
            elif ch in "}]":
                if depth == 0:
                    if ch == "]":
                        return self._stop()
                    return self._emit(s[:i], out, s[i:])
                depth -= 1
            elif ch == "," and depth == 0:
                nxt = s.find(":", i + 1)
                if nxt < 0:
                    return self._hold(s, _HOLD_VALUE)
                if _NEXT_KEY.match(s, i + 1) is not None:
                    return self._emit(s[:i], out, s[i:])
            i += 1
        return self._hold(s, _HOLD_VALUE)

    def _emit(self, raw: str, out: list[str], rest: str) -> str | None:
        key = self.keys[-1]
        try:
            root, repairs, tail = decode_loose("{" + key + ":" + raw + "}")
            if repairs or tail.strip() or len(root.children) != 1:
                return self._stop()  # (read with a repair: the whole call tells)
            value, _ = coerce_param(Node(type="object", children=root.children), None, self.schema, self.schema, self.fmt.framing, self.fmt.repeated)
            text = json.dumps(value[key], ensure_ascii=False, allow_nan=False)
        except (RepairError, RecursionError, ValueError, TypeError, KeyError):
            return self._stop()
        out.append(self.prefix + text)
        self.prefix = ""
        if rest[0] == "}":
            return self._stop()  # (the arguments closed: the `}` comes with the call's end)
        self.state = _KEY_
        return rest[1:]
