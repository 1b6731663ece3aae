"""Streaming waits: whether a regex terminal's match may still grow, and, for the
unrolled-loop shape `[^E]*(?:X[^E]*)*`, a wait that lets deltas without a
character of E pass unlexed (_LoopWait), so such a token streams in linear time.
The shape is read with the `re` module's own pattern parser (private stdlib:
re._parser), imported on first use; without it no pattern is taken for a loop
(the slow path, lexing again, stays correct). What a terminal's pattern gives
(its atomic form, its loop shape) is kept on the terminal (Terminal.atomic,
Terminal.loop): it dies with its format."""

from __future__ import annotations

import re

import regex

from .._grammar.regex_loops import reads_to
from .._grammar.words import lazy


def _could_grow(t, buf: str, pos: int) -> bool:
    """Could more text change what t's pattern matches at pos? Only if the engine,
    before settling on its match, tried a way that ran into the end of the text:
    a partial full match of the pattern made atomic (`(?>P)`, so it does not
    backtrack over the match to look for other full matches: fast) says so.
    (t.atomic: compiled once, kept on the terminal.)"""
    atomic = t.atomic
    return atomic.fullmatch(buf, pos, partial=True) is not None


# -- scanning a growing token without starting over ---------------------------

# The characters a bracket scan stops at, and the inside of a quoted string up to


class _Hold:
    """A wait that no delta ends by itself (Driver.recheck ends it)."""

    __slots__ = ()

    def absorbs(self, text: str, n: int) -> bool:
        return True


_HOLD = _Hold()


class _QuoteWait:
    """A failure settled but for the text its reason quotes (tokens._SNIPPET characters
    after its place: Driver.told): a delta that leaves the text no longer than `upto`
    changes nothing. Each delta ran the driver again to find the same failure: a reply
    that opens with a word and a line break (`Sure\nHere…`) is a reply-anchored format's
    name (Mistral's `NAME[ARGS]`) that fails at the next line, and twenty 1-character
    deltas each cost a driver run (issue 17: 25 µs a delta, the budget 10)."""

    __slots__ = ("upto",)

    def __init__(self, upto: int) -> None:
        self.upto = upto

    def absorbs(self, text: str, n: int) -> bool:
        return n + len(text) <= self.upto


_JSON_SPACE = lazy(re.compile, r"[ \t\n\r]*")
# (The flag as an int: a pattern's `flags` is one, and `int & regex.IGNORECASE` goes
# through the enum's Python-level __and__ and constructor, 1.6 µs, at each wait made.)
_IGNORECASE = int(regex.IGNORECASE)
# A JSON decoding error this far before the end of the text is one more text cannot
# undo (the decoder looks at most a few characters past where it stops).
_SETTLED = 8


class _LoopWait:
    """A regex terminal whose match runs to the end of the text, inside a loop of a
    negated class `[^E]*`: text with no character of E cannot end it (see _loop)."""

    __slots__ = ("exits", "last", "looks", "resume", "token", "width")

    def __init__(self, exits: re.Pattern[str], width: int, last: int) -> None:
        self.exits = exits
        self.width = width
        self.last = last  # the last character of E in the match, or -1 (none near the end)
        self.resume: tuple | None = None  # (position, pattern to match from there, None: t's)
        self.token = -1  # where the token starts, for a fast frame that reads it on (Frame._resumed)
        self.looks: dict | None = None  # (a fast frame's record of settled looks, as a driver's: see _looks_settled)

    def absorbs(self, text: str, n: int) -> bool:
        if self.exits.search(text) is not None:
            return False
        # After an E character the pattern reads up to `width` characters outside
        # its loops (`<(?!/?tool_call>)`): the text may decide those.
        return self.last < 0 or n - self.last > self.width


def _loop_wait(t, buf: str, at: int, n: int, start: int | None = None, looks: dict | None = None) -> _LoopWait | None:
    """A _LoopWait for t's match from `at` (the token's start, or where its match was
    resumed) to the end of the text, n; None when t's pattern has not that shape.
    `start`: the token's start (default `at`). `looks`: a driver's record of how far
    the looks of its tokens' E characters were found settled (see _looks_settled)."""
    info = t.loop  # (_loop of its pattern, kept on the terminal)
    if info is None:
        return None
    exits, chars, width, tail, lead, loop, space, reads = info
    if start is None:
        start = at
    if space is not None:
        start = space.match(buf, start).end()  # (where P starts, after the leading run)
        if start >= n:
            return None  # (the run so far: re-lexed)
    if lead and n - start <= width:
        return None  # (a short token, whose start P may still be in question: re-lexed)
    # Every character of E from here on starts one X (those before may be P's).
    past = start + lead
    # Only the last `width` characters matter for what comes next.
    lo = max(at, n - width - 1)
    # (One character of E, the common case, found without a generator: a wait is made at
    # each delta that brings one.)
    last = buf.rfind(chars[0], lo, n) if len(chars) == 1 else max(buf.rfind(c, lo, n) for c in chars)
    if last >= 0 and looks is not None and past <= n - width - 1 and not t.pattern.flags & _IGNORECASE:
        last = _looks_settled(t, chars, reads, buf, lo, n, start, looks, last)
    wait = _LoopWait(exits, width, last)
    # A later place to match from next time, as the whole match would go on from
    # there: inside a [^E]* loop (with no character of E near), with the pattern
    # (or, after a start P, the loop and the tail); or at a character of E that X
    # has read for good, with the tail `(?:X[^E]*)*`.
    if last < 0:
        if n - 1 > at and n - 1 >= past:
            wait.resume = (n - 1, loop)
    else:
        e = buf.rfind(chars[0], at, n - width - 1) if len(chars) == 1 else max(buf.rfind(c, at, n - width - 1) for c in chars)
        if e > at and e >= past:
            wait.resume = (e, tail)
    return wait


def _looks_settled(t, chars: str, reads, buf: str, lo: int, n: int, start: int, looks: dict, last: int) -> int:
    """`last`, or -1 where what X reads at each character of E from lo on ends before
    the end of the text (regex_loops.reads_to, as nest._settled asks it): no text
    without a character of E then changes the match, however near the end those
    characters are. (Only `width` back was asked: Kimi K3's VALUE may look 1,579
    characters on, so a value of tags after a call then prose, `</parameter>` lines,
    was matched again from 1,579 characters back at each character a stream brought:
    QA11 D7.) The place from which they are not known settled is kept per token in
    `looks` (a look settled stays so as the text grows): each is asked once it is."""
    memo = looks.get(t.name)
    at = max(lo, memo[1]) if memo is not None and memo[0] == start else lo
    while True:
        if len(chars) == 1:
            q = buf.find(chars[0], at, n)
            if q < 0:
                q = n
        else:
            q = min((i for c in chars if (i := buf.find(c, at, n)) >= 0), default=n)
        if q >= n:
            looks[t.name] = (start, n)
            return -1
        if reads_to(reads, buf, q) >= n:
            looks[t.name] = (start, q)
            return last
        at = q + 1
