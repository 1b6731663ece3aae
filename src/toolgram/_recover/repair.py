"""Read JSON that a language model almost got right.

`loads` tries `json.loads` first. Only when that fails does it make one lenient
pass that accepts the usual slips (single quotes, Python literals and tuples,
trailing or missing commas, unquoted keys, JavaScript comments, text cut off
mid-value, stray closing brackets) and names every repair it needed, so callers
can report them.

`value_end` and `scalar_end` find where a bracketed value or a call argument
ends without parsing it; the grammars use them to cut payloads out of prose.
`quoted_end` finds where a quoted call argument with its own quotes inside, unescaped,
ends (`command='grep -rn 'TODO' src/'`), and `unquoted_inside` reads it.

Payloads come from untrusted model output and may hold thousands of nested
brackets, so everything here is iterative and linear, and nothing raises
except RepairError.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

import regex

from .._grammar.words import lazy, words

__all__ = ["MAX_DEPTH", "RepairError", "cut_short", "loads", "quoted_end", "scalar_end", "unquoted_inside", "value_end"]

# Deeper payloads are refused outright; the limit leaves plenty of headroom
# below Python's recursion limit for json.dumps and friends downstream.
MAX_DEPTH = 512
TOO_DEEP = "nested too deeply"  # (str() of the RepairError past MAX_DEPTH)


class RepairError(ValueError):
    """The text could not be read as JSON, even leniently.

    str() is a short lowercase reason ("unexpected character '@' at 14"),
    shown to models as-is, so it stays plain and has no trailing period.
    """


# --- Scanning without parsing: in _lalr/extent.py ------------------------------

from .._lalr.extent import (  # noqa: F401 (value_end, scalar_end, BracketIndex: re-exported)
    triple_end,
    triple_quote,
    _DEPTH_STEP,
    _NOT_BRACKET,
    _QUOTES,
    BracketIndex,
    scalar_end,
    value_end,
)
from .._lalr.jsonscan import _JSON, _Bounded, _finite_float, _no_constant, scan_json  # noqa: F401 (re-exported: the decoder and its number rules)


def _too_deep(text: str) -> bool:
    """Whether brackets outside strings nest deeper than MAX_DEPTH anywhere in text.

    Exact for valid JSON, which is all json.loads would accept. (Stray closers
    are not clamped at depth 0 here; such text is not valid JSON, and the lenient
    pass counts its own depth.)
    """
    # Too few openers to nest that deep: skip the scan (the usual case).
    if text.count("[") + text.count("{") + text.count("(") <= MAX_DEPTH:
        return False
    # Strings must be skipped: brackets in them could push the count either
    # way. What is left is all brackets, summed up in C.
    brackets = _NOT_BRACKET.sub("", text)
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0) > MAX_DEPTH


# --- Quotes inside a quoted Python argument value -----------------------------------
#
# `command='grep -rn 'TODO' src/'`, `command="echo "hi" there"`: a value whose own
# quote the model wrote inside it, unescaped. Python reads a string that ends at the
# second quote and then text it cannot read. The structure of the call settles where
# the value ends: at the first quote of its kind followed by `)` or by `,` and a
# keyword (`, timeout=`), when the quotes of its kind inside it pair up as quoted
# words (`'TODO'`, `"hi"`: an opening one with no letter or digit before it, a
# closing one with none after it; an apostrophe, a quote between two letters of a
# 'single-quoted' value, is no quote here). Then it is read whole (repair
# unescaped_quotes). A quote left over (`city="Par"is"`) is a stray one: the value
# cannot be read, and the call is an error that names it; where Python's reading of
# it runs on to the end of the reply, that is no reply cut short (_scan/salvage.py).

# What may follow the quote that ends an argument value: its call's `)` (after a
# trailing comma, too), or a comma and the next keyword argument (a name, then "="
# that is not "=="; the grammars' KEY).
_VALUE_CLOSE = lazy(regex.compile, words(r"\s*(?:(?:,\s*)?\)|,\s*(?:[A-Za-z_]|\\_)(?:\w|\\_)*\s*=(?!=))"))
# After the string Python reads: the value ends there (a `)`, or a `,` and what starts
# another argument: a keyword, a quote, a number, a bracket), or text follows (`,` and
# a bare word, too).
_STANDS = lazy(regex.compile, words(r"\s*(?:\)|,\s*(?:\)|(?:[A-Za-z_]|\\_)(?:\w|\\_)*\s*=(?!=)|[^\s\w\\]|\d))"))
_STOP_AFTER = lazy(regex.compile, r"\s*[,)]")
# After Python's string, a comma and a bare word that runs into a quote: no argument.
_WORD_QUOTE = lazy(regex.compile, r"\s*,\s*[A-Za-z_]\w*\s*['\"]")
# How many quotes after Python's string the end of the value is looked for among (each
# value is looked at once in a whole reply, at most once per quote in a stream: a reply
# full of quotes stays linear).
_MAX_QUOTES = 32
# The string Python reads at a quote ('It's' is one string: see _STRING); group 1
# set when it closes.
PY_STRING = _PY_STRING = {
    '"': re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(")?', re.S),
    "'": re.compile(r"'[^'\\]*(?:(?:\\.|'(?=[^\W_]))[^'\\]*)*(')?", re.S),
}


def py_string_end(text: str, pos: int, endpos: int | None = None) -> int:
    """Where the string Python reads at the quote text[pos] ends (_PY_STRING), just past
    its close; -1 where it runs on to the text's end. A single-quoted one read so is
    kept per text (_OPEN_FROM): any later `'` not escaped opens one that runs on too
    (inside the first it was an apostrophe, a quote that closed it would have ended
    it, and from the next character both read the same text alike). So a text is read
    through once, not once per value: a storm of values left open, each asked
    (`[f(a='x<|tool_call_end|>` again and again), stays linear (test_bounded). `endpos`: the text ends
    there (Driver.stop: a reading of no text of its own, not kept)."""
    single = text[pos] == "'" and endpos is None
    memo = _OPEN_FROM[0] if single else None
    known = memo is not None and memo[0] is text
    if known and memo[1] < pos and not escaped(text, pos):
        return -1
    m = _PY_STRING[text[pos]].match(text, pos) if endpos is None else _PY_STRING[text[pos]].match(text, pos, endpos)
    if m.group(1) is not None:
        return m.end()
    if single and (not known or pos < memo[1]):
        _OPEN_FROM[0] = (text, pos)
    return -1


# py_string_end's first single-quoted string found to run on to its text's end: (text,
# its quote's place), one tuple replaced whole.
_OPEN_FROM: list = [None]


def open_known(text: str, pos: int) -> bool:
    """Whether the single-quoted string Python reads at text[pos] is known to run on to
    the text's end without reading it: py_string_end's memo holds an earlier one of the
    text that does (False: not known, either way). Then no `,` or `)` ends the value it
    opens (scalar_end reads the same string first, and stops at none after it): a storm
    of values left open is not scanned a window each (Driver._lex's argument_end)."""
    memo = _OPEN_FROM[0]
    return memo is not None and memo[0] is text and memo[1] < pos and text[pos] == "'" and not escaped(text, pos)


class QuoteWait:
    """quoted_end() cannot tell yet (a stream): `pending`, the text's last quote may
    yet be followed by what ends the value (any text may tell); else only text with
    the quote in it can change the answer."""

    __slots__ = ("quote", "pending")

    def __init__(self, quote: str, pending: bool) -> None:
        self.quote = quote
        self.pending = pending

    def absorbs(self, text: str, n: int) -> bool:
        return not self.pending and self.quote not in text


OPEN = "open"  # (see quoted_end)


def quoted_end(
    text: str,
    pos: int,
    final: bool,
    markers: Any = None,
    call_end: Any = None,
    resume: list | None = None,
    endpos: int | None = None,
    passed: dict | None = None,
) -> Any:
    """For the Python argument value that opens with the quote at text[pos]: None
    where the string Python reads is the value (`)`, or `,` and the next argument,
    follows it; or it never closes), or no quote before the first marker after its
    break (`markers(i)`: where the first one at or after i starts, or -1; None: there
    are none) is followed by what ends a value; else (end, paired): the value would
    end at `end`, just past its closing quote, and its quotes inside pair up (it is
    read whole: unquoted_inside) or not (a stray quote: it is not read, and runs on
    as Python reads it; None in place of False: Python's reading never ends the call,
    so the value, a stray quote in it, ends at `end`). Where a `,` and a bare word follow the string (`'say 'hi',
    then go', n=2`), which Python could read as a positional argument, only a value
    whose quotes pair up is taken, ending before the call's `)` as Python reads it
    (`call_end(i)`: scalar_end(text, i, ")"), which a stream may find by a scan that
    resumes). The end is looked for among the next _MAX_QUOTES quotes. In a stream
    (not final): OPEN while Python's string has not closed; a QuoteWait where the
    text so far cannot tell. `resume` (a stream's, not final: a list kept for the value
    at pos, in a text only added to): where the look among the quotes stopped the last
    time, read on from there: a quote that nothing after it ended a value at (no match,
    not even a partial one) ends none whatever text comes, and a stream asks again at
    each delta (a value left open before a JSON call: its quotes read again and again).
    `endpos`: the text ends there, as if cut (Driver.stop: a whole text's, final; what
    that reading finds is kept for no text, whose own answers may differ). `passed`:
    the caller's record for this text, a dict it keeps for it (a stream's as the text
    grows; not with endpos): quote -> [lo, hi], no quote of that kind in text[lo:hi] is
    one a value's end follows (no match, not even a partial one: so whatever text comes
    in a stream), read for the values before, which this look passes over with a count,
    the same as looking at each: a storm of values, each looking on among the next
    _MAX_QUOTES quotes, read each quote once for each value before it (`[f(a="x"]
    [g(b=1)]`, one a line: 32 looks a value; a value left open before a JSON call of
    many quotes, asked again at each delta). Kept by the caller, not here: a text's
    record is its reader's alone, whichever thread reads what."""
    quote = text[pos]
    n = len(text) if endpos is None else endpos
    slip = _other_close(text, pos, final, markers, n)
    if slip is not None:
        return slip if type(slip) is QuoteWait else (slip, MISMATCHED)
    at = py_string_end(text, pos, endpos)
    if at < 0:
        # It never closes: the value runs on, as Python reads it (in a stream, OPEN: it
        # has not closed yet).
        return None if final else OPEN
    stands = _settles(_STANDS, text, at, final, quote, n)
    if stands is not None:
        return stands or None
    stray = _STRAY_QUOTE.match(text, at, n)
    if stray is not None:
        close = _settles(_SLIP_CLOSE, text, stray.end(), final, quote, n)
        if close is not None:
            if close:
                return close
            # (Unless Python reads a string there, joined to the value: `'a' "), b"`.)
            more = stray.end() - 1
            joined = _PY_STRICT[text[more]].match(text, more, n)
            if joined.group(1) is not None:
                stands = _settles(_STANDS, text, joined.end(), final, text[more], n)
                if stands is not None:
                    return stands or None
            elif not final:
                return QuoteWait(text[more], False)  # (only a quote of its kind tells)
            return stray.end(), STRAY
    stop = markers(at) if markers is not None else -1
    if stop < 0:
        stop = n
    positional = _STOP_AFTER.match(text, at, n) is not None  # (a `,` and a bare word)
    broke = at
    if positional and not final:
        # (A stream looks for the call's `)` as the text arrives; a whole text only up
        # to the end the value would have: the same answer, with no scan to the end.)
        stop = min(stop, call_end(at) if call_end is not None else scalar_end(text, at, ")"))
    looked = 0
    if final:
        resume = None
    elif resume is not None:
        if resume and resume[0] == broke:
            at, looked = resume[1], resume[2]  # (the quotes before: none ends the value)
        else:
            resume[:] = [broke, at, 0]
    run = None  # (this text's run of quotes of its kind that no value's end follows, in `passed`)
    if passed is not None and endpos is None:
        run = passed.get(quote)
        if run is not None and run[0] <= at <= run[1]:
            hi = min(run[1], stop)
            if hi > at:
                looked += text.count(quote, at, hi)
                if looked > _MAX_QUOTES:
                    return None  # (as the look below, at the first quote too many)
                at = hi
                if resume is not None:
                    resume[1], resume[2] = at, looked
        else:
            run = passed[quote] = [at, at]
    while True:
        found = text.find(quote, at, stop)
        if found < 0:
            if run is not None and run[1] < stop:
                run[1] = stop
            return None if final or stop < n else QuoteWait(quote, False)
        at = found
        looked += 1
        if looked > _MAX_QUOTES:
            return None  # (a value with so many quotes inside is not told apart)
        if not escaped(text, at):
            close = _settles(_VALUE_CLOSE, text, at + 1, final, quote, n)
            if close is not None:
                if close:
                    return close
                paired = unquoted_inside(text[pos : at + 1]) is not None
                if positional:
                    if final and scalar_end(text[:at], broke, ")") < at:
                        return None  # (Python's reading ends the call before this quote)
                    if not paired:
                        # Python's reading stands (`'a', b, 'c', n=2)`), but not where the
                        # bare word runs into a quote (`'a', b', limit=3)`): no Python
                        # reads that, and taking it cut the value at its first quote and
                        # dropped the arguments after it. The value is a stray quote's.
                        return (at + 1, None) if _WORD_QUOTE.match(text, broke, n) else None
                return at + 1, paired
        at += 1
        if resume is not None:
            resume[1], resume[2] = at, looked
        if run is not None and run[1] < at:
            run[1] = at


# --- A quote of the other kind, or one too many, where a quoted value ends ------------
#
# `city='Paris")`, `city="Paris', unit="c")`: the model closed the string with the other
# quote. Python reads on past it (to a quote of the string's own kind that ends no
# value, or to the end of the reply), swallowing the next argument or call into the
# value. `text='hi' ")`, `text="hi"")`: one quote too many after the string's close,
# which Python reads as a string that never closes, running over the call's `)` and
# `]` and the format's end marker. The structure of the call settles both where the
# quote is followed by what ends a value and its call (_SLIP_CLOSE: `)` then the next
# call, the list's `]`, a marker, the line's end or the end of the text; or `,` and the
# next keyword): the other quote, the first of its kind in the string (neither escaped
# nor an apostrophe), closes it (repair mismatched_quote), unless Python reads the value
# (`'x"), g(y=1)'`: its string closes at its own quote, and a value's end follows); the
# quote too many is read past (repair stray_quote). Anywhere else a quote goes on as
# Python reads it.
MISMATCHED = "mismatched"  # (quoted_end's second item: see above)
STRAY = "stray"
_OTHER_QUOTE = {'"': "'", "'": '"'}
# What follows a call's `)` (a quote before it ended its last value): the list's `]`,
# a `;`, the line's end, a marker's `<`, the end of the text, or a `,` and the next call.
_AFTER_CALL = r"(?:[ \t]*(?:[\]\r\n;<]|\Z)|\s*,\s*(?:(?:[A-Za-z_]|\\_)[\w.\-]*\s*\(|\[))"
_SLIP_CLOSE = lazy(
    regex.compile, words(r"\s*(?:(?:,\s*)?\)" + _AFTER_CALL + r"|,\s*(?:[A-Za-z_]|\\_)(?:\w|\\_)*\s*=(?!=))")
)
_STRAY_QUOTE = lazy(re.compile, r"[ \t]*['\"]")
_ANY_QUOTE = lazy(re.compile, r"['\"]")
_LETTER_AT = lazy(re.compile, r"[^\W_]")  # (after a single quote: an apostrophe, as _STRING reads it)
# The string Python itself reads at a quote (no apostrophes: `'It'` then `s`).
_PY_STRICT = {'"': _PY_STRING['"'], "'": re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*(')?", re.S)}


def first_other(text: str, pos: int, endpos: int | None = None) -> int:
    """Where the first quote of the other kind is in the string that opens with the quote
    at text[pos] (neither escaped nor an apostrophe, `"It's'`), before its own quote
    closes it as Python reads it (_PY_STRING: an apostrophe, `'It's`, does not); -1:
    none is. Read no further than the first of them (Python's string may run on to the
    end of the text, over every later value: read for each, the square of it). And a
    single-quoted string's walk is kept per text (_FIRST_OTHER): a later `'` it read
    past as an apostrophe, not escaped, opens a string whose walk is the same from
    there on, with the same answer (a storm of `[f(a='x<|tool_call_end|>`, each value
    left open to the end: read once, not once per value). `endpos`: the text ends there
    (see quoted_end; not kept)."""
    quote = text[pos]
    n = len(text) if endpos is None else endpos
    keep = quote == "'" and endpos is None
    if keep:
        memo = _FIRST_OTHER[0]
        if memo is not None and memo[0] is text and memo[1] < pos < memo[2] and not escaped(text, pos):
            return memo[3]
    other = _OTHER_QUOTE[quote]
    search = _ANY_QUOTE.search
    at = pos + 1
    while True:
        found = search(text, at, n)
        if found is None:
            got, stop = -1, n
            break
        at = found.start()
        if escaped(text, at):
            at += 1
            continue
        if text[at] == quote:
            if quote == "'" and _LETTER_AT.match(text, at + 1) is not None:
                at += 1  # (an apostrophe: see _STRING)
                continue
            got, stop = -1, at
            break
        if other == "'" and text[at - 1].isalnum() and at + 1 < n and text[at + 1].isalnum():
            at += 1  # (an apostrophe in a "double-quoted" value is its text: `"It's'`)
            continue
        got, stop = at, at
        break
    if keep:
        _FIRST_OTHER[0] = (text, pos, stop, got)
    return got


# first_other's last single-quoted walk: (text, its quote's place, where it stopped,
# its answer), one tuple replaced whole.
_FIRST_OTHER: list = [None]


class kept_walks:
    """`with kept_walks():` a reading of another text (a stretch of the text read on its
    own: Scanner._own_reads_at) leaves the walks kept per text as they were (_OPEN_FROM,
    _FIRST_OTHER): those of the text being read, whose values the stretch lies among.
    Replaced by the stretch's, the next value of that text walked again to its end: a
    storm of such values, the square of the reply."""

    def __enter__(self) -> None:
        self.kept = (_OPEN_FROM[0], _FIRST_OTHER[0])

    def __exit__(self, *exc: Any) -> None:
        _OPEN_FROM[0], _FIRST_OTHER[0] = self.kept


def _other_close(text: str, pos: int, final: bool, markers: Any, n: int) -> Any:
    """Where the quoted value at text[pos] ends when the model
    closed it with the other quote (see above): just past that quote; None where it did
    not; a QuoteWait (not final) where the text so far cannot tell: what follows the
    quote, or whether Python's own string, not closed yet, will close as a value (then
    it is the value). Not past a marker (`markers`: see quoted_end): a string that runs
    on over one is what it is. (The text ends at n: see quoted_end's endpos.)"""
    quote = text[pos]
    at = first_other(text, pos, None if n == len(text) else n)
    if at < 0:
        return None
    close = _settles(_SLIP_CLOSE, text, at + 1, final, quote, n)
    if close is None:
        return None
    # Where Python reads the value (its string closes at the first quote of its kind,
    # and `)` or `,` and the next argument follows), it is that string: `'x"), g(y=1)'`.
    strict = _PY_STRICT[quote].match(text, pos, n)
    if strict.group(1) is not None:
        stands = _settles(_STANDS, text, strict.end(), final, quote, n)
        if stands is not None:
            return stands or None
    elif not final:
        return QuoteWait(quote, False)  # (it may yet close so: only a quote of its kind tells)
    if markers is not None:
        # (Asked only here, where the quote would close it: the driver's search for the
        # marker after Python's string goes on from where it stopped, for another place.)
        mark = markers(pos + 1)
        if 0 <= mark < at:
            return None
    return close or at + 1


def slip_told(value: str) -> bool:
    """Whether slipped_quote of a value whose text is `value` is None wherever the value
    stands (the common case it tells from the value alone, below); False: it may look
    at the text after it."""
    if len(value) < 2 or value[0] not in _QUOTES or value[-1] not in _QUOTES:
        return True
    quote = value[0]
    if value[-1] != quote:
        return False
    m = _PY_STRING[quote].match(value)
    return m.group(1) is not None and m.end() == len(value)


def slipped_quote(text: str, start: int, end: int, passed: dict | None = None) -> tuple[str, str] | None:
    """For the Python argument value text[start:end] as the lexer took it (quoted_end,
    on the whole text): where it is a string closed with the other quote or followed
    by a quote too many (see above), (the string as Python would read it, the repair);
    None where it is not. `passed`: the caller's record for the text (see quoted_end)."""
    if end - start < 2 or text[start] not in _QUOTES or text[end - 1] not in _QUOTES:
        return None
    quote = text[start]
    if text[end - 1] == quote:
        # (The string Python reads closes right at `end`, with its own quote: neither
        # closed with the other quote (that one would end it) nor followed by a quote
        # too many (the value would end past it). The common case, told without
        # quoted_end's look at what follows, which the lexer has made already.)
        m = _PY_STRING[quote].match(text, start, end)
        if m.group(1) is not None and m.end() == end:
            return None
    got = quoted_end(text, start, True, passed=passed)
    if type(got) is not tuple or got[0] != end:
        return None
    if got[1] is MISMATCHED:
        return quote + text[start + 1 : end - 1] + quote, "mismatched_quote"
    if got[1] is STRAY:
        return text[start : _PY_STRING[quote].match(text, start).end()], "stray_quote"
    return None


def _settles(pattern: Any, text: str, at: int, final: bool, quote: str, n: int) -> Any:
    """Whether `pattern` matches at `at`: None (no), False (yes), or, where more text
    could still change that (not final), a pending QuoteWait: a partial match, or one
    that reaches the end of the text, where its lookahead (`=(?!=)`) saw nothing. The
    text ends at n (see quoted_end's endpos)."""
    # (regex: passing partial= costs more than the match itself; a whole text's is plain.)
    m = pattern.match(text, at, n) if final else pattern.match(text, at, n, partial=True)
    if m is None:
        return None
    if not final and (m.partial or m.end() >= n):
        return QuoteWait(quote, True)
    return False


def escaped(text: str, at: int) -> bool:
    """Whether the character at `at` follows an odd run of backslashes."""
    i = at
    while i > 0 and text[i - 1] == "\\":
        i -= 1
    return (at - i) % 2 == 1


def _inner_quotes(body: str, quote: str) -> list[int] | None:
    """Where the quotes of `quote`'s kind in `body` (a quoted value's inside) are, when
    they pair up as quoted words (see above); None when they do not. Escaped quotes
    and apostrophes are left out."""
    found = []
    at = body.find(quote)
    while at >= 0:
        if not escaped(body, at):
            before = body[at - 1 : at]
            after = body[at + 1 : at + 2]
            if not (quote == "'" and before.isalnum() and after.isalnum()):  # (an apostrophe)
                opening = len(found) % 2 == 0
                if (before if opening else after).isalnum():
                    return None
                found.append(at)
        at = body.find(quote, at + 1)
    return found if len(found) % 2 == 0 else None


def unquoted_inside(text: str) -> str | None:
    """The value of `text`, a quoted value (see above) that Python cannot read, whose
    own quotes inside it pair up as quoted words: its inside, escapes read; None when
    it is not such a value."""
    quote = text[:1]
    if len(text) < 2 or quote not in _QUOTES or text[-1] != quote or escaped(text, len(text) - 1):
        return None
    body = text[1:-1]
    inner = _inner_quotes(body, quote)
    if not inner:
        return None
    return _ESCAPE.sub(_unescape, body) if "\\" in body else body


def left_open(text: str) -> str | None:
    """The value of `text`, a quoted value Python cannot read, where the string its first
    quote opens is still open at its end: its own quotes inside, unescaped, pair up after
    that first one (`"Paris <tool_call>{"name": "s"}</tool_call>`, a call quoted in the
    value, then the call's close left out): its text after that quote, escapes read, as a
    string the end cut is read (`"Paris`: closed_json). Issue 21: read as its text from
    the quote (unquoted_string), the value a stream had sent `Paris ` of began with a
    quote, and the call was withdrawn. None when it is not such a value (one that ends
    with its quote is whole: unquoted_inside, stray_quote)."""
    quote = text[:1]
    if quote not in _QUOTES or len(text) < 2 or (text[-1] == quote and not escaped(text, len(text) - 1)):
        return None
    if not odd_quotes(text, quote):
        return None
    body = text[1:]
    return _ESCAPE.sub(_unescape, body) if "\\" in body else body


def runs_over(text: str) -> bool:
    """Whether `text`, a value that opens with a quote, ran on past where the call's
    structure ends it (quoted_end): a quote of its kind inside it is followed by `)`
    or by `,` and a keyword, as Python's reading of a stray quote makes it do."""
    if text[:1] not in _QUOTES:
        return False
    return type(quoted_end(text, 0, True)) is tuple


def stray_quote(text: str) -> bool:
    """Whether `text`, a value in quotes, holds a quote of their kind that nothing
    pairs (escaped ones and apostrophes left out): `"Par"is"`."""
    quote = text[:1]
    if quote not in _QUOTES or len(text) < 2 or text[-1] != quote:
        return False
    return odd_quotes(text, quote)


def odd_quotes(text: str, quote: str) -> bool:
    """Whether `text` holds an odd number of quotes of `quote`'s kind, escaped ones and
    apostrophes (`don't`, between two letters) left out: one of them nothing pairs."""
    count = 0
    at = text.find(quote)
    while at >= 0:
        apostrophe = quote == "'" and text[at - 1 : at].isalnum() and text[at + 1 : at + 2].isalnum()
        if not apostrophe and not escaped(text, at):
            count += 1
        at = text.find(quote, at + 1)
    return count % 2 == 1


# --- Lenient tokens -----------------------------------------------------------

# One token, after any whitespace. Matching whitespace and token in one regex
# call, and dispatching on m.lastindex, keeps the Python work per token small.
# Unclosed strings run to the end of the text, as in _STRING. Numbers that
# JSON's grammar accepts have their own fast groups; anything else starting
# with "-" or a digit (`1.`, `01`, `-Infinity`) goes the slow way. No token
# starts with whitespace, so only whitespace left makes the match fail.
_TOKEN_BODY = r"""
    (?:
        ([{\[(])                                    # 1 opener
      | ([}\])])                                    # 2 closer
      | (,)                                         # 3
      | (:)                                         # 4
      | "([^"\\]*(?:\\.[^"\\]*)*)(")?               # 5 "body", 6 closing quote
      | '([^'\\]*(?:(?:\\.|'(?=[^\W_]))[^'\\]*)*)(')?  # 7 'body', 8 closing quote (see _STRING)
      | (-?(?:0|[1-9][0-9]*))(?![\w$.])             # 9 integer
      | (-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(?![\w$.])  # 10 float
      | ([-0-9]|\.(?=[0-9]))                         # 11 any other number-ish start (`.5`: Python's)
      | ((?:[^\W\d]|\$)[\w$.-]*)                    # 12 word: literal or unquoted key
      | (\S)                                        # 13 anything else
      | (\Z)                                        # 14 the end (after comments)
    )
    """
_TOKEN = lazy(re.compile, r"\s*" + _TOKEN_BODY, re.S | re.X)
# The same, with JavaScript comments as whitespace (`{"q": 1 // note` then a newline,
# `/* … */`): used only for a text with a "/" in it. A comment left open runs to the end.
_COMMENTS = r"(?:\s+|//[^\n]*(?![^\n])|/\*(?:[^*]|\*(?!/))*(?:\*/|\Z))*"
_TOKEN_COMMENTS = lazy(re.compile, _COMMENTS + _TOKEN_BODY, re.S | re.X)
_BLANKS_COMMENTS = lazy(re.compile, _COMMENTS, re.S)  # (what _TOKEN_COMMENTS skips before a token)
_OPEN, _CLOSE, _COMMA = 1, 2, 3  # 4 is a colon, never wanted here
_DQ_CUT, _DQ, _SQ_CUT, _SQ = 5, 6, 7, 8  # lastindex of a cut-off or closed string
_INT, _FLOAT, _NUMBERISH, _WORD_TOKEN, _END = 9, 10, 11, 12, 14
# Tokens that can start an object key, and an array item.
_KEY_START = {_DQ_CUT, _DQ, _SQ_CUT, _SQ, _WORD_TOKEN}
_VALUE_START = _KEY_START | {_OPEN, _INT, _FLOAT, _NUMBERISH}

_WORD = lazy(re.compile, r"(?:[^\W\d]|\$)[\w$.-]*")
_RUN = lazy(re.compile, r"[\w$.+-]*")  # what a number or word token may run over
# A text whose first token is a word (_TOKEN_BODY's group 12, after blanks: no comment
# opens before a letter), and that word (see loads).
_LEAD_WORD = lazy(re.compile, r"\s*((?:[^\W\d]|\$)[\w$.-]*)")

# Anything number-shaped; checked against JSON's own grammar afterwards, so a
# number cut off by the end of the text (`1.`, `1e-`, `-`) can be trimmed back.
_LOOSE_NUMBER = lazy(re.compile, r"-?[0-9]*\.?[0-9]*(?:[eE][-+]?[0-9]*)?")
_JSON_NUMBER = lazy(re.compile, r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
# A Python float literal with a point that JSON's grammar refuses (`5.`, `.5`): see numberish.
_PY_FLOAT = lazy(re.compile, r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")

# word -> (value, is a Python spelling). Order matters when completing a word
# cut off at the end of the text: "N" becomes None rather than NaN.
_LITERALS: dict[str, tuple[Any, bool]] = {
    "true": (True, False),
    "false": (False, False),
    "null": (None, False),
    "True": (True, True),
    "False": (False, True),
    "None": (None, True),
    "NaN": (math.nan, False),
    "Infinity": (math.inf, False),
    "-Infinity": (-math.inf, False),
}
# Every literal, and every start of one (a literal the end of the text cut: `tru`).
_LITERAL_STARTS = frozenset(name[:i] for name in _LITERALS for i in range(1, len(name) + 1))

# Escapes with a payload. A \uXXXX pair that spells a surrogate pair is one
# character, as in json.loads; a lone surrogate is kept as json.loads keeps it.
_ESCAPE_FORMS = r"""
    u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})
  | u([0-9a-fA-F]{4})
  | x([0-9a-fA-F]{2})
  | U([0-9a-fA-F]{8})
  | N\{([A-Za-z0-9 \-]{1,100})\}
"""
_ESCAPE = lazy(re.compile, rf"\\(?:{_ESCAPE_FORMS}|(.))", re.S | re.X)
# In a string cut off by the end of the text, the last escape may be cut too
# (`\`, `\u00`): that alternative matches it, with no group set, to drop it.
_ESCAPE_AT_CUT = re.compile(
    rf"\\(?:{_ESCAPE_FORMS}|(?:u[0-9a-fA-F]{{0,3}}|x[0-9a-fA-F]?|U[0-9a-fA-F]{{0,7}})?\Z|(.))",
    re.S | re.X,
)
# JSON's escapes plus Python's common ones; both quote styles share them.
_SIMPLE_ESCAPES = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "a": "\a",
    "v": "\v",
    "\n": "",  # a Python line continuation
}


# JSON's own escapes: a JSON string reads these and no others (see _Reader.unescape).
_JSON_FORMS = r"""
    u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})
  | u([0-9a-fA-F]{4})
"""
_JSON_ESCAPE = lazy(re.compile, rf"\\(?:{_JSON_FORMS}|(.))", re.DOTALL | re.VERBOSE)
_JSON_ESCAPE_AT_CUT = lazy(re.compile, rf"\\(?:{_JSON_FORMS}|(?:u[0-9a-fA-F]{{0,3}})?\Z|(.))", re.DOTALL | re.VERBOSE)
_JSON_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(m: re.Match[str]) -> str:
    high, low, u4, x2, u8, named, char = m.groups()
    if high:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
    if named:
        # Python's `\N{DEGREE SIGN}`: the character of that name (an unknown name
        # keeps the escape as written, as an unknown escape does).
        import unicodedata  # (only here: a name escape is rare)

        try:
            return unicodedata.lookup(named)
        except KeyError:
            return m.group()
    code = u4 or x2 or u8
    if code:
        point = int(code, 16)
        return chr(point) if point <= 0x10FFFF else m.group()
    if char is None:  # an escape cut off by the end of the text
        return ""
    # Unknown escapes keep their backslash, as in Python: models write
    # "\d+" and "C:\Users" meaning exactly those characters.
    return _SIMPLE_ESCAPES.get(char, m.group())


def _unexpected_word(word: str, at: int) -> RepairError:
    """loads' failure at a first word that is no literal, as the lenient pass tells it
    (_Reader.literal, read's `at`). Made here, not in loads: an exception a local of the
    frame it is raised from holds is a cycle with that frame's traceback, kept until the
    collector runs (measured in one process, loads' saving showed in parse()'s time only
    once the exception was made here; why, beyond the cycle, was not found)."""
    exc = RepairError(f"unexpected word {_show(word)}")
    exc.at = at
    exc.unsettled = False
    return exc


def _show(word: str) -> str:
    return repr(word if len(word) <= 24 else word[:24] + "...")


def _start(m: re.Match[str]) -> int:
    """Where token m starts, after its leading whitespace."""
    kind = m.lastindex
    if _DQ_CUT <= kind <= _SQ:  # a string's groups leave out its opening quote
        return m.start(kind - 1 if kind % 2 == 0 else kind) - 1
    return m.start(kind)


def _before(text: str, pos: int) -> str:
    """Where in the text something went wrong, as the model can find it: what it wrote
    just before that place (a character offset would mean nothing to it)."""
    head = text[max(0, pos - 20) : pos]
    return repr(head if pos <= 20 else "…" + head)


def _after(text: str, pos: int) -> str:
    """What the text holds from pos on, shortened."""
    tail = text[pos:].strip()
    return repr(tail if len(tail) <= 20 else tail[:20] + "…")


def _unexpected(m: re.Match[str]) -> RepairError:
    start = _start(m)
    where = f"after {_before(m.string, start)}" if start else "at the start"
    return RepairError(f"unexpected character {m.string[start]!r} {where}")


# --- The lenient pass ---------------------------------------------------------

_NOTHING: Any = object()  # no value (yet)

# What the builder expects next.
_VALUE = 0  # a value (or, in an array, its closing bracket)
_KEY = 1  # an object key and its colon (or the closing brace)
_AFTER = 2  # a comma or closing bracket after a value

_CLOSER_OF = {"{": "}", "[": "]", "(": ")"}
_COLON_AFTER_KEY = lazy(re.compile, r"\s*(:)?")
_APOSTROPHE = lazy(re.compile, r"(?<!\\)'")  # a quote inside a 'single-quoted' string, not escaped
# What follows a string value that stands (`,`, a closer, the end, or the next key after
# a missing comma: `"a', 'b': 'c" "n": 1`); what follows a value in an object or a list
# (`,` and a key with its `:`, or a closer), where a quote of the other kind closed it.
_JSON_KEY = r"""(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_$][\w$]*)\s*:"""
_JSON_STANDS = lazy(re.compile, r"\s*(?:[,}\]]|\Z|" + _JSON_KEY + ")")
_BLANKS = lazy(re.compile, r"\s*")
_JSON_SLIP = lazy(re.compile, r"""\s*(?:,\s*(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_$][\w$]*)\s*:|[}\]])""")
# The same two, asked (partial=True) whether the end of a text cut a match of them short:
# a slip told by what a longer text may change (see _Reader.unsettled).
_JSON_STANDS_MAY = lazy(regex.compile, r"\s*(?:[,}\]]|" + _JSON_KEY + ")")
_JSON_SLIP_MAY = lazy(regex.compile, r"""\s*(?:,\s*(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_$][\w$]*)\s*:|[}\]])""")


def _stripped_end(text: str) -> int:
    """len(text.rstrip()), from the end of the text alone where it can (text.rstrip() of a
    text that ends with a newline copies all of it)."""
    tail = text[-64:]
    kept = tail.rstrip()
    if kept or len(tail) == len(text):
        return len(text) - len(tail) + len(kept)
    return len(text.rstrip())


class _Reader:
    """One lenient pass: a tokenizer feeding a builder with an explicit stack."""

    def __init__(self, text: str, cut: bool = False, python: bool = False) -> None:
        self.text = text
        # Whether the text is a Python value (a pythonic call's argument): its strings'
        # escapes are Python's, else JSON's (see unescape).
        self.python = python
        # Whether the text ends where the reply ended (see loads): then a value the end
        # cut short is noted (cut_value), and the containers left open are kept.
        self.cut = cut
        self.left_open: list[int] = []  # (ids of the containers open at the end, when cut)
        # Where the text "ends" when deciding whether something was cut off:
        # trailing whitespace does not make `{"a": tru` any less cut off.
        # Tokens are matched up to here only; a cut-off string still takes
        # its characters from the whole text.
        self.end = _stripped_end(text)
        self.repairs: dict[str, None] = {}  # an ordered set
        self.looked = 0  # how far numberish() looked (see unreadable_at)
        self.trimmed = False  # the last word or number read was completed or trimmed back: the end cut it
        self.starts: list[int] | None = None  # (element_starts: where each element of a top-level list begins)
        self.repeated: tuple | None = None  # (the first key an object gives twice, with two values: see loads)
        # Where a list is the top-level value (a list of calls), which of its elements
        # each repair was needed for (see loads' owned): repair -> the elements' indexes,
        # -1 for none of them (the text outside the list). None: not asked for.
        self.owners: dict[str, set[int]] | None = None
        self.element = -1  # (the element being read, when owners is asked for)
        # Whether a string's other quote was told to close it or not (slip) by the end of
        # the text: its own quote nowhere after it, or the text after either quote cut
        # where a longer text may go on as what follows a value (`, key:`, a closer, the
        # next key). A longer text may tell it the other way, and what was read after
        # that string is then no reading that every longer text keeps (see unreadable_in).
        self.unsettled = False
        # (slipped_end: stop once the top-level value's brackets close, where `stopped` is.)
        self.stop_at_close = False
        self.stopped = -1

    def note(self, repair: str) -> None:
        self.repairs.setdefault(repair, None)
        if self.owners is not None:
            self.owners.setdefault(repair, set()).add(self.element)

    def _at_element(self, stack: list, state: int) -> int:
        """The element of a top-level list that the token being read is in (or, between
        two, that the one before ends: a comma left out, a trailing comma, are the
        element's before them); -1 outside a list."""
        if not stack or type(stack[0][0]) is not list:
            return -1
        n = len(stack[0][0])
        return n if len(stack) == 1 and state == _VALUE else max(n - 1, 0)

    def read(self) -> tuple[Any, tuple[str, ...]]:
        text = self.text
        end = self.end
        comments = "/" in text
        # (A slip is looked for in any text, a "/" in it too: a later "/", a path or a close
        # tag, must not change how the text before it reads, as a stream decides on a
        # prefix. Its string is found after comments too, where its token is.)
        slips = "'" in text and '"' in text  # (see slip)
        skip = _BLANKS_COMMENTS.match if comments else _BLANKS.match
        token = _TOKEN_COMMENTS.match if comments else _TOKEN.match
        colon = _COLON_AFTER_KEY.match
        note = self.note
        # Every open container with the bracket that closes it, innermost
        # last, and the innermost one unpacked. A container is attached to its
        # parent as soon as it opens, so text that stops early leaves a
        # complete tree behind: closing the brackets needs no work.
        stack: list[tuple[Any, str]] = []
        top: Any = None
        closer = ""
        in_object = False
        key: str | None = None  # in an object: the key waiting for its value
        result = _NOTHING
        state = _VALUE
        comma = False  # the last token was a comma
        seen = began = 0  # the end and the start of the last token read (see unreadable_at)
        whole = True  # the last value read is complete: a closed string or bracket, or a word or number that something follows
        try:
            pos = 0
            while True:
                prev_end = pos
                if self.owners is not None:
                    self.element = self._at_element(stack, state)
                slipped = self.slip(pos, skip) if state == _VALUE and slips else None
                # (A string its other quote closed: its token, read up to that quote.)
                m = token(text, pos, end if slipped is None else slipped[1] - 1)
                if m is None:  # the end (no token starts with whitespace)
                    break
                kind = m.lastindex
                if comments and text.find("/", prev_end, _start(m)) >= 0:
                    note("comments")
                if kind == _END:  # (only whitespace or comments were left)
                    break
                pos = seen = m.end()
                began = m.start(kind)

                if kind == _CLOSE:
                    whole = True
                    if state == _AFTER and not stack:
                        note("extra_bracket")  # the top-level value is done
                        continue
                    # A close is fine after a value, after `{` or `[`, and after
                    # a trailing comma; not after a colon.
                    if m.group(kind) != closer and state == _AFTER and _outer(stack, m.group(kind)):
                        # `[{"name": "a", "arguments": {…}]`: the close of a container
                        # further out, right after a value, closes the ones left open.
                        note("missing_bracket")
                        while stack[-1][1] != m.group(kind):
                            stack.pop()
                        top, closer = stack[-1]
                        in_object = type(top) is dict
                    if m.group(kind) != closer or (state == _VALUE and in_object):
                        raise _unexpected(m)
                    if comma:
                        note("trailing_comma")
                        comma = False
                    stack.pop()
                    if stack:
                        top, closer = stack[-1]
                        in_object = type(top) is dict
                    else:
                        top, closer, in_object = None, "", False
                        if self.stop_at_close:
                            self.stopped = pos
                            return result, tuple(self.repairs)
                    state = _AFTER
                    continue

                if state == _AFTER:
                    if kind == _COMMA and stack:
                        comma = True
                        state = _KEY if in_object else _VALUE
                        continue
                    if not stack:
                        raise RepairError(f"extra text after the value: {_after(text, _start(m))}")
                    # Another member right after the last one: read on as if the
                    # comma were there, falling through to read this token. Not
                    # between two bare tokens that touch, though: `[1-2]` is not a
                    # list of two numbers.
                    start = _start(m)
                    if kind not in (_KEY_START if in_object else _VALUE_START) or (
                        start == prev_end
                        and text[start - 1] not in "\"'}])"
                        and text[start] not in "\"'{[("
                    ):
                        raise _unexpected(m)
                    note("missing_comma")
                    state = _KEY if in_object else _VALUE

                if state == _KEY and kind == _OPEN and comma and m.group(kind) == "{" and len(stack) > 1:
                    if type(stack[-2][0]) is list:
                        # `[{"name": "a", "arguments": {…}, {"name": "b", …}]`: an object
                        # left open in a list, and the list's next one: the comma was
                        # the list's.
                        note("missing_bracket")
                        stack.pop()
                        top, closer = stack[-1]
                        in_object = False
                        state = _VALUE

                if state == _KEY:
                    if kind == _DQ:
                        key = m.group(5)
                        if "\\" in key:
                            key = self.unescape(key, '"')
                    elif kind == _WORD_TOKEN:
                        note("unquoted_keys")
                        key = m.group(kind)
                    elif kind in _KEY_START:
                        key, pos = self.string(m)
                    else:
                        raise _unexpected(m)
                    m = colon(text, pos)
                    seen = m.end()
                    if m.group(1) is None:
                        if m.end() == len(text):
                            break  # the text ends after a key: drop it
                        raise RepairError(f"expected ':' after {_before(text, m.end())}")
                    pos = m.end()
                    comma = False
                    state = _VALUE
                    continue

                # state == _VALUE
                opened = False
                if slipped is not None:
                    value, pos = slipped
                    kind = _DQ  # (a string its quote closed)
                elif kind == _DQ:  # the common case first: a closed "string"
                    value = m.group(5)
                    if "\\" in value:
                        value = self.unescape(value, '"')
                elif kind == _INT:
                    try:
                        value = int(m.group(kind))
                    except ValueError:  # past Python's int-from-string digit limit
                        raise RepairError("number too long") from None
                elif kind == _FLOAT:
                    value = float(m.group(kind))
                    if value in (math.inf, -math.inf):
                        note("non_finite_number")
                        value = None
                elif kind == _WORD_TOKEN:
                    value = self.literal(m.group(kind), m.start(kind), pos)
                elif kind == _OPEN:
                    if len(stack) >= MAX_DEPTH:
                        raise RepairError(TOO_DEEP)
                    ch = m.group(kind)
                    if ch == "(":
                        note("python_literals")  # a tuple reads as a list
                    value = {} if ch == "{" else []
                    opened = True
                elif kind == _NUMBERISH:
                    if not self.python and m.group(kind) == ".":
                        raise _unexpected(m)  # (`.5` is no JSON number)
                    value, pos = self.numberish(m.start(kind))
                    if value is _NOTHING:  # a lone "-" at the very end: keep nothing
                        continue
                elif kind in _KEY_START:  # the other strings
                    value, pos = self.string(m)
                else:
                    raise _unexpected(m)

                comma = False
                # (A string is complete once its quote closes it: string() moved pos to the
                # end of the text for one the end cut. A number or a word is complete where
                # something follows it: `12` at the end of a reply may have been `1250`.)
                whole = (pos < len(text) or kind == _DQ or kind == _SQ) and not self.trimmed
                self.trimmed = False
                if not stack:
                    result = value
                elif in_object:
                    if key in top and self.repeated is None and (opened or top[key] != value):
                        self.repeated = (key, top[key], value)  # (a key written twice: see loads)
                    top[key] = value
                else:
                    top.append(value)
                    if self.starts is not None and len(stack) == 1:
                        self.starts.append(began)
                if opened:
                    top, closer, in_object = value, _CLOSER_OF[ch], ch == "{"
                    stack.append((top, closer))
                    state = _KEY if in_object else _VALUE
                else:
                    state = _AFTER

            # The end of the text. Open containers are already attached, and a key
            # or comma left dangling was never added, so closing is just noting it.
            if self.owners is not None:
                self.element = self._at_element(stack, state)
            if stack:
                note("closed_json")
            if result is _NOTHING:
                # (Nothing but blanks and comments: the pass gave up at the end of the
                # text, not after a token, and more text may be the value: `//` then
                # a line with `{}` reads.)
                seen = len(text)
                raise RepairError("unexpected end of text")
            if self.cut:
                # The reply ended here: a value was cut short unless the last one read is
                # complete and nothing was begun after it (a key, a `:`, a `,`, an opening
                # bracket with nothing in it yet). Brackets left open around complete
                # values are only closed (closed_json).
                if state != _AFTER or not whole:
                    note("cut_value")
                self.left_open = [id(top) for top, _ in stack]
            return result, tuple(self.repairs)
        except RepairError as exc:
            # How far the pass looked: to the end of that token, or of the run of number
            # and word characters it starts (`1.5e` was tried as a number that `9` would
            # complete), or as far as numberish() read.
            exc.at = max(seen, self.looked, _RUN.match(text, began).end())
            exc.unsettled = self.unsettled
            raise

    def slip(self, pos: int, skip: Any = None) -> tuple[str, int] | None:
        """The value of the string that opens after the blanks at pos (`skip`: a match of
        what comes before a token, comments too), and where it ends,
        where the model closed it with the other quote (`{"city": 'Paris", "unit": "c"}`):
        the first such quote in it (neither escaped nor an apostrophe) followed by what
        follows a value in an object or a list (_JSON_SLIP: `,` and a key with its `:`,
        or a closer), where the string as written does not stand (its own quote never
        closes it, or is an apostrophe, or something else follows it). Python's quotes,
        the same (see quoted_end). None where it is not so. Read up to that quote, and
        to its own quote: the string as the tokens read it may run on to the end of the
        text (an apostrophe), for each value."""
        text = self.text
        start = (skip or _BLANKS.match)(text, pos).end()
        if start >= len(text) or text[start] not in _QUOTES:
            return None
        at = first_other(text, start)
        slip = _JSON_SLIP.match(text, at + 1) if at >= 0 else None
        if slip is None:
            if at >= 0 and _JSON_SLIP_MAY.match(text, at + 1, partial=True) is not None:
                self.unsettled = True  # (the end cut what may follow a value: see __init__)
            return None
        quote = text[start]
        strict = _PY_STRICT[quote].match(text, start)
        if quote == '"' and strict.group(1) is None and self.cut:
            # (A "JSON string" whose own quote never closes, where the reply ended: the
            # text ends inside it, a well-formed string the end cut (`{"a": "it'}`,
            # `{"a": "x', 'b': '`), and nothing after the other quote settles that it
            # ended there: cut_value. Not so in a payload its end marker closed
            # (`{"city": "Paris', 'unit': 'c'}}</tool_call>`): the other quote closes it.)
            return None
        if (
            strict.group(1) is not None
            and (quote == '"' or _LETTER_AT.match(text, strict.end()) is None)
            and _JSON_STANDS.match(text, strict.end()) is not None
        ):
            return None  # (the string as written stands)
        self.note("mismatched_quote")
        if strict.group(1) is None or _JSON_STANDS_MAY.match(text, strict.end(), partial=True) is not None:
            self.unsettled = True  # (its own quote, or what follows it, may yet come: see __init__)
        body = text[start + 1 : at]
        return (self.unescape(body, quote) if "\\" in body else body), at + 1

    def string(self, m: re.Match[str]) -> tuple[str, int]:
        """The value of the string token m, and where it ends."""
        kind = m.lastindex
        if kind >= _SQ_CUT:
            self.note("single_quotes")
        if kind == _DQ or kind == _SQ:
            body = m.group(kind - 1)
            if kind == _SQ and _APOSTROPHE.search(body):
                self.note("apostrophe")  # ('It's': see _STRING)
            return (self.unescape(body, self.text[m.start(kind - 1) - 1]) if "\\" in body else body), m.end()
        # Cut off by the end of the text: close it, minus any half-written
        # escape. (The token stops short of a lone trailing backslash.)
        self.note("closed_json")
        body = self.text[m.start(kind) :]
        return (self.unescape(body, self.text[m.start(kind) - 1], True) if "\\" in body else body), len(self.text)

    def unescape(self, body: str, quote: str, cut: bool = False) -> str:
        """A string's inside (`quote`: the quote it opened with), its escapes read. A
        Python value's, and a 'single-quoted' string's (Python's repr), are Python's (an
        unknown one keeps its backslash, as in Python). A "JSON string" reads JSON's
        escapes, and `\\'` as the quote it escapes (repair invalid_escape); any other
        backslash is the model's own, kept with the character after it (`C:\\apps`,
        `\\d+`, `\\x41`: a bell or an `A` would change the value; invalid_escape), a
        Markdown-escaped underscore (`my\\_file`) too (escaped_underscores: a call's
        name drops it, see _build/builder.py)."""
        if self.python or quote == "'":
            return (_ESCAPE_AT_CUT if cut else _ESCAPE).sub(_unescape, body)
        kept: list[str] = []

        def read(m: re.Match[str]) -> str:
            high, low, u4, char = m.groups()
            if high:
                return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
            if u4:
                return chr(int(u4, 16))
            if char is None:  # an escape cut off by the end of the text
                return ""
            simple = _JSON_SIMPLE.get(char)
            if simple is not None:
                return simple
            if char == "'":
                kept.append("invalid_escape")
                return "'"
            kept.append("escaped_underscores" if char == "_" else "invalid_escape")
            return m.group()

        body = (_JSON_ESCAPE_AT_CUT if cut else _JSON_ESCAPE).sub(read, body)
        for name in kept:
            self.note(name)
        return body

    def numberish(self, pos: int) -> tuple[Any, int]:
        """Read what JSON's number grammar refused at pos: -Infinity, or a cut-off number."""
        text = self.text
        if text[pos] == "-":
            m = _WORD.match(text, pos + 1)
            if m is not None:
                self.looked = m.end()
                return self.literal("-" + m.group(), pos, m.end()), m.end()
        end = _LOOSE_NUMBER.match(text, pos).end()
        self.looked = end
        raw = text[pos:end]
        if end < self.end and (text[end].isalnum() or text[end] in "_$."):
            raise RepairError(f"bad number {_show(text[pos : end + 1])}")
        if self.python and _PY_FLOAT.fullmatch(raw) is not None:
            # A float Python reads and JSON does not (`5.`, `.5`, `-.5`, `5.e3`): read as
            # Python reads it, as any Python literal is, with no repair (`5.` is 5.0, not
            # a number cut short and completed). At the end of the text, the end of the
            # reply may have cut it (cut_value: see read).
            value = float(raw)
            if value in (math.inf, -math.inf):
                self.note("non_finite_number")
                return None, end
            return value, end
        m = _JSON_NUMBER.match(raw)
        good = m.group() if m else ""
        if self.python:
            m = _PY_FLOAT.match(raw)  # (`5.e` cut: Python's `5.`, 5.0)
            if m is not None and len(m.group()) > len(good):
                good = m.group()
        # Only a number cut off by the end of the text may be trimmed back,
        # and only by a tail that more digits would have completed.
        if end < self.end or len(good) == len(raw) or raw[len(good) :].strip(".eE+-"):
            raise RepairError(f"bad number {_show(raw)}")
        self.note("closed_json")
        self.trimmed = True
        if not good:
            return _NOTHING, end
        if "." in good or "e" in good or "E" in good:
            value = float(good)
            if value in (math.inf, -math.inf):
                self.note("non_finite_number")
                return None, end
            return value, end
        try:
            return int(good), end
        except ValueError:
            raise RepairError("number too long") from None

    def literal(self, word: str, pos: int, end: int) -> Any:
        found = _LITERALS.get(word)
        if found is None and end == self.end:
            # A literal cut off by the end of the text: `tru`, `nul`, `Fa`.
            for name, candidate in _LITERALS.items():
                if name.startswith(word):
                    found = candidate
                    self.note("closed_json")
                    self.trimmed = True
                    break
        if found is None:
            raise RepairError(f"unexpected word {_show(word)}")
        value, pythonic = found
        if pythonic:
            self.note("python_literals")
        if isinstance(value, float):  # NaN, Infinity: not JSON, written as null
            self.note("non_finite_number")
            return None
        return value


# How far the lenient pass may look past the last token it read: a character (a
# number's `(?![\w$.])`, what follows a word). A number it reads on its own
# (Reader.numberish) says how far it looked.
_BREAK_MARGIN = 2


def element_starts(text: str) -> list[int]:
    """Where each element of the list that text begins with begins, as the lenient
    pass reads it (for the spans of calls in a list whose brackets it had to mend:
    `[{…, {…}]`); as far as it reads."""
    reader = _Reader(text)
    reader.starts = []
    try:
        reader.read()
    except RepairError:
        pass
    return reader.starts


def _outer(stack: list, close: str) -> bool:
    """Whether a container open below the innermost one closes with `close`."""
    return any(closer == close for _, closer in stack[:-1])


def unreadable_at(text: str) -> int | None:
    """Where loads() gives up on `text` for good: the end of the last token it read,
    when the text goes on at least _BREAK_MARGIN characters past it, so that what
    follows cannot change it (the pass reads left to right, and what it
    took up to there stays as it was). Then loads() refuses every text that starts
    with this one, at the same place. None: it reads, or it breaks near the end
    (where more text could still be what was missing), or it breaks after a string
    whose other quote was told to close it, or not, by the end of the text
    (_Reader.unsettled: its own quote nowhere after it, or what follows either quote
    cut short), as unreadable_in tells a prefix: the text that follows may hold that
    quote, and the break is then elsewhere or none (`("}'}'xx` broke at the `}` after
    the slip `"}'`; with `"` after it, the string as written closes and it reads)."""
    found = failure(text)
    if found is None or getattr(found, "unsettled", False):
        return None
    return _for_good(text, getattr(found, "at", None))


def _for_good(text: str, at: int | None) -> int | None:
    return at if at is not None and at + _BREAK_MARGIN <= len(text.rstrip()) else None


def unreadable_in(text: str, pos: int, stop: int, spans: Spans | None = None, whole: bool = True) -> int | None:
    """unreadable_at(text[pos:stop]), reading no more of it than it needs: prefixes of
    growing length first (a prefix that breaks for good breaks the text there).
    `spans`: the text's Spans, which read each prefix's text once. `whole`: text[pos:stop]
    is all the value's text there will be (False: a stream's text so far, which more
    text goes on). A break after a string its other quote closed where its own quote
    is nowhere after it, or whose quotes the end of the text told otherwise as a longer
    text may (_Reader.unsettled), is for good only in the value's whole text: in a
    prefix, the text after it may hold that quote, the string then runs on to it, and
    the break is elsewhere or none (fuzz seed 7 #7025501: `{"": "'}<tool_call>{"`
    broke at `<` read up to the marker, and read whole, not there)."""
    size = 256
    while True:
        end = min(stop, pos + size)
        span = text[pos:end]
        found = failure(span) if spans is None else spans.failure(text, pos, span)
        if found is not None and not isinstance(found, tuple):
            found = (str(found), getattr(found, "at", None), getattr(found, "unsettled", False))
        at = None if found is None else _for_good(span, found[1])
        if at is not None and found[2] and not (whole and end >= stop):
            at = None  # (not settled by this text: see above)
        if at is not None or end >= stop:
            return at
        size *= 4


class Spans:
    """What loads() says of spans of one text (failure(), breaks_at()), each span's
    text read once. The drivers of a region ask where the same value breaks
    (_lalr/close.py cut: for each candidate format), the builders of its candidates
    read the same payload (_build/builder.py _loads_leading: llama3_json's, then
    xlam's), and a storm of calls asks about the same text again and again (the same
    broken call at many places: each cut reads 256 characters or more of it, each
    builder all of it). A span's answer, None where loads() reads it, else (why, where
    it broke: the RepairError's str and `at`), is kept under the span's length and hash
    with where it was seen, which the text is compared at (nothing but places and
    answers is kept; a place the span is not at, not even that). Made per text
    (BracketIndex.spans: the drivers', with their text)."""

    __slots__ = ("text", "seen", "kept")

    def __init__(self) -> None:
        self.text: str | None = None
        self.seen: dict[tuple[int, int], list[tuple[int, tuple | None]]] = {}  # (length, hash) -> [(place, answer)]
        self.kept: tuple | None = None  # (the other text's: see extent.BracketIndex.kept)

    @staticmethod
    def of(index: BracketIndex) -> Spans:
        """The Spans kept on a BracketIndex (made the first time)."""
        if index.spans is None:
            index.spans = Spans()
        return index.spans

    def known(self, text: str, pos: int, span: str) -> Any:
        """The answer for span, being text[pos:pos + len(span)]; _UNSEEN where not asked."""
        if text is not self.text:
            kept, self.kept = self.kept, (self.text, self.seen)
            self.text, self.seen = kept if kept is not None and kept[0] is text else (text, {})
        key = (len(span), hash(span))
        for at, found in self.seen.get(key, ()):
            if text.startswith(span, at):
                return found
        # The other text's answers, compared at that text: the answer is the span's alone
        # (a region's drivers read the reply and the reply without the end-of-turn token
        # that ends it in turns, region._before_turn_end: the same values at the same
        # places, each read once per text before; fuzz seed 7 #9329795).
        other = self.kept
        if other is not None and other[0] is not None:
            for at, found in other[1].get(key, ()):
                if other[0].startswith(span, at):
                    return found
        return _UNSEEN

    def note(self, text: str, pos: int, span: str, exc: RepairError | None) -> tuple | None:
        """Keep what loads(span) raised (None: it read); its answer."""
        found = None if exc is None else (str(exc), getattr(exc, "at", None), getattr(exc, "unsettled", False))
        if text is self.text and text.startswith(span, pos):
            self.seen.setdefault((len(span), hash(span)), []).append((pos, found))
        return found

    def failure(self, text: str, pos: int, span: str) -> tuple | None:
        found = self.known(text, pos, span)
        return self.note(text, pos, span, failure(span)) if found is _UNSEEN else found

    def breaks_at(self, text: str, pos: int, span: str) -> int | None:
        """breaks_at(span), span being text[pos:pos + len(span)]."""
        found = self.failure(text, pos, span)
        return None if found is None else found[1]


_UNSEEN = object()


def breaks_at(text: str) -> int | None:
    """Where the lenient pass gives up on `text` (the end of the last token it read);
    None when loads() reads it."""
    found = failure(text)
    return None if found is None else getattr(found, "at", None)  # (set by the lenient pass where it gave up)


def failure(text: str) -> RepairError | None:
    """What loads(text) raises; None when it reads."""
    try:
        loads(text)
    except RepairError as exc:
        return exc
    return None


def loads(
    text: str, cut: bool = False, left_open: list | None = None, python: bool = False, owned: list | None = None
) -> tuple[Any, tuple[str, ...]]:
    """Decode the one JSON value that is the whole of text (surrounding whitespace allowed).

    Returns the value and the names of the repairs it needed, in the order
    first needed; () when json.loads read it as it stands. Raises RepairError
    when even the lenient pass cannot read it.

    `cut`: the text ends where the reply ended (the token limit, max_chars). Then
    a value the end cut short adds the repair cut_value: a string left open, a
    number or a word running to the very end (`12` may have been `1250`), a
    literal completed, a key with no value, or a `:`, a `,` or an opening bracket
    with nothing after it. Brackets closed around complete values are only
    closed_json. `left_open`, with cut: a list that gets the ids of the containers
    (dicts, lists) the end left open, outermost first. `python`: the text is a Python
    value, whose strings' escapes are Python's (see _Reader.unescape). `owned`: a list
    that, where the value is a list and the lenient pass read it, gets for each of its
    elements the repairs its own text needed, and those of no element in particular
    (outside the list: an extra bracket after it), as a tuple each: a list of calls
    records a repair on the call that needed it (an element left out: the one before;
    the end of the text: the last one).
    """
    if not isinstance(text, str):
        raise RepairError("payload is not text")
    if not text or text.isspace():
        raise RepairError("empty payload")
    lead = _LEAD_WORD.match(text)
    if lead is not None:
        word = lead.group(1)
        if word not in _LITERAL_STARTS:
            # A word first that is no literal, nor one the end cut short (`tru`): the
            # decoder reads a whole literal only, and the lenient pass stops at its first
            # token, unexpected (_Reader.literal), where it looked to the run of word and
            # number characters it starts. Told so without either pass: a reply that
            # mentions `<tool_call>` in prose a thousand times hands over a payload of
            # words at each, and read by both passes each cost 50 us (issue 17).
            raise _unexpected_word(word, max(lead.end(), _RUN.match(text, lead.start(1)).end()))
    # Deeper than MAX_DEPTH is refused, valid or not. The decoder goes first, then
    # the lenient pass, which counts its own depth and stops at the first thing it
    # cannot read: a reply full of markers whose brackets never close hands over a
    # payload that runs to its end, once per marker, and each is given up where it
    # breaks (a scan of its depth first would walk hundreds of brackets each time).
    # What either reads is then checked for depth anywhere in it.
    repeated = None
    try:
        value = _JSON.decode(text)
        repairs: tuple[str, ...] = ()
        if cut and not text[-1].isspace() and text[-1] not in '"]}':
            repairs = ("cut_value",)  # (a number or a literal alone, running to the end)
    except (ValueError, RecursionError):
        reader = _Reader(text, cut, python)
        if owned is not None:
            reader.owners = {}
        value, repairs = reader.read()
        if not python and "invalid_escape" in repairs and "python_literals" in repairs:
            # A Python value (its None, True, False read), whose "double-quoted" strings
            # are Python's too (repr writes a string holding a ' so): read again with
            # Python's escapes, which it used.
            reader = _Reader(text, cut, True)
            if owned is not None:
                reader.owners = {}
            value, repairs = reader.read()
        repeated = reader.repeated
        if left_open is not None:
            left_open.extend(reader.left_open)
        if owned is not None and isinstance(value, list) and value and reader.owners:
            owned.extend(_owned_by_element(reader.owners, len(value)))
    if _too_deep(text):
        raise RepairError(TOO_DEEP)
    if repeated is not None or (repairs == () and may_repeat(text, value)):
        _no_repeats(text, repeated)
    return value, repairs


def _owned_by_element(owners: dict, n: int) -> list[tuple]:
    """For each of a list's n elements, the repairs (in `owners`' order) its own text
    needed: a repair owned by -1 (no element in particular) is every element's, and one
    owned past the last element (the end of the text) the last one's. Each owner is
    visited once (a list whose every element needs the same repair, a trailing comma
    in each, has n owners of it: asked again per element, the square of it)."""
    last = n - 1
    names = tuple(owners)
    every = {r for r in names if -1 in owners[r]}
    own: list[set] = [set() for _ in range(n)]
    for r, at in owners.items():
        if -1 in at:
            continue
        for k in at:
            own[min(k, last)].add(r)
    return [tuple(r for r in names if r in mine or r in every) for mine in own]


# --- A key written twice ----------------------------------------------------------
#
# JSON keeps the last of a key written twice in an object (`{"city": "Paris", "city":
# "Rome"}`), dropping the first value with no word: which one the model meant, nothing
# tells (nor which tool, of `"name": "f", "name": "g"`). So the text cannot be read
# (as Python refuses `f(a=1, a=2)`), unless both values are the same. json.loads reads
# the well-formed payload as fast as ever: only one that may write a key twice (more
# `":` in it than its objects hold keys) is read again, with its keys in pairs.


def may_repeat(text: str, value: Any, _dict=dict, _list=list, _type=type) -> bool:
    """Whether `text`, which json.loads read as `value`, may write a key twice in an
    object: it holds more `":` and `" :` than `value`'s objects hold keys (one in a
    string counts too: then the text is read again for nothing). Told at a glance for
    a call object and its flat arguments."""
    written = text.count('":') + text.count('" :')
    if written < 2:
        return False
    if _type(value) is _dict:
        held = len(value)
        for v in value.values():
            if _type(v) is _dict:
                held += len(v)
        if held >= written:
            return False
    # (Nested deeper, or short of keys: all of them counted.)
    held = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if _type(v) is _dict:
            held += len(v)
            if held >= written:
                return False
            for x in v.values():
                if _type(x) is _dict or _type(x) is _list:
                    stack.append(x)
        elif _type(v) is _list:
            for x in v:
                if _type(x) is _dict or _type(x) is _list:
                    stack.append(x)
    return True


def given_twice(key: str, first: Any, then: Any) -> str:
    """Why a text that gives `key` twice, `first` then `then`, cannot be read."""

    def shown(v: Any) -> str:
        return "{…}" if type(v) is dict else "[…]" if type(v) is list else _show_json(v)

    return f"{_show_json(key)} is given twice ({shown(first)}, then {shown(then)})"


def _show_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 24 else text[:23] + "…"


def _pairs(pairs: list) -> dict:
    found = dict(pairs)
    if len(found) < len(pairs):
        seen: dict = {}
        for key, value in pairs:
            if key in seen and seen[key] != value:
                raise RepairError(given_twice(key, seen[key], value))
            seen[key] = value
    return found


_JSON_PAIRS = _Bounded(strict=False, parse_float=_finite_float, parse_constant=_no_constant, object_pairs_hook=_pairs)


def slipped_end(text: str, pos: int, final: bool = True) -> int | None:
    """Where the JSON object or list at pos ends when the model closed a string in it
    with the other quote (`{"a": "x'} Then it's fine.`: repair mismatched_quote, as
    _Reader.slip tells it) and its brackets close after that: past its last closer,
    with more than blanks after it. None where the lenient pass, reading it so, breaks,
    never closes it, needs no such quote, or only blanks follow its close (the end of
    the reply may have cut the string there: cut_value). -1 (not final) where the
    text so far cannot tell: what follows the other quote or the string's own quote
    may go on otherwise (_Reader.unsettled), or only blanks follow the close yet.
    A payload with no end marker (Mistral's `[ARGS]{…}`) ends there, as one its end
    marker closed reads (QA22 D9), not with the prose after it taken into the string.
    Reads the value once, up to where it closes or breaks."""
    reader = _Reader(text[pos:])
    reader.stop_at_close = True
    try:
        reader.read()
    except (RepairError, RecursionError):
        return None
    if reader.stopped < 0 or "mismatched_quote" not in reader.repairs:
        return None
    end = pos + reader.stopped
    if not final and reader.unsettled:
        return -1
    if _BLANKS.match(text, end).end() == len(text):
        return None if final else -1
    return end


def decode_at(text: str, pos: int) -> tuple[Any, int]:
    """The well-formed JSON value at pos and where it ends, as loads reads one (raw
    line breaks in strings, NaN refused); ValueError (RepairError where an object in
    it gives a key twice with two values) where there is none."""
    return _JSON_PAIRS.raw_decode(text, pos)


def _no_repeats(text: str, repeated: tuple | None) -> None:
    """Raise RepairError where an object of `text` gives a key twice with two values
    (`repeated`: the first such the lenient pass met, as (key, first, then))."""
    if repeated is not None:
        raise RepairError(given_twice(*repeated))
    try:
        _JSON_PAIRS.decode(text)
    except RepairError:
        raise
    except (ValueError, RecursionError):
        pass


def cut_short(text: str) -> bool:
    """Whether the JSON or Python value `text`, where the reply ended (its trailing
    whitespace, if any, included), was cut short by that end (see loads: a string
    left open, a number or word running to the very end, …). Text the lenient pass
    cannot read (a bare word, an expression) is cut unless a quote, a bracket or
    whitespace ends it."""
    if not text or text.isspace():
        return True
    quote = triple_quote(text, 0)
    if quote is not None and triple_end(text, 0, quote) is None:
        return True  # (a triple-quoted string left open: its quotes inside are its text)
    try:
        return "cut_value" in loads(text, True)[1]
    except RepairError:
        return not text[-1].isspace() and text[-1] not in "\"'})]"
