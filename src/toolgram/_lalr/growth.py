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

    __slots__ = ("exits", "last", "looks", "resume", "token", "width", "near", "first", "info", "owner")

    def __init__(self, exits: re.Pattern[str], width: int, last: int) -> None:
        self.exits = exits
        self.width = width
        self.last = last  # the last character of E in the match, or -1 (none near the end)
        self.resume: tuple | None = None  # (position, pattern to match from there, None: t's)
        self.token = -1  # where the token starts, for a fast frame that reads it on (Frame._resumed)
        self.looks: dict | None = None  # (a fast frame's record of settled looks, as a driver's: see _looks_settled)
        # Where the looks were asked (_looks_settled) and one was not settled: the text
        # from a little before that character of E (X's look-behinds) to the end, where
        # that character is in it, and the terminal's loop (t.loop); else None.
        self.near: str | None = None
        self.first = 0
        self.info: tuple | None = None
        self.owner: tuple | None = None  # (a driver's resume memo, the terminal's name, the token's start)

    def absorbs(self, text: str, n: int) -> bool:
        if self.exits.search(text) is not None:
            return False
        # After an E character the pattern reads up to `width` characters outside
        # its loops (`<(?!/?tool_call>)`): the text may decide those.
        if self.last < 0 or n - self.last > self.width:
            return True
        if self.near is None or not text or not self._settles(self.near + text):
            return False
        # The wait the driver would make at the end of this text (see _settles), and
        # where it would match the token from next: inside the loop, at its last
        # character (_loop_wait). (Not from the character of E before the window, as the
        # reading that made this wait left it: each `<` a stream brought would match the
        # token again over `width` characters, 278 for MiniMax's VALUE.)
        self.last = -1
        self.near = None
        self.resume = (n + len(text) - 1, self.info[5])
        if self.owner is not None:
            memo, name, pos = self.owner
            memo[name] = (pos, *self.resume)
        return True

    def _settles(self, s: str) -> bool:
        """Whether, with this delta, the looks of the characters of E from the first one
        not settled on are all settled (as _looks_settled asks: reads_to) and X matches at
        each of them: the match runs to the end of the text, and the wait the driver's
        reading of the text would make (_loop_wait, with its looks) has no character of
        E near the end (last -1). Then the delta changes nothing: the reading would wait
        on the same token from the same place, with that wait; absorbed, the driver reads
        on later from where it stopped, as after a delta that brought more text at once.
        (Each character a stream brought after a `<` within `width` of the end ran the
        driver again, though `<b` tells it no closer: a MiniMax value of tags left open,
        3 deltas in 4 read again, 19 µs a delta (issue 17).)"""
        _exits, chars, _width, tail, _lead, _loop, _space, reads = self.info
        n = len(s)
        if _unsettled(reads, chars, s, self.first, n, n + 1) < n:
            return False  # (a look reads past the text: more text may change it)
        m = tail.match(s, self.first)
        return m is not None and m.end() == n


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
    asked = last >= 0 and looks is not None and past <= n - width - 1 and not t.pattern.flags & _IGNORECASE
    if asked:
        last = _looks_settled(t, chars, reads, buf, lo, n, start, looks, last)
    wait = _LoopWait(exits, width, last)
    if asked and last >= 0 and reads.back <= _BACK:
        # (Kept to ask again with each delta: _LoopWait.absorbs.)
        q = looks[t.name][1]  # (the first character of E whose look is not settled)
        b = max(0, q - reads.back - 1)
        wait.near = buf[b:n]
        wait.first = q - b
        wait.info = info
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


# The most look-behind a _LoopWait keeps text for (see absorbs).
_BACK = 64


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
    q = _unsettled(reads, chars, buf, at, n, n)
    looks[t.name] = (start, q)
    return -1 if q >= n else last


def _unsettled(reads, chars: str, buf: str, at: int, n: int, edge: int) -> int:
    """The first character of E in buf[at:n] whose look (regex_loops.reads_to) reads to
    `edge` or past, else n: _looks_settled's question (edge n: the look must end before
    the text's end) and _LoopWait._settles' (edge n + 1: it may end at it)."""
    while True:
        if len(chars) == 1:
            q = buf.find(chars[0], at, n)
            if q < 0:
                return n
        else:
            q = min((i for c in chars if (i := buf.find(c, at, n)) >= 0), default=n)
            if q >= n:
                return n
        if reads_to(reads, buf, q) >= edge:
            return q
        at = q + 1
