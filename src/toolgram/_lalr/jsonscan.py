"""The JSON decoder's own scan (json's scan_once), strict but for raw control
characters, refusing NaN and infinities, at the cost of what it reads (scan_json).
Bracket scans (_lalr/extent.py) try it first; the lenient pass (_recover/repair.py)
steps in where it fails."""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_left
from typing import Any


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError("not finite")  # (1e999: the lenient pass makes it null)
    return value


def _no_constant(word: str) -> Any:
    raise ValueError("not finite")  # NaN, Infinity: the lenient pass makes them null


# The C decoder counts each container it opens against the recursion limit it shares
# with Python's frames: whether a deep value is read or raises RecursionError would
# depend on where parse() was called from (issue 17: fuzz seed 7 #99647569, a cut value
# ~965 containers deep, read at one stack depth and refused at another). So no value
# that may nest deeper than DECODER_DEPTH reaches it: Deeper (a RecursionError) is
# raised for it here, before the decoder starts, at any stack depth, and every caller
# takes its RecursionError path (the lenient pass, or a refusal) for it. DECODER_DEPTH
# is what a call's deepest readable argument needs (VALUE_DEPTH, 256, with a call
# object, its arguments and a list around them: 259) and a little more, no more: the
# decoder's levels and parse()'s own frames (~30) must fit below the recursion limit
# (1000) with the caller's frames, up to 600 of them, the same reading wherever
# parse() is called from up to there (test_bounded.py::test_no_reading_depends_on_the_stack).
DECODER_DEPTH = 272


class Deeper(RecursionError):
    """The guard's refusal of a value that may nest deeper than DECODER_DEPTH (not the
    interpreter's own RecursionError: that one no text should reach)."""


_OPENER = re.compile(r"[\[{]")
_LONG = 8192
_openers: tuple = (None, None)  # (the last long text asked about, where its openers are)


def _openers_after(text: str, pos: int) -> int:
    """How many `[` and `{` text has from pos on. Counted in C; for a long text asked
    about again, from a list of where they are, made once for the last one (a payload's
    fields are each decoded where they start: counting to the end for each would take
    time in the product of the two)."""
    memo, places = _openers
    if len(text) - pos <= _LONG or memo is not text:
        if len(text) - pos > _LONG:
            globals()["_openers"] = (text, None)  # (the list is made if it is asked again)
        return text.count("[", pos) + text.count("{", pos)
    if places is None:
        places = [m.start() for m in _OPENER.finditer(text)]
        globals()["_openers"] = (text, places)
    return len(places) - bisect_left(places, pos)


# What the decoder reads of a value's nesting: a "string" (group 1 where it closes),
# a run of openers (2), a run of closers (3); anything else matched (a string that never
# closes, a quote or paren JSON has no place for) is where the decoder stops. (Its own
# pattern, not extent's brackets: those read 'single-quoted' strings, which JSON has
# not. A run is one match: 32 KB of `[[[…]]]` is two turns of the loops below, not
# 32,000.)
_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(")?|([\[{]+)|([\]}]+)|[()\']', re.S)


def deeper(text: str, pos: int, limit: int = DECODER_DEPTH) -> bool:
    """Whether the decoder could open more than `limit` containers reading the
    value at text[pos]. Never where fewer characters than that follow pos (almost every
    value: one subtraction), nor where the text after pos has no more openers than that
    (counted in C); else the value's own brackets outside strings are counted, up to
    where it closes or the decoder would stop, so a text of many values is not scanned
    to its end for each."""
    if len(text) - pos <= limit or text[pos] not in "[{" or _openers_after(text, pos) <= limit:
        return False
    depth = 0
    for m in _NESTING.finditer(text, pos):
        kind = m.lastindex
        if kind is None:
            return False  # (where the decoder stops)
        if kind == 2:
            depth += m.end() - m.start()
            if depth > limit:
                return True
        elif kind == 3:
            depth -= m.end() - m.start()
            if depth <= 0:
                return False
    return False


def _refusal(text: str, pos: int, scan: Any) -> Exception | None:
    """What the guard raises for the value at text[pos], None: the decoder (its C
    `scan`) may read it. Where the value nests deeper than DECODER_DEPTH, what the
    decoder would say of it without reading so deep: it reads the value cut where it
    would go deeper, and an error it meets before there is its answer (`{"a" 1, [[[…`
    is broken at the `1`, at any depth after it); else Deeper where the value closes,
    and where it never closes in the text (cut by its end, or stopped where JSON has
    no place for what comes: a string that never closes, a paren, a quote) the error
    the decoder gives a cut value there. That is what the decoder says of every shorter
    text too, as a stream sees the value grow: Deeper for a cut value made a stream,
    which took it for cut a delta before, read otherwise than parse() (fuzz seed 7
    #100016041: `<tool_call>{"":"<tool_call>""</tool_call>"{""[[[…`, 271 openers on)."""
    if text[pos] not in "[{" or _openers_after(text, pos) <= DECODER_DEPTH:
        return None
    depth = 0
    deep = -1  # (where the value would go deeper than DECODER_DEPTH)
    for m in _NESTING.finditer(text, pos):
        kind = m.lastindex
        if kind is None:
            if deep < 0:
                return None  # (the decoder stops there, no deeper than the limit)
            break
        if kind == 2:
            n = m.end() - m.start()
            if depth + n > DECODER_DEPTH and deep < 0:
                deep = m.start() + DECODER_DEPTH - depth  # (the run's opener that goes deeper)
            depth += n
        elif kind == 3:
            depth -= m.end() - m.start()
            if depth <= 0:
                if deep < 0:
                    return None
                break
    else:
        m = None
        if deep < 0:
            return None
    try:
        scan(text[pos:deep], 0)  # (no deeper than DECODER_DEPTH: it ends where the value would go deeper)
    except json.JSONDecodeError as exc:
        if exc.pos < deep - pos:
            return json.JSONDecodeError(exc.msg, text, pos + exc.pos)
    except StopIteration:  # pragma: no cover (text[pos] opens a value)
        pass
    if m is None:
        return json.JSONDecodeError("Expecting value", text, len(text))  # (cut by the end of the text)
    if m.lastindex is None:
        unclosed = m.group()[0] == '"'
        return json.JSONDecodeError("Unterminated string starting at" if unclosed else "Expecting value", text, m.start())
    return Deeper("nested too deeply")


def one_nest(text: str) -> bool:
    """Whether all of text is one bracketed value as the decoder reads its nesting: its
    first opener's brackets (outside strings) close at its very end, no string left
    open. (What Deeper refused is so a well-formed value too deep, not a text that
    only begins with brackets.)"""
    if not text.startswith(("[", "{")):
        return False
    depth = 0
    for m in _NESTING.finditer(text):
        kind = m.lastindex
        if kind is None:
            return False
        if kind == 2:
            depth += m.end() - m.start()
        elif kind == 3:
            if depth <= m.end() - m.start():
                return m.start() + depth == len(text)  # (the run's closer that brings it to 0)
            depth -= m.end() - m.start()
    return False


class _Bounded(json.JSONDecoder):
    """json.JSONDecoder whose scan_once (used by decode and raw_decode too) refuses a
    value deeper than DECODER_DEPTH with RecursionError before the C scanner reads it."""

    def __init__(self, **kw: Any) -> None:  # noqa: D107
        super().__init__(**kw)
        scan = self.scan_once
        self.unguarded_scan = scan  # (for a caller that has bounded the openers itself)

        def scan_once(text: str, pos: int) -> tuple[Any, int]:
            if len(text) - pos > DECODER_DEPTH:  # (else it cannot nest so deep: at once)
                refused = _refusal(text, pos, scan)
                if refused is not None:
                    raise refused
            return scan(text, pos)

        self.scan_once = scan_once


# json.loads(text, strict=False) without building a decoder per call. Not
# strict: raw control characters (real newlines) inside strings are common in
# model output and harmless. NaN, Infinity and numbers too large for a float
# are refused, so that decoded arguments are always JSON that json.dumps can
# write with allow_nan=False (a client's JSON.parse throws on NaN): the lenient
# pass reads them as null (repair non_finite_number).
_JSON = _Bounded(strict=False, parse_float=_finite_float, parse_constant=_no_constant)


class _Broken(json.JSONDecodeError):
    """scan_json's JSONDecodeError: msg and pos, without the line and column, which
    the decoder's own counts over all the text before pos."""

    def __init__(self, msg: str, pos: int) -> None:  # noqa: D107
        ValueError.__init__(self, f"{msg}: char {pos}")
        self.msg, self.doc, self.pos, self.lineno, self.colno = msg, "", pos, 0, 0


_WINDOW = 2048
# How far before a copy's end a failure may be told by its end: the decoder fails at
# the start of a token it cannot finish (`tr` of `true`, `-Infinit`, `\u12`).
_MARGIN = 16


def scan_json(text: str, pos: int) -> tuple[Any, int]:
    """_JSON.scan_once(text, pos): the JSON value at pos and the index past it;
    StopIteration(pos) where no value starts, JSONDecodeError (msg, pos) where it
    breaks. In time and memory it costs what it reads, not where pos is: the
    decoder's error counts the lines of all the text before pos, once per value
    tried (a reply of many broken payloads, each tried, took time in the square of
    its length). So the value is read from a copy that starts at pos: first a short
    one, and the rest of the text only where the short one ended too soon to tell."""
    n = len(text)
    for stop in (pos + _WINDOW, n) if n - pos > _WINDOW else (n,):
        piece = text[pos:stop]
        last = stop >= n
        try:
            value, end = _JSON.scan_once(piece, 0)
        except StopIteration as exc:
            if last or exc.value < len(piece) - _MARGIN:
                raise StopIteration(pos + exc.value) from None
            continue
        except json.JSONDecodeError as exc:
            # (Where the copy's end may have made it fail, the rest of the text decides.)
            if last or (exc.pos < len(piece) - _MARGIN and not exc.msg.startswith("Unterminated string")):
                raise _Broken(exc.msg, pos + exc.pos) from None
            continue
        if last or end < len(piece):
            return value, pos + end
    raise AssertionError("unreachable")  # pragma: no cover
