"""Bracket scanning in one place: where a JSON value, or a Python argument value,
that starts at a position ends, quotes respected, without parsing it.

Three forms answer the same question, each for its caller's speed:
 - value_end / scalar_end: one scan of the text (the builder, the lenient pass);
 - BracketIndex (over _Run): value_end for many starts in one text, shared by
   the drivers of a reply; and, by its StopIndex (over _StopTrace), scalar_end
   for a Python argument value (BracketIndex.argument_end);
 - _Extent: resumable, for a token that grows in a stream (Driver._lex).
They must give the same answers; tests/test_repair.py checks value_end,
scalar_end, BracketIndex and StopIndex (and the corpus, streamed and whole, the rest).
Strings are read by _STRING here, and by _STRING_BODY in _Extent (the same
bodies, without the closing quote; _Extent tells an apostrophe itself).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from typing import Any

from .jsonscan import scan_json
from .._grammar.words import lazy

_OPENERS = "{[("
_CLOSERS = "}])"
_QUOTES = "\"'"

# A "double" or 'single' quoted string with backslash escapes. Unrolled so it
# never backtracks; the closing quote is optional, so a string that never
# closes runs to the end of the text (minus a lone trailing backslash) instead
# of failing, which would send the regex engine back to rescan its inside.
# Group 1 or 2 is set only when the string closes. In a 'single-quoted' string a
# quote with a letter or digit right after it is an apostrophe, not its end
# ('It's fresh', 'O'Brien'): text that Python could not read either way, and that
# small models write often. (Driver's _Extent reads strings the same way.)
_STRING = r"""
    "[^"\\]*(?:\\.[^"\\]*)*(")?
  | '[^'\\]*(?:(?:\\.|'(?=[^\W_]))[^'\\]*)*(')?
"""

# Strings and brackets, found by the regex engine so that runs of ordinary
# characters are skipped in C. lastindex: None for a string that never
# closes, 1-2 for a closed string, 3 for a run of openers, 4 for a run of closers
# (a run one match: 32 KB of `[[[…]]]` is two, not 32,000 turns of the loops below).
_BRACKET_SCAN = lazy(re.compile, _STRING + r"| ([\[{(]+) | ([\]})]+)", re.S | re.X)

# Everything except brackets outside strings.
_NOT_BRACKET = lazy(re.compile, r"""[^"'()\[\]{}]+ |""" + _STRING, re.S | re.X)
_DEPTH_STEP = {"[": 1, "{": 1, "(": 1, "]": -1, "}": -1, ")": -1}


def value_end(text: str, pos: int) -> int | None:
    """Index just past the bracket that closes the one at text[pos].

    "double" and 'single' quoted strings (with backslash escapes) are skipped.
    Closers are counted, not matched against their openers, so `[1}` closes:
    telling mismatches apart is the parser's job. None when the text ends
    first, or when text[pos] is not an opening bracket.
    """
    if not 0 <= pos < len(text) or text[pos] not in _OPENERS:
        return None
    # Where the JSON decoder reads a whole value, the brackets end where it does (it
    # skips the same strings); it is many times faster than the scan below.
    try:
        return scan_json(text, pos)[1]
    except (StopIteration, ValueError):
        pass
    except RecursionError:
        # (Nested deeper than the decoder reads. Where no closer follows at all, nothing
        # closes it: the scan below would read every opener to the end to say so.)
        if _last_closer(text, pos, len(text)) < 0:
            return None
    depth = 0
    for m in _BRACKET_SCAN.finditer(text, pos):
        kind = m.lastindex
        if kind == 3:
            depth += m.end() - m.start()
        elif kind == 4:
            if depth <= m.end() - m.start():
                return m.start() + depth  # (past the closer of the run that brings it to 0)
            depth -= m.end() - m.start()
        elif kind is None:
            # A string that never closes. An apostrophe in prose
            # (`{"a": it's}`) opens one of those too; either way, no end.
            return None
    return None


def _last_closer(text: str, start: int, end: int) -> int:
    """Where the last `]`, `}` or `)` in text[start:end] is, -1: none (three searches
    from the end, in C: each stops at its last closer)."""
    return max(text.rfind("]", start, end), text.rfind("}", start, end), text.rfind(")", start, end))


def open_before(text: str, pos: int, at: int) -> bool:
    """Whether the bracketed value at text[pos], which never closes (value_end: None),
    read up to `at` is still open there outside any string, its last token a closing
    bracket with blanks alone after it: its own close left out right before what
    begins at `at` (`{"name": "g", "arguments": {"a": 1}\n` before another call)."""
    depth = 0
    last = 0
    for m in _BRACKET_SCAN.finditer(text, pos, at):
        kind = m.lastindex
        if kind is None:
            return False  # (a string open at `at`: what begins there is its text)
        if kind == 3:
            depth += m.end() - m.start()
        elif kind == 4:
            depth -= m.end() - m.start()
            if depth <= 0:
                return False  # (at the run's closer that brought it to 0, or before)
        last = m.end() if kind == 4 else 0
    return depth > 0 and last > 0 and (last == at or text[last:at].isspace())


def twin_close(text: str, close: int) -> int:
    """The list's `]` after a Python value whose call never closed, where the value's
    scan found a `]` at `close`: the next character where it is a `]` too. `]]` right
    after a value is the call's `)` written as a `]`, then the list's own (QA24c R2:
    `[f(a="x"]]` is the call, its `]]` markup, as `[f(a="x")]` is), not a list closed
    and a `]` of prose after it."""
    return close + 1 if text.startswith("]", close + 1) else close


def twin_before(text: str, pos: int, end: int) -> int:
    """Where the second `]` of `]]` is, that pair's first `]` the first closer at depth 0
    of the Python argument value at pos, before `end`, where a `,` or `)` ends it
    (scalar_end): the call's `)` written as a `]`, then the list's (twin_close); -1
    where there is none. Only the first `]]` in it is looked at, and the text up to it:
    the value's own, read once."""
    j = text.find("]]", pos, end)
    if j < 0 or scalar_end(text[pos : j + 1], 0, "]") != j - pos:
        return -1
    return j + 1


class BracketIndex:
    """value_end() for many places in one text, in linear time overall.

    A reply with many markers whose brackets never close (`<TOOLCALL>[@` again and
    again) asks where a value ends once per marker, each answer scanning to the end
    of the text: quadratic. Here each token (a string, an opener, a closer) is read
    once. A scan from a place (a _Run) notes each token it finds, by where it starts;
    from a token on, every scan that meets it sees the same tokens (the token a scan
    finds at a place does not depend on where the scan began), so a run that meets a
    token another run noted stops there and goes on as that run (a link). A place a
    run passed as an opener gets its answer from that run: a scan started there
    would see the same strings and brackets. One no run reached as a token (inside
    a string of every run that passed it, or never reached) starts a run of its own;
    in a storm of calls quoted in string values (`"content": "… {\\"name\\": …"`), a
    run from a quoted call's brace meets the outer run's tokens within a string or
    two, where a scan of its own would read on to the end of the text.

    A run's tokens are told by height: openers minus closers before each, counted
    from the run's start (closers are counted, not matched, as in value_end). The
    opener at token i closes at the first closer after it that brings the height back
    to its own, in its run or, past the link, in the run it links to (whose heights
    differ from its own by the link's offset). A string that never closes is read
    once: a later string of its quote (inside it, or it would have closed) never
    closes either (see StopIndex)."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.tokens: dict[int, tuple[_Run, int]] = {}  # a token's start -> its run and index there
        self.unclosed: dict[str, int] = {}  # quote -> where a string of it that never closes starts
        self.arguments: StopIndex | None = None
        self.argument_last: tuple | None = None  # (argument_end's last: the text, pos, its answer)
        self.list_closes: StopIndex | None = None  # (list_close's)
        self.last_bracket: tuple | None = None  # (list_close's: a text, where its last `]` is)
        self.last_closer: tuple | None = None  # (end's: a text, where its last closer is)
        self.spans: Any = None  # _repair.Spans, for the same drivers (see _lalr/close.py cut)
        # The other text's (text, tokens, unclosed): a region's drivers may read the reply
        # and the reply without the end-of-turn token that ends it (region._before_turn_end)
        # in turns; begun anew at each turn, calls whose braces never close were scanned to
        # the end once per call (fuzz seed 7 #9329795: 214 ms at 32 KB).
        self.kept: tuple | None = None
        self.alias: tuple[str, str] | None = None  # (a text, the text whose answers are its own: _same_as)

    def _same_as(self, text: str) -> str:
        """The text whose answers are text's: the other one known, where one of the two is
        the other and a tail that holds no token, no quote nor bracket (the reply, and the
        reply without the end-of-turn token that ends it: region._before_turn_end), so that
        a scan of either reads the same tokens and finds nothing after the shorter one's
        end (a place in the tail opens nothing either); else text itself. A region's
        drivers read the two in turns, and each was scanned whole (fuzz seed 7 #9329795:
        3,844 tokens read for 1,922). (Asked once per new text: the answer is kept in alias;
        a tail longer than an end-of-turn token and its blanks is not looked at, the texts
        then scanned each, as before.)"""
        alias = self.alias
        if alias is not None and alias[0] is text:
            return alias[1]
        for other in (self.text, self.kept[0] if self.kept is not None else None):
            if other is None or not 0 < abs(len(other) - len(text)) <= _ALIAS_TAIL:
                continue
            short, long = (text, other) if len(text) < len(other) else (other, text)
            if _TOKEN_START.search(long, len(short)) is None and long.startswith(short):
                self.alias = (text, other)
                return other
        return text

    def argument_end(self, text: str, pos: int) -> int | None:
        """Where a Python argument value at pos ends, scalar_end(text, pos, ",)"); None
        where no stop follows (the end of the text), as a scan that runs there says."""
        # Most values end soon: a scan of the next characters finds where, as a scan of
        # the whole text would (a stop it finds follows tokens that all end before it).
        # But where the index's trace has already passed pos, it tells at once: a storm
        # of values that never end (`[f(a="x"] [g(b=1)]`, one a line: each line's
        # brackets a level deeper) scanned a window each, to find no stop in it.
        # (The last answer is kept: a Python list's reader asks of a value where it ends,
        # then the driver's lexer asks the same of it: _scan/pyframe.py _lone, Driver._lex.)
        last = self.argument_last
        if last is not None and last[0] is text and last[1] == pos:
            return last[2]
        index = self.arguments
        if index is not None:
            end = index.passed(text, pos)
            if end is not None:
                end = end if end < len(text) else None
                self.argument_last = (text, pos, end)
                return end
        window = text[pos : pos + 256]
        end = scalar_end(window, 0, ",)")
        if end < len(window):
            self.argument_last = (text, pos, pos + end)
            return pos + end
        if self.arguments is None:
            self.arguments = StopIndex(",)")
        end = self.arguments.end(text, pos)
        end = end if end < len(text) else None
        self.argument_last = (text, pos, end)
        return end

    def list_close(self, text: str, pos: int) -> int | None:
        """Where the first `]` at bracket depth 0 outside strings is after pos,
        scalar_end(text, pos, "]"), the second of `]]` there (twin_close); None where
        none is. After a Python argument value whose call never closes, it is the list's
        `]` with the call's `)` left out (salvage.list_closed, Driver.listed); asked of
        each such value once, by one index for all."""
        last = self.last_bracket
        if last is None or last[0] is not text:
            last = self.last_bracket = (text, text.rfind("]"))
        if last[1] < pos:
            return None  # (no `]` after pos at all: no scan of the brackets to the end)
        # Most lists close soon: a scan of the next characters finds where, as a scan of
        # the whole text would (as argument_end's), and the index's one trace is not taken
        # on from where it was to pos (a storm's last regions, read past the memo's).
        window = text[pos : pos + 256]
        end = scalar_end(window, 0, "]")
        if end < len(window):
            return twin_close(text, pos + end)
        if self.list_closes is None:
            self.list_closes = StopIndex("]")
        end = self.list_closes.end(text, pos)
        return twin_close(text, end) if end < len(text) else None

    def end(self, text: str, pos: int) -> int | None:
        if text is not self.text:
            text = self._same_as(text)
        if text is not self.text:
            kept, self.kept = self.kept, (self.text, self.tokens, self.unclosed)
            if kept is not None and kept[0] is text:
                self.text, self.tokens, self.unclosed = kept
            else:
                self.text, self.tokens, self.unclosed = text, {}, {}
        if not 0 <= pos < len(text) or text[pos] not in _OPENERS:
            return None
        last = self.last_closer
        if last is None or last[0] is not text:
            last = self.last_closer = (text, _last_closer(text, 0, len(text)))
        if last[1] < pos:
            # (No closer after pos at all: nothing closes it. A run would read every token
            # to the end to say so: 32 KB of `[` after a marker, a token each, took 45 ms.)
            return None
        found = self.tokens.get(pos)
        if found is None:
            run = _Run(text, pos)
            run.step(self)  # (the opener at pos: no run has noted it)
            found = run, 0
        run, i = found
        level = run.heights[i] + 1  # (the closer that ends it comes at the height after it)
        i += 1
        while True:
            closers = run.closers.get(level)
            if closers is not None:
                k = bisect_left(closers, i)
                if k < len(closers):
                    return run.starts[closers[k]] + 1
            if run.link is None and not run.done and run.scan_to(self, level):
                return run.starts[-1] + 1
            if run.link is None:
                return None  # (the end of the text, or a string that never closes)
            run, i, offset = run.link
            level -= offset


_TOKEN_START = lazy(re.compile, r"""["'\[\]{}()]""")
# The longest tail BracketIndex._same_as looks at: an end-of-turn token and blanks.
_ALIAS_TAIL = 64


class _Run:
    """One bracket scan of a text from `start` on, for BracketIndex, taken as far as
    asked, up to the end of the text, a string that never closes, or a token another
    run noted (then `link`: that run, the token's index there, and the offset from
    that run's heights to this one's)."""

    __slots__ = ("text", "at", "height", "starts", "heights", "closers", "link", "done")

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.at = start  # scanned up to here
        self.height = 0
        self.starts: list[int] = []  # each token's start
        self.heights: list[int] = []  # the height before each token
        self.closers: dict[int, list[int]] = {}  # height before a closer -> their token indexes
        self.link: tuple[_Run, int, int] | None = None
        self.done = False

    def step(self, index: BracketIndex) -> bool:
        """Read the next token (noted in index, which holds the runs: a run holds none of
        it, so that no cycle waits for the collector); whether it was a closer."""
        text = self.text
        m = _TOKEN_START.search(text, self.at)
        if m is None:
            self.done = True
            self.at = len(text)
            return False
        at = m.start()
        found = index.tokens.get(at)
        if found is not None:  # (from here on, that run's tokens)
            run, j = found
            self.link = run, j, self.height - run.heights[j]
            return False
        ch = text[at]
        end = at + 1
        if ch in _QUOTES:
            since = index.unclosed.get(ch, -1)
            if 0 <= since <= at:
                self.done = True
                return False
            string = _STRING_MATCH(text, at)
            if string.lastindex is None:
                index.unclosed[ch] = at
                self.done = True
                return False
            end = string.end()
        i = len(self.starts)
        self.starts.append(at)
        self.heights.append(self.height)
        index.tokens[at] = self, i
        self.at = end
        if ch in _OPENERS:
            self.height += 1
        elif ch in _CLOSERS:
            closers = self.closers.get(self.height)
            if closers is None:
                closers = self.closers[self.height] = []
            closers.append(i)
            self.height -= 1
            return True
        return False


    def scan_to(self, index: BracketIndex, level: int) -> bool:
        """step() until a closer read at height `level` (True: it is the run's last token),
        a link, or the run's end (False). One loop, its state in locals: a call of step()
        a token cost ~1.4 µs, and a value nested 32 KB deep is 32,000 tokens."""
        text, tokens, starts, heights, unclosed = self.text, index.tokens, self.starts, self.heights, index.unclosed
        search = _TOKEN_START.search
        height, at = self.height, self.at
        while True:
            m = search(text, at)
            if m is None:
                self.done = True
                self.height, self.at = height, len(text)
                return False
            tok = m.start()
            found = tokens.get(tok)
            if found is not None:  # (from here on, that run's tokens)
                run, j = found
                self.link = run, j, height - run.heights[j]
                self.height, self.at = height, at
                return False
            ch = m.group()
            end = tok + 1
            if ch in _QUOTES:
                since = unclosed.get(ch, -1)
                string = None if 0 <= since <= tok else _STRING_MATCH(text, tok)
                if string is None or string.lastindex is None:
                    if string is not None:
                        unclosed[ch] = tok
                    self.done = True
                    self.height, self.at = height, at
                    return False
                end = string.end()
            tokens[tok] = self, len(starts)
            starts.append(tok)
            heights.append(height)
            at = end
            if ch in _OPENERS:
                height += 1
            elif ch in _CLOSERS:
                closers = self.closers.get(height)
                if closers is None:
                    closers = self.closers[height] = []
                closers.append(len(starts) - 1)
                height -= 1
                if height + 1 == level:
                    self.height, self.at = height, at
                    return True


_UNKNOWN = object()


class StopIndex:
    """scalar_end(text, pos, stops) for many places in one text, in linear time overall.

    A reply of many calls whose argument value never ends (`f.call(q="Men` again and
    again: each quote opens a string that the next call's quote closes) asks where a
    value ends once per call, each answer scanning to the end of the text: quadratic.
    Here one scan (a trace), taken as far as a question needs, runs on through the
    whole text: brackets nest (a closer at depth 0 is passed over), and each stop, and
    each closer that brings a level down, is noted at the depth it comes at. A scan
    from a place the trace passed outside a string sees the same strings and brackets
    from there on, at depth 0 where the trace is at its depth d: it ends at the first
    stop the trace meets at depth d. A closer the trace meets at depth d (the level
    ends) is one that scan passes over, at its depth 0: from there on it is the scan
    of the place after it. A place the trace saw inside a string, or never reached
    from its start, starts a trace of its own (a few are kept).

    A string that never closes is read once: a later string of its quote (inside it,
    or it would have closed) never closes either, from its next character on it reads
    the same text the same way. (A 'single-quoted' one with apostrophes in it runs on
    over every later quote of its kind followed by a letter: each trace would read it
    to the end of the text, and each call's value may start a trace.)"""

    _KEEP = 8

    def __init__(self, stops: str) -> None:
        self.stops = "".join(c for c in stops if c not in _QUOTES)
        self.search = re.compile("[" + re.escape(_QUOTES + self.stops + _OPENERS + _CLOSERS) + "]").search
        self.text: str | None = None
        self.traces: list[_StopTrace] = []
        self.unclosed: dict[str, int] = {}  # quote -> where a string of it that never closes starts
        self.kept: tuple | None = None  # (the other text's: see BracketIndex.kept)

    def passed(self, text: str, pos: int) -> int | None:
        """end(text, pos) where a trace of this text has already passed pos outside a
        string (the answer then costs a look-up, and the trace's scan on from where it
        stopped, which it would take anyway); None: no trace tells at once."""
        if text is not self.text:
            return None
        for trace in self.traces:
            if trace.start <= pos < trace.at:
                found = trace.end(pos)
                if found is not _UNKNOWN:
                    return found
        return None

    def end(self, text: str, pos: int) -> int:
        if text is not self.text:
            kept, self.kept = self.kept, (self.text, self.traces, self.unclosed)
            if kept is not None and kept[0] is text:
                self.text, self.traces, self.unclosed = kept
            else:
                self.text, self.traces, self.unclosed = text, [], {}
        pos = max(pos, 0)
        if pos >= len(text):
            return len(text)
        for trace in self.traces:
            if trace.start <= pos:
                found = trace.end(pos)
                if found is not _UNKNOWN:
                    return found
        trace = _StopTrace(self, text, pos)
        self.traces = [trace, *self.traces[: self._KEEP - 1]]
        return trace.end(pos)


_STRING_MATCH = lazy(re.compile, _STRING, re.S | re.X).match  # (lastindex None: it never closes)


class _StopTrace:
    """One scan of a text from `start` on for StopIndex, taken as far as asked: the
    tokens of scalar_end's scan (_stop_scan), found one by one."""

    __slots__ = ("index", "text", "start", "at", "depth", "starts", "ends", "depths", "levels", "done", "memo")

    def __init__(self, index: StopIndex, text: str, start: int) -> None:
        self.index = index
        self.text = text
        self.start = start
        self.at = start  # scanned up to here
        self.depth = 0
        # Each string, stop and bracket: where it starts, where it ends (a string that
        # never closes: past the end of the text), the depth before it.
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.depths: list[int] = []
        # depth -> the stops met at that depth and the closers that end it, in order:
        # ([their places], [whether a stop]).
        self.levels: dict[int, tuple[list[int], list[bool]]] = {}
        self.done = False  # at the end of the text, or of a string that never closes
        self.memo: dict[int, int] = {}  # place -> its answer

    def end(self, pos: int) -> Any:
        """scalar_end from pos; _UNKNOWN where the trace passed pos inside a string."""
        if not self.done and self.at <= pos:
            self._steps(pos, -1)
        starts = self.starts
        i = bisect_left(starts, pos)  # (the first token from pos on)
        if i and pos < self.ends[i - 1]:
            return _UNKNOWN  # (inside a string here, or in one that never closes)
        depth = self.depths[i] if i < len(starts) else self.depth
        seen = []
        while True:
            found = self.memo.get(pos)
            if found is not None:
                break
            seen.append(pos)
            # The first stop at this depth from pos on, or the closer that ends the level.
            level = self.levels.get(depth)
            if not self.done and (level is None or level[0][-1] < pos):
                # (The trace is past pos: what it notes at this depth now comes after pos.)
                self._steps(pos, depth)
                level = self.levels.get(depth)
            k = bisect_left(level[0], pos) if level is not None else 0
            if level is None or k == len(level[0]):
                found = len(self.text)
                break
            at = level[0][k]
            if level[1][k]:
                found = at
                break
            pos, depth = at + 1, depth - 1  # (a closer, passed over at depth 0)
        for p in seen:
            self.memo[p] = found
        return found

    def _steps(self, pos: int, want: int) -> None:
        """_step() while the trace is at or before pos (want -1), or until it notes a stop
        or closer at depth `want`, or to its end. One loop, its state in locals: a call of
        _step() a token took ~1 µs, and a value nested 32 KB deep is 32,000 tokens, each
        asked about."""
        text, index, starts, ends, depths, levels = self.text, self.index, self.starts, self.ends, self.depths, self.levels
        stops, search, unclosed = index.stops, index.search, index.unclosed
        depth, at = self.depth, self.at
        n = len(text)
        while want >= 0 or at <= pos:
            m = search(text, at)
            if m is None:
                self.done = True
                at = n
                break
            tok = m.start()
            ch = m.group()
            starts.append(tok)
            depths.append(depth)
            if ch in _QUOTES:
                since = unclosed.get(ch, -1)
                if not 0 <= since <= tok:
                    string = _STRING_MATCH(text, tok)
                    if string.lastindex is not None:
                        at = string.end()
                        ends.append(at)
                        continue
                    unclosed[ch] = tok
                # (A string that never closes: it runs to the end.)
                ends.append(n + 1)
                self.done = True
                at = n
                break
            ends.append(tok + 1)
            at = tok + 1
            noted = False
            if ch in stops or (depth and ch in _CLOSERS):
                level = levels.get(depth)
                if level is None:
                    level = levels[depth] = ([], [])
                level[0].append(tok)
                level[1].append(ch in stops)
                noted = depth == want
            if ch in _OPENERS:
                depth += 1
            elif depth and ch in _CLOSERS:
                depth -= 1
            if noted:
                break
        self.depth, self.at = depth, at

    def _step(self) -> None:
        text = self.text
        index = self.index
        m = index.search(text, self.at)
        if m is None:
            self.done = True
            self.at = len(text)
            return
        at = m.start()
        ch = text[at]
        depth = self.depth
        self.starts.append(at)
        self.depths.append(depth)
        if ch in _QUOTES:
            since = index.unclosed.get(ch, -1)
            if not 0 <= since <= at:
                string = _STRING_MATCH(text, at)
                if string.lastindex is not None:
                    self.ends.append(string.end())
                    self.at = string.end()
                    return
                index.unclosed[ch] = at
            # (A string that never closes: it runs to the end.)
            self.ends.append(len(text) + 1)
            self.done = True
            self.at = len(text)
            return
        self.ends.append(at + 1)
        self.at = at + 1
        if ch in index.stops or (depth and ch in _CLOSERS):
            level = self.levels.get(depth)
            if level is None:
                level = self.levels[depth] = ([], [])
            level[0].append(at)
            level[1].append(ch in index.stops)
        if ch in _OPENERS:
            self.depth = depth + 1
        elif depth and ch in _CLOSERS:
            self.depth = depth - 1


@lru_cache(maxsize=32)
def _stop_scan(stops: str) -> re.Pattern[str]:
    # Like _BRACKET_SCAN with the stop characters in group 3 (they win over
    # brackets: at depth 0 a ")" in stops is a stop, not a closer).
    stop = "[" + re.escape(stops) + "]" if stops else "(?!)"
    return re.compile(_STRING + rf"| ({stop}) | ([\[{{(]) | ([\]}})])", re.S | re.X)


_SCALAR_SCANS: dict[str, re.Pattern[str]] = {}  # (scalar_end's, per stops)


def scalar_end(text: str, pos: int, stops: str) -> int:
    """Index of the first character of `stops` at bracket depth 0 outside strings.

    For argument values in a Python-style call: from just after `b=` in
    `f(a=1, b="x, y", c=[1, (2)])` with stops ",)" it finds the comma after
    the string. len(text) when there is no such character. Quotes are never
    stops: they always open a string.
    """
    scan = _SCALAR_SCANS.get(stops)
    if scan is None:  # (its stops' scan, made once: the stops, quotes left out, joined at each value cost more than its scan)
        scan = _SCALAR_SCANS[stops] = _stop_scan("".join(c for c in stops if c not in _QUOTES))
    depth = 0
    for m in scan.finditer(text, max(pos, 0)):
        kind = m.lastindex
        if kind == 3:
            if depth == 0:
                return m.start()
            ch = m.group()
            if ch in _OPENERS:
                depth += 1
            elif ch in _CLOSERS:
                depth -= 1
        elif kind == 4:
            depth += 1
        elif kind == 5:
            if depth:
                depth -= 1
        elif kind is None:
            break  # a string that never closes
    return len(text)


_BRACKETS = lazy(re.compile, r"""["'()\[\]{}]""")
_STRING_BODY = {
    '"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S),
    "'": re.compile(r"[^'\\]*(?:\\.[^'\\]*)*", re.S),
}
_STOP_SCANS: dict[str, re.Pattern[str]] = {}


class _Extent:
    """Where a JSON value (`stops` None: value_end) or a Python argument
    value (`stops` ",)": scalar_end) that starts at `start` ends, found
    by a bracket scan that resumes where it stopped, so that text arriving in
    deltas is scanned once: the same answers as those functions on the joined
    text. Positions are the driver's (indexes into the scanner's buffer)."""

    __slots__ = ("start", "stops", "search", "at", "depth", "quote", "escape", "end", "closing")

    def __init__(self, start: int, stops: str | None) -> None:
        self.start = start
        self.stops = stops
        if stops is None:
            self.search = _BRACKETS.search
        else:
            scan = _STOP_SCANS.get(stops)
            if scan is None:
                scan = _STOP_SCANS[stops] = re.compile("[" + re.escape("\"'()[]{}" + stops) + "]")
            self.search = scan.search
        self.at = start  # scanned up to here
        self.depth = 0
        self.quote = None  # the quote of the string the scan is inside
        self.escape = False  # the text so far ended with the backslash of an escape
        self.closing = False  # it ended with a single quote: an apostrophe if a letter follows
        self.end = None

    def advance(self, s: str, base: int, stop: int | None = None) -> int | None:
        """Scan on through s, whose s[i] is at position base + i (s holds the text from
        self.at on). Returns where the value ends, or None: not yet. `stop`: the text
        ends at that position (Driver.stop), as if cut there."""
        if self.end is not None:
            return self.end
        i = self.at - base
        n = len(s) if stop is None else stop - base
        if i > n:
            i = n  # (scanned past stop before, in the whole text: read on from stop, as re clamps a pos past a text cut there)
        stops = self.stops
        search = self.search
        depth = self.depth
        quote = self.quote
        while True:
            if quote is not None:
                if self.closing:
                    if i >= n:
                        break
                    self.closing = False
                    if not s[i].isalnum():  # (else an apostrophe: the string goes on)
                        quote = None
                        continue
                if self.escape:
                    if i >= n:
                        break
                    i += 1
                    self.escape = False
                j = _STRING_BODY[quote].match(s, i, n).end()
                if j >= n:
                    i = n
                    break
                if s[j] == quote:
                    if quote == "'":  # (see _STRING: 'It's' is one string)
                        if j + 1 >= n:
                            self.closing = True
                            i = n
                            break
                        if s[j + 1].isalnum():
                            i = j + 1
                            continue
                    quote = None
                    i = j + 1
                    continue
                # A backslash ends the text: the next character is escaped.
                self.escape = True
                i = n
                break
            m = search(s, i, n)
            if m is None:
                i = n
                break
            i = m.start()
            ch = s[i]
            i += 1
            if ch == '"' or ch == "'":
                quote = ch
            elif stops is None:
                if ch in "([{":
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        self.end = base + i
                        return self.end
            elif depth == 0 and ch in stops:
                self.end = base + i - 1
                return self.end
            elif ch in "([{":
                depth += 1
            elif depth and ch in ")]}":
                depth -= 1
        self.at = base + n
        self.depth = depth
        self.quote = quote
        return None



# A Python argument value that opens with a triple-quoted string (`"""…"""`, `r'''…'''`):
# its quotes inside are its text (`print("hi")`, `it's`), which the one-quote scans above
# would pair up or take for apostrophes. The string's end is found first, then the
# value's end from there on as for any value ("x" "y" may follow).
_TRIPLE_OPEN = lazy(re.compile, r"""[rRuU]?(\"\"\"|''')""")
_TRIPLE_BODY = {
    '"""': lazy(re.compile, r'(?:[^"\\]|\\.|"(?!""))*', re.S),
    "'''": lazy(re.compile, r"(?:[^'\\]|\\.|'(?!''))*", re.S),
}


# The inside of a "double" or 'single' quoted string and its closing quote, a backslash
# escaping the next character (Python's rule, not _STRING's apostrophes): _string_end.
_STRING_REST = {
    '"': lazy(re.compile, r'[^"\\]*(?:\\.[^"\\]*)*"', re.S),
    "'": lazy(re.compile, r"[^'\\]*(?:\\.[^'\\]*)*'", re.S),
}


def _string_end(text: str, i: int, end: int) -> int:
    """Just past the closing quote of the Python string whose quote is at i (its own quote
    closes it, a backslash in it escapes the next character: Python's rule, where _STRING
    reads `'s` in a 'single-quoted' string as an apostrophe), or -1 where it is still open
    at `end`: outside_strings' and string_open_at_end's one rule. (Found in C: the next
    quote, where no backslash comes before it, else the string's pattern.)"""
    quote = text[i]
    close = text.find(quote, i + 1, end)
    if close < 0:
        return -1
    if text.find("\\", i + 1, close) < 0:
        return close + 1
    m = _STRING_REST[quote].match(text, i + 1, end)
    return -1 if m is None else m.end()


def outside_strings(text: str, start: int = 0, end: int | None = None):
    """(index, character) of each character of a Python value's text (from `start` to
    `end`) outside its strings (_string_end: where a quote's string ends).
    string_open_at_end: the quote left open."""
    end = len(text) if end is None else end
    i = start
    while i < end:
        c = text[i]
        if c in "\"'":
            i = _string_end(text, i, end)
            if i < 0:
                return
        else:
            yield i, c
            i += 1


def string_open_at_end(text: str, start: int = 0, end: int | None = None) -> str:
    """The quote of the string left open at the end of a Python value's text (from
    `start` to `end`), read as outside_strings reads it; "" where none is."""
    end = len(text) if end is None else end
    i = start
    while i < end:
        c = text[i]
        if c in "\"'":
            i = _string_end(text, i, end)
            if i < 0:
                return c
        else:
            i += 1
    return ""


def triple_quote(text: str, pos: int, endpos: int | None = None) -> str | None:
    """The triple quote a value at pos opens with (after a prefix r or u), or None. (The
    text ends at endpos: see Driver.stop.)"""
    m = _TRIPLE_OPEN.match(text, pos) if endpos is None else _TRIPLE_OPEN.match(text, pos, endpos)
    return m.group(1) if m is not None else None


def triple_end(text: str, pos: int, quote: str) -> int | None:
    """Just past the triple quote that closes the string opened at pos (its prefix
    included), or None when the text ends first."""
    start = text.index(quote, pos) + 3
    end = _TRIPLE_BODY[quote].match(text, start).end()
    return end + 3 if text.startswith(quote, end) else None


class TripleWait:
    """A stream waiting on a triple-quoted string that has not closed: new text
    changes nothing until it may hold the closing quote (a grower of Driver.hint)."""

    __slots__ = ("quote", "tail")

    def __init__(self, quote: str, text: str) -> None:
        self.quote = quote
        self.tail = text[-2:]  # (a closing quote may begin in the text so far)

    def absorbs(self, text: str, n: int) -> bool:
        joined = self.tail + text
        if self.quote in joined:
            return False  # (maybe closed: read it again)
        self.tail = joined[-2:]
        return True
