"""PyEcho: a Python-style call's keyword arguments, written as json.dumps writes the
arguments, as they stream in.

StreamParser(announce="name") announces a call of a list of Python-style calls
(`stream_python:`; pythonic, Llama 4, LFM2) once its name and `(` show, and streams its
arguments with this echo: fed the text from the call's `(` on, it gives back the JSON text
json.dumps(call.arguments, ensure_ascii=False) starts with, as far as it is certain:

    (path="notes.md", content="Day one: we walked…
    {"path": "notes.md", "content": "Day one: we walked…

A quoted value's characters go out as they come (the escapes Python and the builder read
alike: _SIMPLE); its closing quote once what follows it shows that the string Python reads
is the value (_repair._STANDS: `)`, or `,` and the next keyword; a quote a letter follows
in a 'single-quoted' value is an apostrophe, its text). Any other value (a number, None, a
list, a bare word, a prefixed or empty string) goes out whole once the `,` or `)` after it
shows (brackets counted, quotes respected, as the grammar's scalar_end), decoded as the
builder decodes it (coerce_param, "python"). A parameter's key goes out with its value.

Anything else stops the echo for good (`stopped`): a positional argument, a key written
twice or the schema says is an array (its values may collect into a list), a triple
quote, an escape not in _SIMPLE, a line break in a quoted value, a quote followed by what
does not end the value (quotes inside it: the builder reads its inside), a value longer
than _HOLD_VALUE characters held. The rest comes with the call's end, where the caller
checks that the final text starts with what was sent. The `}` comes with the end too.
Work is in proportion to the text fed: what is held is bounded.
"""

from __future__ import annotations

import functools
import json
import re

import regex
from collections.abc import Mapping
from typing import Any

from .._build.coerce import coerce_param, repeated_item
from .._recover import repair as _repair

__all__ = ["PyEcho"]

# Escapes that Python and the builder's reader (_repair._SIMPLE_ESCAPES) read alike; any
# other (\x41, \u00e9, \N{…}, an octal, a line continuation, an unknown one) stops the echo.
_SIMPLE = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}
_PLAIN = re.compile(r"[^\"'\\\n\r]+")  # a quoted value's plain run (either quote stops it)
_KEY_START = re.compile(r"[A-Za-z_]")  # (the grammar's KEY)
_KEY_CHAR = re.compile(r"\w")
_LETTER = re.compile(r"[^\W_]")  # after a quote in a 'single-quoted' value: an apostrophe
_SPACE = " \t\r\n"
_HOLD = 200  # what follows a closing quote, held until it tells, at most
_HOLD_VALUE = 4096  # a value sent whole, held until its end, at most
_KEY_MAX = 128

# What the reader is in.
_OPEN, _BETWEEN, _KEY, _BEFORE_EQ, _EQ, _VALUE = "open", "between", "key", "before_eq", "eq", "value"
_QUOTED, _EMPTY, _AFTER_QUOTE, _RAW, _NEXT = "quoted", "empty", "after_quote", "raw", "next"
_AFTER_OTHER = "after_other"  # (after the first quote of the other kind in a quoted value)
# After that quote: the list's `]` or a marker's `<`, blanks before it (_after_other).
_BRACKET_AFTER = regex.compile(r"[ \t]*[\]<]")


@functools.lru_cache(maxsize=64)
def _derived(markers: tuple) -> tuple:
    """What a PyEcho works out of its markers (kept per markers tuple: a stream makes one
    per call, with the same markers): the markers, the first characters that may begin
    one, the longest's length, and the pattern of a quoted value's plain text."""
    kept = tuple(m for m in markers if m)
    firsts = "".join(sorted({m[0] for m in kept} - {'"', "'", "\\", "\n", "\r"}))
    plain = re.compile("[^\"'\\\\\n\r" + re.escape(firsts) + "]+") if firsts else _PLAIN
    return kept, frozenset(firsts), max(map(len, kept), default=0), plain


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


class PyEcho:
    def __init__(self, schema: Any = None, markers: tuple[str, ...] = ()) -> None:
        # The region's markers (LFM2's `<|tool_call_end|>`…): one inside a quoted value may
        # end the string there (a string left open before the end marker: the builder
        # closes it, closed_json). A quoted value's text that may begin one is held until
        # it shows whether it does; one that does stops the echo (the rest comes with the
        # call's end), never sent as the value's text (QA19 R14).
        self.markers, self.firsts, self.longest, self.plain = _derived(tuple(markers))
        self.mheld = ""  # a quoted value's text that may begin a marker
        self.stopped = False
        self.done = False  # the call's `)` came
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        self.props = props if isinstance(props, Mapping) else {}
        self.schema = schema
        self.state = _OPEN
        self.key = ""
        self.keys: set[str] = set()
        self.quote = ""  # the quote of the value being read
        self.opened = False  # its key and opening `"` sent
        self.escape = False
        self.first = True  # no quoted character read yet (`""`, `'''`: held)
        self.other_seen = False  # a quote of the other kind read as the value's text
        self.prev = ""  # the last character of the quoted value read (as written)
        self.held = ""  # after a closing quote (_AFTER_QUOTE), a value's text (_RAW)
        self.depth = 0  # _RAW: brackets open
        self.inner = ""  # _RAW: the quote of a string inside the value
        self.run = ""  # _RAW: the last two characters read

    def feed(self, text: str) -> str:
        """Take more of the call's text; return what json.dumps would write of its
        arguments, now certain ("" when nothing is, or once stopped or done)."""
        if self.stopped or self.done:
            return ""
        out: list[str] = []
        if self.mheld:
            text, self.mheld = self.mheld + text, ""
        try:
            self._read(text, out)
        except _Stop:
            self.stopped = True
        return "".join(out)

    def _read(self, text: str, out: list[str]) -> None:
        i, n = 0, len(text)
        while i < n and not self.done:
            state = self.state
            if state == _QUOTED:
                i = self._quoted(text, i, out)
            elif state == _AFTER_QUOTE:
                i = self._after_quote(text, i, out)
            elif state == _AFTER_OTHER:
                i = self._after_other(text, i, out)
            elif state == _RAW:
                i = self._raw(text, i, out)
            elif state == _EMPTY:  # (`""`: an empty string, or a triple quote)
                if text[i] == self.quote:
                    raise _Stop
                self.state, self.held = _AFTER_QUOTE, ""
            else:
                self._step(text[i], out)
                i += 1

    def _step(self, ch: str, out: list[str]) -> None:
        """One character outside a value."""
        state = self.state
        if state == _KEY:
            if _KEY_CHAR.match(ch) and len(self.key) < _KEY_MAX:
                self.key += ch
                return
            self._key_read()
            state = self.state = _BEFORE_EQ
        if state == _OPEN:
            if ch != "(":
                raise _Stop
            out.append("{")
            self.state = _BETWEEN
        elif state == _EQ:
            if ch == "=":
                raise _Stop  # (`==`: the grammar reads a keyword only before a lone `=`)
            self.state = _VALUE
            if ch not in _SPACE:
                self._value_start(ch)
        elif ch in _SPACE:
            return
        elif state == _BETWEEN:
            if ch == ")":
                self.done = True
            elif _KEY_START.match(ch):
                self.key, self.state = ch, _KEY
            else:
                raise _Stop  # (a positional argument, `**kw`, an escaped `\_`: left to the end)
        elif state == _BEFORE_EQ:
            if ch != "=":
                raise _Stop
            self.state = _EQ
        elif state == _VALUE:
            self._value_start(ch)
        else:  # _NEXT: after a value
            if ch == ",":
                self.state = _BETWEEN
            elif ch == ")":
                self.done = True
            else:
                raise _Stop

    def _key_read(self) -> None:
        key = self.key
        if key in self.keys:
            raise _Stop  # (written twice: the builder may refuse it or collect the values)
        prop = self.props.get(key)
        if prop is not None and repeated_item(prop, self.schema, "error")[0]:
            raise _Stop  # (an array: a second one would collect into it)
        self.keys.add(key)

    def _value_start(self, ch: str) -> None:
        if ch == '"' or ch == "'":
            self.quote, self.opened, self.first, self.escape = ch, False, True, False
            self.other_seen, self.prev = False, ""
            self.state = _QUOTED
            return
        if ch in ",)":
            raise _Stop  # (`a=,`: no value)
        self.held, self.depth, self.inner, self.escape, self.run = ch, 0, "", False, ch
        self.state = _RAW
        if ch in "([{":
            self.depth = 1

    def _open(self, out: list[str]) -> None:
        """A quoted value's key and opening quote, once it is a string."""
        if not self.opened:
            out.append(", " if len(self.keys) > 1 else "")
            out.append(json.dumps(self.key, ensure_ascii=False) + ': "')
            self.opened = True

    def _quoted(self, text: str, i: int, out: list[str]) -> int:
        """Read on inside a quoted value; return where reading stopped."""
        quote, n = self.quote, len(text)
        plain, firsts = self.plain, self.firsts
        while i < n:
            if self.first:
                if text[i] == quote:
                    self.state = _EMPTY  # (then a third quote: triple-quoted, not followed)
                    return i + 1
                self.first = False
                self._open(out)
            if self.escape:
                got = _SIMPLE.get(text[i])
                if got is None:
                    raise _Stop
                out.append(_quoted(got))
                self.escape = False
                self.prev = text[i]
                i += 1
                continue
            m = plain.match(text, i)
            if m is not None:
                out.append(_quoted(m.group()))
                i = m.end()
                self.prev = text[i - 1]
                continue
            ch = text[i]
            if ch in firsts:
                window = text[i : i + self.longest]
                if any(window.startswith(m) for m in self.markers):
                    raise _Stop  # (a marker: the builder decides where the string ends)
                if i + len(window) == n and any(m.startswith(window) for m in self.markers):
                    self.mheld = window  # (fed again with the next text)
                    return n
                out.append(_quoted(ch))
                self.prev = ch
                i += 1
            elif ch == "\\":
                self.escape = True
                i += 1
            elif ch == quote:
                self.state, self.held = _AFTER_QUOTE, ""
                return i + 1
            elif ch == "'" or ch == '"':
                if self.other_seen:
                    out.append(_quoted(ch))  # (the value's text: only the first may close it)
                    self.prev = ch
                    i += 1
                    continue
                self.state, self.held = _AFTER_OTHER, ""
                return i + 1
            else:
                raise _Stop  # (a line break: Python's string would not hold it)
        return i

    def _after_quote(self, text: str, i: int, out: list[str]) -> int:
        """After a quote that may close the value: the value ends there once what follows
        says so (_repair._STANDS); a letter right after a single quote makes it an
        apostrophe (the value's text, as Python-style readers take 'It's')."""
        if not self.held and self.quote == "'" and self.opened and _LETTER.match(text, i):
            out.append("'")
            self.state = _QUOTED
            return i
        held = self.held + text[i:]
        m = _repair._STANDS.match(held, 0, partial=True)
        if m is None:
            raise _Stop  # (quotes inside the value, or text after it: the builder decides)
        if m.partial or m.end() >= len(held):
            if len(held) > _HOLD:
                raise _Stop
            self.held = held
            return len(text)
        self._open(out)  # (an empty string: its key and quote now)
        out.append('"')
        before, self.state, self.held = self.held, _NEXT, ""
        # (What followed the quote: blanks, `)` or `,` and the next key. What was held of
        # it holds no quote, so this reads no value.)
        self._read(before, out)
        return i

    def _after_other(self, text: str, i: int, out: list[str]) -> int:
        """After the first quote of the other kind in a quoted value (`'Paris"`): where
        what follows ends the value and its call (_repair._SLIP_CLOSE), the builder reads
        that quote as the string's close (repair mismatched_quote), and the echo stops;
        where it cannot, the quote is the value's text (an apostrophe, `"It's`, is not
        the first such quote: the next one may still close it)."""
        held = self.held + text[i:]
        m = _repair._SLIP_CLOSE.match(held, 0, partial=True)
        if m is None:
            # (Or the list's `]`, or a marker, the call's `)` left out: `'x"]<|tool_call_end|>`,
            # which the builder may read as the string's close too, closed_bracket. QA19 R14:
            # sent as the value's text, it was withdrawn with the call when the end came.)
            m = _BRACKET_AFTER.match(held, 0, partial=True)
        if m is not None:
            if m.partial or m.end() >= len(held):
                if len(held) > _HOLD:
                    raise _Stop
                self.held = held
                return len(text)
            raise _Stop  # (the value ends with it: the builder decides)
        other = "'" if self.quote == '"' else '"'
        if not (other == "'" and self.prev.isalnum() and held[:1].isalnum()):
            self.other_seen = True
        out.append(_quoted(other))
        self.prev = other
        before, self.state, self.held = self.held, _QUOTED, ""
        # (What followed the quote, held: read again as the value's text.)
        self._read(before, out)
        return i

    def _raw(self, text: str, i: int, out: list[str]) -> int:
        """Read on inside a value sent whole: to the `,` or `)` after it, at bracket depth 0
        outside strings (scalar_end)."""
        depth, inner, escape, run = self.depth, self.inner, self.escape, self.run
        start, n = i, len(text)
        while i < n:
            ch = text[i]
            last, run = run, (run + ch)[-2:]  # (the last two characters)
            if inner:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == inner:
                    inner = ""
            elif ch == '"' or ch == "'":
                if last == ch * 2:
                    raise _Stop  # (a triple quote, or so it may be: not followed)
                inner = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}" and depth:
                depth -= 1
            elif depth == 0 and (ch == "," or ch == ")"):
                self._sent_whole(self.held + text[start:i], out)
                self.state = _NEXT
                return i
            i += 1
        self.depth, self.inner, self.escape, self.run = depth, inner, escape, run
        self.held += text[start:]
        if len(self.held) > _HOLD_VALUE:
            raise _Stop
        return n

    def _sent_whole(self, raw: str, out: list[str]) -> None:
        try:
            value, _ = coerce_param(raw.strip(), "python", None)
            written = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (_repair.RepairError, ValueError, TypeError, RecursionError):
            raise _Stop from None
        out.append(", " if len(self.keys) > 1 else "")
        out.append(json.dumps(self.key, ensure_ascii=False) + ": " + written)


class _Stop(Exception):
    """What is read next may not be written as json.dumps writes it."""
