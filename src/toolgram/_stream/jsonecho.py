"""JsonEcho: a JSON object, written again as json.dumps writes it, as its text streams in.

StreamParser(announce="name") streams a call's arguments with it: the ArgumentsDelta
texts of a call must add up to json.dumps(call.arguments, ensure_ascii=False), and the
model's own text rarely is that (other spacing, escapes, `1.50` for 1.5). JsonEcho
reads the object a piece at a time and gives back the text json.dumps would write for
what is certain so far: a string's characters as they come, a number or literal once
it is complete, a separator only once what follows it has begun (a trailing comma
then never shows).

Anything it cannot be sure json.dumps would write the same way stops it for good
(`stopped`): single quotes, Python literals, comments, a key seen twice in one object
(JSON keeps the last value, at the first key's place). The caller then sends the rest
with the call's end, and checks there that the final text starts with what was sent.
"""

from __future__ import annotations

import json
import re

import regex

from .._recover import repair as _repair
from .._grammar.words import lazy

__all__ = ["JsonEcho"]

_PLAIN = lazy(re.compile, r'[^"\\\x00-\x1f]+')  # string characters json.dumps writes as they are
_SPACE = " \t\r\n"
# What may follow a single quote that closed a "string" value in its place (the lenient
# reader's _JSON_SLIP: `, "unit":`, a closer), matched as the text arrives.
_SLIP = lazy(regex.compile, _repair._JSON_SLIP.pattern)
# The string's own close after such a quote (its text up to the next `"` not escaped), and
# what follows a string value that stands (the reader's _JSON_STANDS, the end of the text
# aside: more may come): then the quote was the string's text.
_OWN_CLOSE = lazy(re.compile, r'(?:[^"\\]|\\.)*"', re.S)
_STANDS = lazy(regex.compile, r"\s*(?:[,}\]]|" + _repair._JSON_KEY + ")")
_HOLD = 200  # what follows such a quote, held until it tells, at most
_NUMBER = frozenset("+-0123456789.eE")
_LITERALS = {"true": "true", "false": "false", "null": "null"}
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}

# What the reader waits for next.
_VALUE, _KEY, _COLON, _AFTER = "value", "key", "colon", "after"


def _quoted(text: str) -> str:
    """The inside of json.dumps(text, ensure_ascii=False)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class JsonEcho:
    def __init__(self, markers: tuple[str, ...] = ()) -> None:
        # The format's markers (Kimi K2's `<|tool_call_end|>`…): one inside a string value
        # ends the region there, and the string is closed before it (closed_json). A
        # string's text that may begin one is held until it shows whether it does; one
        # that does stops the echo (the rest comes with the call's end).
        self.markers = markers
        self.firsts = "".join(sorted({m[0] for m in markers if m} - {'"', "\\"}))
        self.longest = max(map(len, markers), default=0)
        self.held = ""  # a string value's text that may begin a marker
        self.stopped = False
        self.done = False  # the object closed
        self.rest = ""  # the text fed after its close, once it closed
        self.state = _VALUE
        self.stack: list[list] = []  # per open container: [bracket, items so far, keys seen]
        self.scalar = ""  # a number or literal not complete yet
        self.escape = ""  # an escape in a string, not complete yet
        self.in_string = ""  # "key" or "value" while inside a string
        self.key_chars: list[str] = []
        self.key = ""  # a key read, written once its value begins

    def feed(self, text: str) -> str:
        """Take more of the object's text; return what json.dumps would write of it, now
        certain ("" when nothing is, or once stopped or done)."""
        if self.stopped or self.done:
            return ""
        if self.held:
            text, self.held = self.held + text, ""  # (read again: see _marker)
        out: list[str] = []
        try:
            self._read(text, out)
        except _Stop:
            self.stopped = True
        return "".join(out)

    # -- reading --------------------------------------------------------------------
    def _read(self, text: str, out: list[str]) -> None:
        i, n = 0, len(text)
        while i < n and not self.done:
            if self.in_string:
                i = self._string(text, i, out)
                continue
            ch = text[i]
            if self.scalar:  # a number or literal goes on, or ends here
                if ch in _NUMBER or ch.isalpha():
                    self.scalar += ch
                    i += 1
                    continue
                self._end_scalar(out)
                continue
            if ch in _SPACE:
                i += 1
                continue
            state = self.state
            if state == _VALUE:
                self._value_start(ch, out)
            elif state == _KEY:
                if ch == '"':
                    self.in_string, self.key_chars = "key", []
                elif ch == "}":
                    self._close(ch, out)  # (`{}`, or a trailing comma: nothing was sent for it)
                else:
                    raise _Stop
            elif state == _COLON:
                if ch != ":":
                    raise _Stop
                self.state = _VALUE
            else:  # _AFTER
                if ch == ",":
                    self.state = _KEY if self.stack[-1][0] == "{" else _VALUE
                elif ch in "}]":
                    self._close(ch, out)
                else:
                    raise _Stop
            i += 1
        if self.done:
            self.rest = text[i:]

    def _value_start(self, ch: str, out: list[str]) -> None:
        top = self.stack[-1] if self.stack else None
        if top is None:
            if ch != "{":
                raise _Stop  # (the arguments are an object)
        elif ch == "]" and top[0] == "[":
            self._close(ch, out)  # (`[]`, or a trailing comma)
            return
        if ch not in _STARTS:
            raise _Stop
        # What json.dumps writes before the value: the separator, and in an object its key.
        if top is not None:
            if top[1]:
                out.append(", ")
            top[1] += 1
            if top[0] == "{":
                out.append(self.key)
                out.append(": ")
        if ch in "{[":
            out.append(ch)
            self.stack.append([ch, 0, set()])
            self.state = _KEY if ch == "{" else _VALUE
        elif ch == '"':
            out.append('"')
            self.in_string = "value"
        else:
            self.scalar = ch

    def _end_scalar(self, out: list[str]) -> None:
        word, self.scalar = self.scalar, ""
        if word in _LITERALS:
            out.append(word)
        else:
            try:
                # (NaN, Infinity, 1e999: decoded as null, with a repair; not echoed)
                value = json.loads(word, parse_constant=_repair._no_constant, parse_float=_repair._finite_float)
            except ValueError:
                raise _Stop from None
            if type(value) not in (int, float):
                raise _Stop
            out.append(json.dumps(value))
        self.state = _AFTER

    def _close(self, ch: str, out: list[str]) -> None:
        if not self.stack or (self.stack[-1][0] == "{") != (ch == "}"):
            raise _Stop
        self.stack.pop()
        out.append(ch)
        self.state = _AFTER
        if not self.stack:
            self.done = True

    def _string(self, text: str, i: int, out: list[str]) -> int:
        """Read on inside a string; return where reading stopped."""
        value = self.in_string == "value"
        sink = out if value else self.key_chars
        n = len(text)
        plain = _plain_but(self.firsts + "'") if value else _PLAIN
        while i < n:
            if self.escape:  # an escape, complete or not
                self.escape += text[i]
                i += 1
                ch = self._escaped()
                if ch is not None:
                    sink.append(_quoted(ch) if value else ch)
                continue
            m = plain.match(text, i)
            if m is not None:
                sink.append(m.group())
                i = m.end()
                continue
            ch = text[i]
            if value and ch == "'":
                i = self._quote(text, i, out)
                continue
            if value and ch in self.firsts:
                i = self._marker(text, i, out)
                continue
            i += 1
            if ch == "\\":
                self.escape = ch
            elif ch == '"':
                self._end_string(out)
                return i
            else:  # a raw control character: json reads it (strict=False), json.dumps escapes it
                sink.append(_quoted(ch) if value else ch)
        return i

    def _marker(self, text: str, i: int, out: list[str]) -> int:
        """At a character that may begin one of the markers, in a string value: stop at a
        whole marker; hold the text from it while it may still begin one (fed again with
        the next text, see feed); else it is the string's text."""
        window = text[i : i + self.longest]
        if any(window.startswith(m) for m in self.markers):
            raise _Stop  # (the region ends here: the string is closed before it)
        if i + len(window) == len(text) and any(m.startswith(window) for m in self.markers):
            self.held = window
            return len(text)
        out.append(_quoted(text[i]))
        return i + 1

    def _quote(self, text: str, i: int, out: list[str]) -> int:
        """At a single quote in a string value: where what follows it may follow a value
        (`, "unit":`, a closer), the model may have closed the string with it (repair
        mismatched_quote: the reader decides), and the echo stops; the text from it is
        held while what follows cannot tell yet (fed again with the next text, see
        feed); else the quote is the string's text."""
        m = _SLIP.match(text, i + 1, partial=True)
        if m is None:
            out.append("'")
            return i + 1
        # The reader takes the quote as the close only where the string's own quote
        # does not close it so that it stands (`{"": "'}"}`): wait for that to tell. Once
        # it stands the quote is text, whatever may follow (`{"": "',"}` at the text's
        # end: the `"}` after `,` may yet begin a key, but the string stood before it).
        own = _OWN_CLOSE.match(text, i + 1)
        if own is not None:
            stands = _STANDS.match(text, own.end(), partial=True)
            if stands is not None and not stands.partial:
                out.append("'")
                return i + 1
            if stands is None and not m.partial:
                raise _Stop
        if len(text) - i > _HOLD:
            raise _Stop
        self.held = text[i:]
        return len(text)

    def _escaped(self) -> str | None:
        """The character the escape held stands for, once it is certain; None."""
        held = self.escape
        if len(held) < 2:
            return None
        if held[1] != "u":
            ch = _ESCAPES.get(held[1])
            if ch is None:
                raise _Stop
            self.escape = ""
            return ch
        if len(held) < 6:
            return None
        code = _hex(held[2:6])
        if 0xD800 <= code <= 0xDBFF:
            # A high surrogate: with the low one after it, one character (wait for it).
            if len(held) < 12:
                if not (held[6:8] == "\\u"[: len(held) - 6] or held[6:8] == "\\u"):
                    raise _Stop  # (a lone surrogate: left to the end)
                return None
            low = _hex(held[8:12]) if held[6:8] == "\\u" else -1
            if not 0xDC00 <= low <= 0xDFFF:
                raise _Stop
            self.escape = ""
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
        if 0xDC00 <= code <= 0xDFFF:
            raise _Stop
        self.escape = ""
        return chr(code)

    def _end_string(self, out: list[str]) -> None:
        kind, self.in_string = self.in_string, ""
        if kind == "value":
            out.append('"')
            self.state = _AFTER
            return
        # A key: written with its value (a key with none is dropped by the repairs).
        key = "".join(self.key_chars)
        seen = self.stack[-1][2]
        if key in seen:
            raise _Stop  # (json keeps the last value, at the first key's place)
        seen.add(key)
        self.key = json.dumps(key, ensure_ascii=False)
        self.state = _COLON


_STARTS = frozenset('{["-0123456789tfnIN')  # (Infinity, NaN: json reads and writes them)


_PLAINS: dict[str, re.Pattern[str]] = {}


def _plain_but(firsts: str) -> re.Pattern[str]:
    """_PLAIN less the characters that may begin a marker."""
    got = _PLAINS.get(firsts)
    if got is None:
        got = _PLAINS[firsts] = re.compile(r'[^"\\\x00-\x1f' + re.escape(firsts) + "]+")
    return got


def _hex(digits: str) -> int:
    if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise _Stop
    return int(digits, 16)


class _Stop(Exception):
    """What is read next may not be written as json.dumps writes it."""
