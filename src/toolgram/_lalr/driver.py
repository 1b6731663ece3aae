"""An incremental LALR run of one format's grammar over one call region.

We drive Lark's parse table ourselves instead of Lark's InteractiveParser: the
table and the tree-building callbacks are Lark's, but lexing is ours because
 - a region ends where the grammar is satisfied, not at the end of the text;
 - when more text may still arrive, a token that touches the end of the buffer
   is not final (`1500` may become `1500.0`, `</tool_ca` may become a marker):
   we wait instead of guessing, which keeps streaming equal to one-shot parsing;
 - JSON and Python-value payloads are delimited by a bracket scanner (grammars
   cannot count brackets), then decoded by json.loads.
"""

from __future__ import annotations

import re
from typing import Any

import regex
from lark import Tree
from .._grammar.lark_table import Shift

from .._recover import repair as _repair
from .._grammar.registry import Compiled, Format
from .._grammar.words import fast, words

try:  # the pattern parser of the `re` module (for _loop)
    from re import _constants as _C, _parser as _sre
except ImportError:  # Python 3.10
    import sre_constants as _C  # type: ignore[no-redef]
    import sre_parse as _sre  # type: ignore[no-redef]

WAIT, DONE, FAIL = "wait", "done", "fail"
WAIT_MORE = "more"  # internal: a repair made room, read on


class Tok:
    """A token: lighter than lark.Token, which the tree callbacks don't need."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int) -> None:
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r})"

# Closing a frame that the model left open: at most this many missing tokens.
_MAX_VIRTUAL = 6


class Driver:
    __slots__ = (
        "fmt", "c", "start", "pos", "stack", "values", "status", "end", "tree", "repairs", "reason", "prose_at",
        "hint", "extents", "quotes", "resume", "taken", "brackets", "cutter", "recheck", "marks",
        "closed_at", "last_end", "calls", "lines", "line_end", "stray", "quote_memo",
    )  # fmt: skip

    def __init__(self, fmt: Format, start: int, brackets: Any = None, cutter: Any = None, lines: bool = False) -> None:
        self.fmt = fmt
        # Where a JSON value broken for good is cut short: (markers_from, room, prefixes,
        # find), the scanner's search for the first marker in a span of the text, the
        # longest marker's length, the markers' proper prefixes, and its remembered
        # str.find (see _cut); None: never.
        self.cutter = cutter
        self.recheck = 0  # waiting on such a value: the text's length to look again at
        # Where a JSON value ends, once the whole text is at hand: the scanner's
        # _repair.BracketIndex, shared by the drivers of one text (see there).
        self.brackets = brackets
        self.c: Compiled = fmt.compiled
        self.start = start
        self.pos = start
        self.stack = [self.c.start_state]
        self.values: list = []
        self.status = WAIT
        self.end = start
        self.tree = None
        self.repairs: list[str] = []
        self.reason = ""
        # Where the frame, open, met text that no token of the grammar starts, no end
        # marker and no call, and not even the first character of a marker of the
        # grammar (prose after a call whose close was left out); -1: not so.
        self.prose_at = -1
        # Set when run() waits on tokens that may still grow and each can tell from
        # a delta alone whether it changes anything (see absorbs()): a list of
        # _Extent (JSON, PYVALUE) and _LoopWait (regex terminals).
        self.hint: list | None = None
        self.extents: dict = {}  # stops -> the _Extent of the token at self.pos
        # terminal -> (token start, a later point its match can be resumed from): a
        # long token of the unrolled-loop shape is not matched from its start again.
        self.resume: dict = {}
        # Whether a failure's reason may be shown (the scanner clears it where it
        # never is): then "unexpected …" waits for the text it quotes.
        self.quotes = not fmt.quiet
        # Tokens read from the text (not supplied): how far the grammar got, which
        # picks the failure to report when no candidate reads a region.
        self.taken = 0
        # Only in a replay of a failed region (see salvage_points): after each token
        # read, [its end, the state stack then, whether a call ends there: the next
        # token the text holds finishes a call].
        self.marks: list | None = None
        # Where _close supplied the missing markers (-1: never), and where the last token
        # read from the text ended: what the builder needs to tell what the end cut.
        self.closed_at = -1
        self.last_end = start
        self.calls = 0  # calls reduced so far (see salvage_points)
        # Whether the region ends at the end of a line where it could end (see _lex): a
        # line-anchored format's, where each line's start literal is a marker of its own
        # (the scanner's, with tools). Without tools only the reply's start opens one,
        # and its lists on the next lines belong to it. line_end: set once it has.
        self.lines = lines
        self.line_end = False
        # A quoted value taken with a stray quote in it (_repair.quoted_end): a call
        # that runs on to the end of the text from there is broken, not cut short
        # (see Scanner._salvage).
        self.stray = False
        self.quote_memo: list | None = None  # (see _quoted)

    # -- the loop ---------------------------------------------------------
    def run(self, buf: str, final: bool, at_marker) -> str:
        """Advance as far as the text allows. `at_marker(buf, pos)` tells whether a
        call marker (of any format) starts at pos: True, False, or None when the
        text ends inside what could still become one."""
        if self.status != WAIT:
            return self.status
        self.hint = None
        self.recheck = 0
        c = self.c
        while True:
            state = self.stack[-1]
            allowed = c.allowed[state]
            if not allowed and c.accepts_end[state]:
                return self._finish(self.pos)
            tok = self._lex(buf, final, allowed)
            if tok is WAIT:
                return WAIT
            if tok is None:
                if self.line_end:
                    return self._finish(self.pos)
                if final:
                    status = self._cut_close(buf, allowed)
                    if status is not None:
                        return status
                if c.accepts_end[state] and self._ends_here():
                    return self._finish(self.pos)
                status = self._close(buf, final, at_marker)
                if status is WAIT_MORE:
                    continue
                return status
            term, end = tok
            # A failure quotes the next 20 characters: near the end of the text, wait
            # for them (so a stream reports what a whole parse does), undoing the
            # reductions the token caused. Only where the failure can be shown.
            # A shift is always taken; only a reduce may fail further on (merged
            # LALR lookaheads), so only then is the parse simulated first.
            action = self.c.states[self.stack[-1]].get(term)
            if action is None or (action[0] is not Shift and self._simulate(self.stack, term) is None):
                literal = self.c.terminals[term].literal
                if literal is not None and literal in self.fmt.ends:
                    status = self._close_before(literal)
                    if status is WAIT_MORE:
                        continue
                    return status
                if not final and self.quotes and len(buf) - self.pos <= _SNIPPET:
                    return WAIT
                return self._fail(f"unexpected {_snippet(buf, self.pos)}")
            if self.marks is not None:
                self._mark(term)
            self._feed(Tok(term, buf[self.pos : end], self.pos, end))
            self.pos = end
            self.last_end = end
            self.taken += 1
            if self.marks is not None:
                self.marks.append([end, list(self.stack), False])

    # -- lexing -----------------------------------------------------------
    def _lex(self, buf: str, final: bool, allowed):
        """The best token at self.pos: (terminal name, end), None, or WAIT."""
        n = len(buf)
        pos = self.pos
        json_text = self.c.json_text
        while True:
            if pos >= n:
                return None if final else WAIT
            best = None
            best_len = -1
            best_prio = None
            grow = False
            stray = False
            # What may still grow, each judged from a delta alone; None: cannot tell.
            growers: list | None = []
            for t in allowed:
                if best_prio is not None and t.priority < best_prio:
                    break
                name = t.name
                if t.literal is not None:
                    lit = t.literal
                    if buf.startswith(lit, pos):
                        end = pos + len(lit)
                    else:
                        if not final and n - pos < len(lit) and lit.startswith(buf[pos:]):
                            grow = True
                            growers = None
                        continue
                elif name == "JSON":
                    if buf[pos] not in "{[":
                        continue
                    # The pattern must match where the value starts (it may say more than
                    # its first character: `/\[\s*\{/` is a list of objects).
                    m = t.pattern.match(buf, pos, partial=not final)
                    if m is None:
                        continue
                    if m.partial:
                        grow = True
                        growers = None
                        continue
                    if final and self.brackets is not None:
                        end = self.brackets.end(buf, pos)
                    else:
                        extent = self._extent(pos, None)
                        end = extent.advance(buf, 0)
                    # A value broken for good before a marker ends there: the region
                    # does not swallow the calls after it (see _cut).
                    cut = self._cut(buf, pos, n if end is None else end, final) if self.cutter else None
                    if cut is not None and cut is not WAIT:
                        end = cut
                    elif end is None or cut is WAIT:
                        if not final:
                            if end is not None:
                                return WAIT  # (closed, but a marker may still start before its end)
                            if growers is not None:
                                self.hint = [*growers, extent]
                                self.recheck = n + max(16, (n - pos) // 4)  # (_cut looks again then)
                            return WAIT
                        end = n  # truncated: the decoder closes it
                elif name == "PYVALUE":
                    if buf[pos].isspace() or buf[pos] in ",)]":
                        continue
                    extent = self._extent(pos, ",)")
                    # A quoted value with its own quotes inside, unescaped: where the
                    # call's structure says it ends (see _repair.quoted_end).
                    quoted = self._quoted(buf, pos, final) if buf[pos] in "'\"" else None
                    if quoted is _repair.OPEN:
                        # (Python's string has not closed yet: the extent waits on it, and
                        # the value is looked at again with the recheck.)
                        quoted = None
                    if type(quoted) is _repair.QuoteWait:
                        extent.advance(buf, 0)  # (a grower scans on from the end of the text)
                        grow = True
                        if growers is not None:
                            growers += [extent, quoted]
                        continue
                    if quoted is not None and quoted[1]:
                        end = quoted[0]  # (its quotes inside pair up: it is read whole)
                        cut = None
                    else:
                        end = extent.advance(buf, 0)
                        # (Cut as a JSON value is: `city="Par"is")]` must not run on.)
                        cut = self._cut(buf, pos, n if end is None else end, final) if self.cutter else None
                    if cut is not None and cut is not WAIT:
                        end = cut
                    elif end is None or cut is WAIT:
                        if end is None:
                            end = n
                        if not final:
                            grow = True
                            if growers is not None:
                                growers.append(extent)
                                self.recheck = n + max(16, (n - pos) // 4)
                    while end > pos and buf[end - 1].isspace():
                        end -= 1
                    if end == pos:
                        continue
                    # A stray quote (`city="Par"is", unit="C")`): the value runs on as Python
                    # reads it, and cannot be read. The call went on after it, so where the
                    # value runs to the end of the reply, that is no reply cut short there
                    # (Scanner._salvage).
                    stray = quoted is not None and not quoted[1]
                else:
                    if name in json_text and (
                        _CALL_TAG_FIRST if name in self.c.call_text else _TAG_FIRST
                    ).match(buf, pos) is not None:
                        # A payload read as JSON cannot begin with a tag (`<tool_call>` then
                        # `<function=…>`): no match, at once, rather than a payload that runs to
                        # the end of the reply and fails there (the next format reads it).
                        continue
                    at = pos
                    pattern = t.pattern
                    resume = self.resume.get(name)
                    if resume is not None and resume[0] == pos:
                        # A long token seen before: its match goes on as from there.
                        at = resume[1]
                        pattern = resume[2] or pattern
                    m = pattern.match(buf, at, partial=not final)
                    if m is None:
                        continue
                    end = m.end()
                    # A match may still change when more text arrives: it touches the
                    # end, or the engine tried a way that ran into the end first
                    # (`match` gives "```" for /```(?:json)?/ on "```j", not a partial).
                    if not final and (end >= n or _could_grow(t, buf, pos)):
                        grow = True
                        if growers is not None:
                            loop = _loop_wait(t, buf, at, n, pos) if end >= n else None
                            if loop is None:
                                growers = None
                            else:
                                growers.append(loop)
                                if loop.resume is not None:
                                    self.resume[name] = (pos, *loop.resume)
                    if m.partial or end == pos:
                        continue
                    if end < n and name in json_text:
                        through = self._through(t, buf, pos, end, final)
                        if through is not None:
                            if type(through) is int:
                                end = through
                            else:  # (WAIT, with what to wait on, or None: cannot tell)
                                grow = True
                                if growers is not None and through[1] is not None:
                                    growers.append(through[1])
                                else:
                                    growers = None
                                continue
                if end - pos > best_len:
                    best, best_len, best_prio = name, end - pos, t.priority
            if grow:
                self.hint = growers or None
                return WAIT
            if best is not None:
                self.pos = pos
                if stray and best == "PYVALUE":
                    self.stray = True
                return best, pos + best_len
            # Nothing fits: skip %ignore'd text, but the region never ends inside it.
            skipped = False
            for t in self.c.ignore:
                m = t.pattern.match(buf, pos)
                if m and m.end() > pos:
                    if self.lines and pos > self.start and "\n" in buf[pos : m.end()] and self._ends_here():
                        # A line-anchored region (a call list) that could end here ends at
                        # the end of its line: a list on the next line is found as a marker
                        # of its own. (Read as one region, each of N lines would start a
                        # region running to the last one when the whole fails: N² work.)
                        self.pos = pos
                        self.line_end = True
                        return None
                    if m.end() >= n and not final:
                        return WAIT
                    pos = m.end()
                    skipped = True
                    break
            if not skipped:
                return None

    def _through(self, t, buf: str, pos: int, end: int, final: bool) -> Any:
        """A JSON payload token (see Compiled.json_text) stopped at `end`, a marker,
        with a JSON string open there (`{"text": "a </tool_call> b"}`): where it
        ends when the JSON, quotes respected, closes after that marker (the marker
        was string content: the token goes on past the value, as its pattern says);
        None when it does not (a value broken for good, such as a stray quote, still
        ends at the first marker); (WAIT, grower) when the text so far cannot tell."""
        # Without a backslash, an even number of quotes leaves no string open: the
        # usual case, told without decoding.
        if buf.count('"', pos, end) % 2 == 0 and buf.find("\\", pos, end) < 0:
            return None
        j = _JSON_SPACE.match(buf, pos).end()
        if j >= end or buf[j] not in "{[":
            return None
        n = len(buf)
        try:
            close = _repair.scan_json(buf, j)[1]
        except (StopIteration, ValueError) as exc:  # (json.JSONDecodeError)
            # (StopIteration: no value where it says, `tr` of a `true` still coming, or
            # none at all; its value is that place.)
            at = exc.value if type(exc) is StopIteration else getattr(exc, "pos", None)
            if final or type(at) is not int or at <= j:
                return None
            # Broken for good where it breaks well before the end of the text (a
            # string that does not close yet is an answer of the end of the text).
            if at + _SETTLED <= n and not str(getattr(exc, "msg", "")).startswith("Unterminated string"):
                return None
            # It may yet close: wait until its brackets do (or, as a JSON token
            # does, look again when the text has grown by a quarter).
            self.recheck = n + max(16, (n - pos) // 4)
            extent = self._extent(j, None)
            closed = extent.advance(buf, 0)
            return WAIT, (_HOLD if closed is not None else extent)
        except RecursionError:
            return None
        if close <= end:
            return None  # (the value closes before the marker: no string was open there)
        if close >= n:
            # (It closes where the text ends: at the end of the reply, through there.)
            return close if final else (WAIT, None)
        m = t.pattern.match(buf, close, partial=not final)
        if m is None or m.end() == close:
            return close
        if not final and (m.partial or m.end() >= n):
            loop = _loop_wait(t, buf, close, n) if not m.partial else None
            return WAIT, loop
        return m.end()

    # -- waiting cheaply ----------------------------------------------------
    def _extent(self, pos: int, stops: str | None) -> _Extent:
        extent = self.extents.get(stops)
        if extent is None or extent.start != pos:
            extent = self.extents[stops] = _Extent(pos, stops)
        return extent

    def _quoted(self, buf: str, pos: int, final: bool) -> Any:
        """_repair.quoted_end for the value at pos, its ending looked for before the
        first marker after its break (a call's, <think>'s, or this format's end). In
        a stream the value is looked at again as text arrives: where that marker is,
        and where the call's `)` is as Python reads it, are found by scans that go on
        from where they stopped (the text before does not change)."""
        memo = self.quote_memo
        if memo is None or memo[0] != pos:
            memo = self.quote_memo = [pos, -1, -1, -1, None]  # (pos, break, marker, scanned to, `)` scan)
        n = len(buf)

        def markers(at: int) -> int:
            if memo[1] != at:
                memo[1:4] = [at, -1, at]
            if memo[2] < 0 and memo[3] < n:
                memo[2] = self._first_marker(buf, max(at, memo[3] - self.cutter[1]), n)
                memo[3] = n
            return memo[2]

        def call_end(at: int) -> int:
            extent = memo[4]
            if extent is None or extent.start != at:
                extent = memo[4] = _Extent(at, ")")
            end = extent.advance(buf, 0)
            return n if end is None else end

        return _repair.quoted_end(buf, pos, final, markers if self.cutter else None, call_end)

    def _cut(self, buf: str, pos: int, stop: int, final: bool) -> Any:
        """Where the JSON value (or Python argument value) at pos, which runs to
        `stop` (where its brackets close, or the end of the text so far), is cut
        short: at the first marker (a call's, <think>'s, or this format's end) that
        starts where the value can no longer be read, or after it, whatever
        follows (_repair.unreadable_at). A broken value the bracket scan cannot
        close would otherwise run to the end of the reply, and one whose quotes are
        off may close far too late: either way the calls after it would be lost in
        its failure. None: not cut (it reads, or a marker does not follow its
        break); WAIT: the text so far cannot tell (a marker may still start before
        `stop`, or before the first one found). Only a value that cannot be read is
        cut. One broken before the marker still cannot be read: only how much text
        its failure takes changes. One left unfinished just before the marker (a
        brace left out before the call's end marker), or a string left open to the
        end of the reply, is closed there by the repair, as at the end of a reply."""
        room = self.cutter[1]
        settled = final or stop + room <= len(buf)  # (every marker that starts before stop is whole)
        if settled and self._first_marker(buf, pos + 1, stop) < 0:
            return None  # (the usual case: no marker inside the value, nowhere to cut it)
        opened = -1  # (where a string that never closes opens, in the whole text)
        try:  # (JSON reads the value: it is never cut)
            if _repair.scan_json(buf, pos)[1] == stop:
                return None
        except ValueError as exc:
            if final and stop >= len(buf) and str(getattr(exc, "msg", "")).startswith("Unterminated string"):
                opened = getattr(exc, "pos", -1)
        except (StopIteration, RecursionError):
            pass
        at = _repair.unreadable_in(buf, pos, stop)
        if at is None:
            if opened > pos:
                # A string left open to the end of the reply (`{"city": "Par<|tool_call_end|>…`):
                # it ends at the first marker in it, as if the reply had been cut there.
                m = self._first_marker(buf, opened + 1, stop)
                if m >= 0 and _repair.breaks_at(buf[pos:m]) is None:
                    return m
            return None
        # (From the character the pass gave up at: a marker that starts there is what
        # broke the value.)
        lo = pos + max(at - 1, 1)
        m = self._first_marker(buf, lo, stop)
        if not settled and (m < 0 or self._may_start(buf, lo, m)):
            return WAIT
        if m < 0:
            return None
        broke = _repair.breaks_at(buf[pos:m])
        if broke is not None and broke != at:
            return None  # (cut there, it would break elsewhere)
        return m  # (it breaks there still; or, read to the marker, it is only unfinished)

    def _may_start(self, buf: str, lo: int, hi: int) -> bool:
        """Whether a marker may yet start in [lo, hi) of the text so far: the text from
        there on is the beginning of one (a scanner's marker, or this format's end),
        which _first_marker cannot see before it is whole."""
        n = len(buf)
        prefixes, ends = self.cutter[2], self.fmt.ends
        for k in range(max(lo, n - self.cutter[1] + 1), hi):
            rest = buf[k:]
            if rest in prefixes or any(len(e) > len(rest) and e.startswith(rest) for e in ends):
                return True
        return False

    def _first_marker(self, buf: str, start: int, stop: int) -> int:
        """Where the first marker in [start, stop) starts (the scanner's, or this
        format's end), or -1."""
        best = self.cutter[0](buf, start, stop)
        find = self.cutter[3]  # (the scanner's, remembered: see Scanner._find)
        for e in self.fmt.ends:
            i = find(e, start, buf)
            if 0 <= i < stop and (best < 0 or i < best):
                best = i
        return best

    def absorbs(self, text: str, n: int) -> bool:
        """After run() waited with a hint: would `text`, appended to the n characters
        of text so far, leave it waiting the same way? True means run() need not
        see it yet (the caller keeps it and hands it over with the next text that
        matters). Bracket scanners move on over the text either way."""
        if self.recheck and n + len(text) >= self.recheck:
            return False  # (a JSON value that does not close: time to see if it is broken)
        for grower in self.hint:
            if type(grower) is _Extent:
                if grower.advance(text, n) is not None:
                    return False
            elif not grower.absorbs(text, n):
                return False
        return True

    # -- the parse table --------------------------------------------------
    def _feed(self, token: Tok) -> bool:
        stack, values = self.stack, self.values
        states, callbacks = self.c.states, self.c.callbacks
        while True:
            try:
                action, arg = states[stack[-1]][token.type]
            except KeyError:
                return False
            if action is Shift:
                stack.append(arg)
                values.append(token)
                return True
            size = len(arg.expansion)
            if size:
                children = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                children = []
            values.append(callbacks[arg](children))
            name = arg.origin.name
            if name in _CALL_RULES:
                self.calls += 1
                _close_extent(values[-1], children)
            stack.append(states[stack[-1]][name][1])

    def _mark(self, term: str) -> None:
        """Before `term` is read, in a replay: does it finish a call (its lookahead
        reduces one)? Then a call ends where the last token did."""
        if self.marks and _reduces_call(self.c, self.stack, term):
            self.marks[-1][2] = True

    def _finish(self, end: int) -> str:
        stack, values = self.stack, self.values
        states, callbacks = self.c.states, self.c.callbacks
        end_state = self.c.end_state
        while stack[-1] != end_state:
            try:
                action, rule = states[stack[-1]]["$END"]
            except KeyError:
                return self._fail("the call ended too early")
            if action is Shift:  # pragma: no cover - $END is never shifted
                break
            size = len(rule.expansion)
            children = values[-size:] if size else []
            if size:
                del stack[-size:]
                del values[-size:]
            values.append(callbacks[rule](children))
            if rule.origin.name in _CALL_RULES:
                _close_extent(values[-1], children)
            stack.append(states[stack[-1]][rule.origin.name][1])
        self.tree = values[-1] if values else None
        self.end = end
        self.status = DONE
        return DONE

    def _ends_here(self) -> bool:
        """Whether the region can end here (see _simulate)."""
        return self._simulate(self.stack, "$END") is not None

    def _close(self, buf: str, final: bool, at_marker) -> str:
        """The frame is open but nothing more fits. Close it with the missing
        markers when the text has ended or the next call starts here."""
        if self.pos == self.start:
            # Nothing of the frame is in the text (a marker-less format at the start of
            # the reply): there is no frame to close, whatever markers could complete it.
            # (Its reason quotes the text: wait for it, as run() does.)
            if not final and self.quotes and len(buf) - self.pos <= _SNIPPET:
                return WAIT
            return self._fail(f"unexpected {_snippet(buf, self.pos)}")
        pos = self.pos
        n = len(buf)
        while pos < n and buf[pos].isspace():
            pos += 1
        near = False
        if pos >= n:
            if not final:
                return WAIT
        else:
            closer = next((e for e in self.fmt.ends if buf.startswith(e, pos)), None)
            if closer is not None:
                return self._close_before(closer)
            if not final and any(n - pos < len(e) and e.startswith(buf[pos:]) for e in self.fmt.ends):
                return WAIT  # the text ends inside what may become an end marker
            hit = at_marker(buf, pos)
            # The text ends inside what may become a call marker: that matters only
            # if the missing markers can close the frame.
            if hit is None and not final and self._closing_plan() is not None:
                return WAIT
            near = not final and self.quotes and n - self.pos <= _SNIPPET  # see run()
            if not hit:
                if near:
                    return WAIT
                if buf[pos] not in self.c.literal_firsts:
                    self.prose_at = pos
                return self._fail(f"unexpected {_snippet(buf, self.pos)}")
        plan = self._closing_plan()
        if plan is not None:
            for term in plan:
                self._feed(Tok(term, "", self.pos, self.pos))
            self.closed_at = self.pos
            if "closed_tag" not in self.repairs:
                self.repairs.append("closed_tag")
            return self._finish(self.pos)
        if pos >= n:
            expected = [t.literal for t in self.c.allowed[self.stack[-1]] if t.literal]
            return self._fail("the reply ended inside the call" + (f" (expected {expected[0]})" if expected else ""))
        if near:
            return WAIT
        return self._fail(f"unexpected {_snippet(buf, self.pos)}")

    def _cut_close(self, buf: str, allowed) -> str | None:
        """The reply ends inside a close marker (`</tool_call`, a fence's "``"): that
        marker was cut short, by the model or by max_chars. It is supplied and the
        region runs to the end of the text, so the cut tag is markup, not prose.
        None: the rest of the text is not such a start (one character, `<`, names
        no tag), or the frame cannot be closed."""
        if not self.taken:
            return None  # (nothing read: a reply-anchored region that never began)
        pos, n = self.pos, len(buf)
        while pos < n and buf[pos].isspace():
            pos += 1
        closers = [*self.fmt.ends, *(t.literal for t in allowed if t.literal is not None and _closes(t.literal))]
        if not cut_marker(buf[pos:], closers):
            return None
        plan = self._closing_plan()
        if plan is None:
            return None
        for term in plan:
            self._feed(Tok(term, "", self.pos, self.pos))
        if plan and "closed_tag" not in self.repairs:
            self.repairs.append("closed_tag")
        return self._finish(n)

    def _closing_plan(self) -> list[str] | None:
        """The missing literals that complete the frame, or None (see closing_plan)."""
        return closing_plan(self.c, self.stack, self.fmt.ends)

    def _simulate(self, stack: list, term: str) -> list | None:
        """The state stack after taking `term` ("$END": after finishing), or None
        when the parser would reject it. Simulated on a copy of the state stack
        alone, because an LALR row lists terminals that only fail after some
        reductions (merged lookaheads), and a failed feed cannot be undone cleanly
        (Lark's tree callbacks extend child lists in place)."""
        return simulate(self.c, stack, term)

    def _close_before(self, end_marker: str) -> str:
        """The model wrote the end marker too soon (`[f(a=1)<|tool_call_end|>`):
        supply the brackets it skipped, then read on."""
        end_term = next((t.name for t in self.c.terminals.values() if t.literal == end_marker), None)
        if end_term is None:  # the grammar spells this end marker inside a pattern
            return self._fail(f"unexpected {end_marker!r}")
        ends = self.fmt.ends
        plan = _plan(
            self.c,
            self.stack,
            end_term,
            lambda allowed: [t for t in allowed if t.literal is not None and t.literal not in ends and _closes(t.literal)],
        )
        if not plan:
            return self._fail(f"unexpected {end_marker!r}")
        for term in plan:
            self._feed(Tok(term, "", self.pos, self.pos))
        if "closed_bracket" not in self.repairs:
            self.repairs.append("closed_bracket")
        return WAIT_MORE

    def _fail(self, reason: str) -> str:
        self.status = FAIL
        self.reason = reason
        self.end = max(self.pos, self.start)
        return FAIL


# What a JSON-text payload token cannot begin with: a tag; and a payload of calls
# (Compiled.call_text), a word and then a tag either (GLM's `<tool_call>get_weather
# <arg_key>…`: a name before the JSON, as functionary writes a call, has the object
# after it). The fast frame's regex says the same, from these sources. (The word is
# anything up to a space, a tag, a bracket, a quote, a backtick, "," or "=": no class
# that depends on Unicode's tables, which `re` and `regex` do not read alike; see
# _words.py. And it is a name's length at most: this look-ahead is tried at every
# region's payload, and one that ran on over a run of markers such as ```json```json…
# would cost each of them the rest of the run, the square of the reply.)
TAG_FIRST = r"\s*<"
CALL_TAG_FIRST = r"""\s*(?:[^\s<>{}\[\]()"',=`]{1,256}\s*)?<"""
_TAG_FIRST = fast(regex.compile(TAG_FIRST))[1]  # (by `re`: see _words.fast)
_CALL_TAG_FIRST = fast(regex.compile(CALL_TAG_FIRST))[1]

# The rules that hold whole calls (grammars/README.md): where one is reduced, calls end.
_CALL_RULES = frozenset(("call", "agent_call", "memory_call", "json_calls", "keyed_calls"))


def salvage_points(failed: Driver, buf: str, final: bool, at_marker) -> tuple[list, bool]:
    """Where a region no candidate could read may still be closed, so that the
    calls read before the failure are kept: the points to try, best first, each
    (a token's end, whether closing there completes a call left open), and whether
    the reply ends inside the frame. Closing one grammar parse of a whole section
    fails as a whole when its last call cannot be completed (a reply cut inside it,
    or a call broken in the middle of the section); the points are where the missing
    markers would close the frame before that.

    Mid-text, only a point between calls counts (a broken call is not cut short into
    another call). Where the reply ends inside the frame (`final`, and nothing or
    only the beginning of a token follows the failure, or the frame was closed at
    the end), the last point inside the last call comes first: it is repaired like
    any truncated call, the text after the point dropped. The region is replayed
    once (the state stack is copied at each token), and only where the end cut the
    frame or a call ended before the failure; a region that was read but decodes
    to no call is looked into only where the end cut it."""
    c, ends = failed.c, failed.fmt.ends
    n = len(buf)
    if failed.taken < 2:  # (a marker and no more: no call was read before the failure)
        return [], False
    # Worth a replay only where the end cut the frame, or a call ended before the
    # failure (a reply of many broken calls is not read twice).
    p = failed.pos if failed.status == FAIL else failed.end
    while p < n and buf[p].isspace():
        p += 1
    if failed.status == FAIL:
        stack = failed.stack
        truncated = final and (p >= n or any(_may_begin(t, buf, p) for t in c.allowed[stack[-1]]))
        if not truncated and not failed.calls and closing_plan(c, stack, ends) is None:
            return [], False
    else:  # (read, but what it read is no call: only the end's cut is looked into)
        truncated = final and p >= n and "closed_tag" in failed.repairs
        if not truncated:
            return [], False
    drv = Driver(failed.fmt, failed.start, failed.brackets, failed.cutter, failed.lines)
    drv.quotes = failed.quotes
    drv.marks = []
    drv.run(buf, final, at_marker)  # (it stops where the first run did)
    points: list = []
    last = drv.marks[-1][0] if drv.marks else -1
    for end, stack, ended in reversed(drv.marks):
        if end >= drv.end and drv.status == DONE:
            continue  # (that is what was read already)
        plan = closing_plan(c, stack, ends)
        if plan is None:
            continue
        # Between calls: the next token read finishes a call; or, after the last token
        # read, the missing markers leave no call open (only the section around them).
        opened = not ended and (end != last or _left_open(c, stack, plan))
        if opened and end == last and _closed_by_prose(failed, buf, end, plan):
            opened = False
        if opened:
            if truncated and not points:
                points.append((end, True))
            continue
        points.append((end, False))
        break
    return points, truncated


def _closed_by_prose(failed: Driver, buf: str, end: int, plan: list) -> bool:
    """Whether the last call read is left open only for want of its end marker
    (`</tool_call>` of GLM's `<tool_call>NAME<arg_key>…</arg_value>`, whose call rule
    holds both markers), with prose on the next line: the model left the marker out
    and wrote on. Closed there, it is a call, like one whose section end was left out."""
    at = failed.prose_at
    if at < end or buf[end:at].strip() or "\n" not in buf[end:at]:
        # (On a line of its own only: text right after a close tag, `print("</parameter>")`
        # or `use </arg_value> to close`, is the rest of a value that held the tag.)
        return False
    ends = failed.fmt.ends
    terminals = failed.c.terminals
    return bool(plan) and all(getattr(terminals.get(t), "literal", None) in ends for t in plan)


def _may_begin(t: Any, buf: str, pos: int) -> bool:
    """Whether the rest of the text, from pos, could be the beginning of a t token:
    of a literal, a part of it cut short (the whole of it was read as such, and found
    unexpected: no more text would change that)."""
    if t.literal is not None:
        return len(buf) - pos < len(t.literal) and t.literal.startswith(buf[pos:])
    if t.name in ("JSON", "PYVALUE"):
        return False  # (these run to the end of the text: they would have been read)
    m = t.pattern.match(buf, pos, partial=True)
    return m is not None and (m.partial or m.end() >= len(buf))


def _close_extent(tree: Any, children: list) -> None:
    """A call rule's tree leaves out its anonymous tokens (`)` of `name(a=1)`), so
    the extent of what it keeps stops short of the call's end: note where its last
    token ends (Lark's own field for it, meta.end_pos) for the builder's span."""
    if children and type(children[-1]) is Tok and isinstance(tree, Tree):
        tree.meta.end_pos = children[-1].end_pos


def _left_open(c: Compiled, stack: list, plan: list[str]) -> bool:
    """Whether supplying `plan` at `stack` completes a call left open: a marker is
    supplied, or a missing close tag assumed (an `unclosed` rule), before the first
    call is reduced (the first supplied token's lookahead reduces one that the text
    finished)."""
    state = {"unclosed": False, "call": False}

    def reduced(rule: Any) -> bool:
        name = rule.origin.name
        if name in _CALL_RULES:
            state["call"] = True
            return False  # (stop there)
        if name == "unclosed":
            state["unclosed"] = True
        return True

    stack = list(stack)
    for i, term in enumerate([*plan, "$END"]):
        step(c, stack, term, reduced)
        if state["call"]:
            return i > 0 or state["unclosed"]
    return False


def _reduces_call(c: Compiled, stack: list, term: str) -> bool:
    """Whether the table at `stack`, taking `term`, reduces a call rule first thing."""
    seen: list = []

    def reduced(rule: Any) -> bool:
        if rule.origin.name in _CALL_RULES:
            seen.append(rule)
            return False  # (stop there: that is all we ask)
        return True

    step(c, list(stack), term, reduced)
    return bool(seen)


def simulate(c: Compiled, stack: list, term: str) -> list | None:
    """A copy of the state stack after the table `c` takes `term` ("$END": after
    finishing), or None when it rejects it (see Driver._simulate)."""
    stack = list(stack)
    return stack if step(c, stack, term) else None


def step(c: Compiled, stack: list, term: str, reduced: Any = None) -> bool:
    """Feed `term` ("$END": finish) to the state stack, in place: True, or False
    when the table rejects it. `reduced(rule)` is told each rule it reduces, before
    the reduction, and may refuse it (False: the step fails there)."""
    states = c.states
    end_state = c.end_state
    while True:
        if term == "$END" and stack[-1] == end_state:
            return True
        action = states[stack[-1]].get(term)
        if action is None:
            return False
        kind, arg = action
        if kind is Shift:
            stack.append(arg)
            return True
        if reduced is not None and not reduced(arg):
            return False
        size = len(arg.expansion)
        if size:
            del stack[-size:]
        stack.append(states[stack[-1]][arg.origin.name][1])


def closing_plan(c: Compiled, stack: list, ends: tuple) -> list[str] | None:
    """The missing literals that complete a frame whose parser is at `stack`, or
    None: the format's end markers (`ends`) first, then closing brackets and tags,
    then anything else."""

    def best_first(allowed):
        literals = [t for t in allowed if t.literal is not None]
        literals.sort(key=lambda t: (t.literal not in ends, not _closes(t.literal)))
        return literals

    return _plan(c, stack, "$END", best_first)


def _plan(c: Compiled, stack: list, goal: str, usable) -> list[str] | None:
    """The literals to supply, in order, after which the table `c` at `stack` takes
    `goal` ("$END": the frame is complete), or None when none get there. `usable`
    picks, best first, which of a state's allowed terminals may be supplied."""
    plan = []
    for _ in range(_MAX_VIRTUAL + 1):
        if simulate(c, stack, goal) is not None:
            return plan
        for t in usable(c.allowed[stack[-1]]):
            after = simulate(c, stack, t.name)
            if after is not None:
                stack = after
                plan.append(t.name)
                break
        else:
            return None
    return None


def cut_marker(rest: str, markers: Any) -> bool:
    """Whether rest is one of the markers cut short at the end of the text: two
    characters of it at least (a lone "<" names no tag)."""
    return len(rest) >= 2 and any(len(rest) < len(m) and m.startswith(rest) for m in markers)


def _closes(literal: str) -> bool:
    return literal[:1] in ")]}" or literal.startswith("</") or "end" in literal.lower()


_ATOMIC: dict = {}


def _could_grow(t, buf: str, pos: int) -> bool:
    """Could more text change what t's pattern matches at pos? Only if the engine,
    before settling on its match, tried a way that ran into the end of the text:
    a partial full match of the pattern made atomic (`(?>P)`, so it does not
    backtrack over the match to look for other full matches: fast) says so."""
    atomic = _ATOMIC.get(t.pattern)
    if atomic is None:
        try:
            atomic = regex.compile("(?>" + t.pattern.pattern + ")", t.pattern.flags)
        except Exception:  # noqa: BLE001 - e.g. global flags inside the group
            atomic = t.pattern
        _ATOMIC[t.pattern] = atomic
    return atomic.fullmatch(buf, pos, partial=True) is not None


# -- scanning a growing token without starting over ---------------------------

# The characters a bracket scan stops at, and the inside of a quoted string up to
# its closing quote (unrolled; it stops before a lone backslash at the very end).
_BRACKETS = re.compile(r"""["'()\[\]{}]""")
_STRING_BODY = {
    '"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S),
    "'": re.compile(r"[^'\\]*(?:\\.[^'\\]*)*", re.S),
}
_STOP_SCANS: dict[str, re.Pattern[str]] = {}


class _Extent:
    """Where a JSON value (`stops` None: _repair.value_end) or a Python argument
    value (`stops` ",)": _repair.scalar_end) that starts at `start` ends, found
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

    def advance(self, s: str, base: int) -> int | None:
        """Scan on through s, whose s[i] is at position base + i (s holds the text from
        self.at on). Returns where the value ends, or None: not yet."""
        if self.end is not None:
            return self.end
        i = self.at - base
        n = len(s)
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
                j = _STRING_BODY[quote].match(s, i).end()
                if j >= n:
                    i = n
                    break
                if s[j] == quote:
                    if quote == "'":  # (see _repair._STRING: 'It's' is one string)
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
            m = search(s, i)
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


class _Hold:
    """A wait that no delta ends by itself (Driver.recheck ends it)."""

    __slots__ = ()

    def absorbs(self, text: str, n: int) -> bool:
        return True


_HOLD = _Hold()
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
# A JSON decoding error this far before the end of the text is one more text cannot
# undo (the decoder looks at most a few characters past where it stops).
_SETTLED = 8


class _LoopWait:
    """A regex terminal whose match runs to the end of the text, inside a loop of a
    negated class `[^E]*`: text with no character of E cannot end it (see _loop)."""

    __slots__ = ("exits", "width", "last", "resume")

    def __init__(self, exits: re.Pattern[str], width: int, last: int) -> None:
        self.exits = exits
        self.width = width
        self.last = last  # the last character of E in the match, or -1 (none near the end)
        self.resume: tuple | None = None  # (position, pattern to match from there, None: t's)

    def absorbs(self, text: str, n: int) -> bool:
        if self.exits.search(text) is not None:
            return False
        # After an E character the pattern reads up to `width` characters outside
        # its loops (`<(?!/?tool_call>)`): the text may decide those.
        return self.last < 0 or n - self.last > self.width


_LOOPS: dict[str, tuple | None] = {}


def _loop_wait(t, buf: str, at: int, n: int, start: int | None = None) -> _LoopWait | None:
    """A _LoopWait for t's match from `at` (the token's start, or where its match was
    resumed) to the end of the text, n; None when t's pattern has not that shape.
    `start`: the token's start (default `at`)."""
    info = _LOOPS.get(t.pattern.pattern, 0)
    if info == 0:
        info = _LOOPS[t.pattern.pattern] = _loop(t.pattern.pattern)
    if info is None:
        return None
    exits, chars, width, tail, lead, loop, space = info
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
    last = max(buf.rfind(c, max(at, n - width - 1), n) for c in chars)
    wait = _LoopWait(exits, width, last)
    # A later place to match from next time, as the whole match would go on from
    # there: inside a [^E]* loop (with no character of E near), with the pattern
    # (or, after a start P, the loop and the tail); or at a character of E that X
    # has read for good, with the tail `(?:X[^E]*)*`.
    if last < 0:
        if n - 1 > at and n - 1 >= past:
            wait.resume = (n - 1, loop)
    else:
        e = max(buf.rfind(c, at, n - width - 1) for c in chars)
        if e > at and e >= past:
            wait.resume = (e, tail)
    return wait


def _loop(source: str) -> tuple | None:
    """For a pattern of the unrolled-loop shape `[^E]+(?:X[^E]*)*` (also `*`), where
    X starts with a character of E and is bounded (literals, classes, lookarounds,
    `?`) and takes no other character of E; or `P[^E]*(?:X[^E]*)*`, with a bounded
    start P (`(?:[^E]|X)`, `[{(]`): (a regex finding a character of E, E, a bound
    on how far X or P reads, the tail `(?:X[^E]*)*`, the most P takes (0: no P),
    the loop and tail without P (None: no P), and for `R*P[^E]*(?:X[^E]*)*`, a
    leading run of a class R without a character of E, R* (else None)). Such a match,
    once it has run past P and X into the loop, absorbs any text without a character
    of E. None for any other pattern (those are always re-lexed)."""
    try:
        items = list(_sre.parse(source))
    except Exception:  # noqa: BLE001 - a pattern only the `regex` module reads
        return None
    if len(items) == 4:
        # A run of a class first (`\s*`, Cohere's cofl VALUE), then a start P: that run
        # is skipped as P is, once (`space` finds where P starts).
        end = _item_end(source, 0)
        op, av = items[0]
        if end is None or source[end : end + 1] != "*" or op is not _C.MAX_REPEAT or av[:2] != (0, _C.MAXREPEAT):
            return None
        inner = _loop(source[end + 1 :])
        space = fast(regex.compile(source[: end + 1]))[1]  # (as the token's `regex` reads it)
        if inner is None or not inner[4] or any(space.match(c).end() for c in inner[1]):
            return None  # (no P after it, or the run may take a character of E)
        return (*inner[:6], space)
    if not items or len(items) > 3:
        return None
    lead = 0
    skip = 0
    width = 1  # how far X (or P) reads from where it starts: what it takes or looks at
    if len(items) == 3 or _negated_loop(items[0]) is None:
        # The start P: what it takes is read by the whole pattern, once.
        if len(items) < 2 or not _bounded(items[0]):
            return None
        lead = _width(items[0])
        width = _reach(items[:1])
        skip = _item_end(source, 0)
        if skip is None:
            return None
        items = items[1:]
    exits = _negated_loop(items[0])
    if exits is None:
        return None
    if len(items) == 2:
        op, av = items[1]
        if op is not _C.MAX_REPEAT or av[0] != 0 or av[1] is not _C.MAXREPEAT:
            return None
        body = list(av[2])
        if len(body) == 1 and body[0][0] is _C.SUBPATTERN:
            body = list(body[0][1][-1])
        if len(body) < 2 or _negated_loop(body[-1]) != exits:
            return None
        first = body[0]
        if first[0] is not _C.LITERAL or chr(first[1]) not in exits:
            return None
        if not all(_bounded(item, exits) for item in body[1:-1]):
            return None
        width = max(width, _reach(body[:-1]))
    # The loop's source, `[^E]+` or `[^E]*`, and the tail `(?:X[^E]*)*` after it.
    head = regex.compile(r"\[\^(?:\\.|[^\]\\])+\][+*]").match(source, skip)
    if head is None:
        return None
    try:
        tail = regex.compile(source[head.end() :] or "(?:)")
        loop = regex.compile(source[skip:]) if lead else None
    except Exception:  # noqa: BLE001
        return None
    chars = "".join(sorted(exits))
    return re.compile("[" + re.escape(chars) + "]"), chars, width, tail, lead, loop, None


def _item_end(source: str, i: int) -> int | None:
    """Where the one item of the pattern that starts at source[i] ends (a group, a
    class, an escape or a character, with a `?` after it); None if it cannot tell."""
    try:
        ch = source[i]
        if ch == "\\":
            j = i + 2
        elif ch == "[":
            j = i + 1
            if source[j] == "^":
                j += 1
            if source[j] == "]":
                j += 1
            while source[j] != "]":
                j += 2 if source[j] == "\\" else 1
            j += 1
        elif ch == "(":
            depth = 0
            j = i
            while True:
                c = source[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[":
                    j = _item_end(source, j)
                    if j is None:
                        return None
                    continue
                depth += (c == "(") - (c == ")")
                j += 1
                if depth == 0:
                    break
        else:
            j = i + 1
    except IndexError:
        return None
    if source[j : j + 1] == "?":
        j += 1
    return j


def _negated_loop(item) -> frozenset | None:
    """E for `[^E]*` or `[^E]+` (E a few plain characters), else None."""
    op, av = item
    if op is not _C.MAX_REPEAT or av[0] > 1 or av[1] is not _C.MAXREPEAT or len(av[2]) != 1:
        return None
    op, av = av[2][0]
    if op is _C.NOT_LITERAL:
        return frozenset(chr(av))
    if op is _C.IN and av and av[0][0] is _C.NEGATE and 1 < len(av) <= 5:
        if all(o is _C.LITERAL for o, _ in av[1:]):
            return frozenset(chr(a) for _, a in av[1:])
    return None


def _bounded(item, exits: frozenset = frozenset()) -> bool:
    """Matches or looks at a bounded number of characters, each spelled in the pattern
    (a class is one), and takes none of `exits` (a lookaround may look at them)."""
    op, av = item
    if op is _C.LITERAL:
        return chr(av) not in exits
    if op is _C.NOT_LITERAL:
        return exits <= {chr(av)}
    if op is _C.IN:
        return _avoids(av, exits)
    if op in (_C.ASSERT, _C.ASSERT_NOT):
        return all(map(_bounded, av[1]))
    if op is _C.BRANCH:
        return all(all(_bounded(i, exits) for i in alt) for alt in av[1])
    if op is _C.SUBPATTERN:
        return all(_bounded(i, exits) for i in av[-1])
    if op is _C.MAX_REPEAT:
        return av[1] == 1 and all(_bounded(i, exits) for i in av[2])
    return False


# (As the `regex` module, which matches the tokens, reads them: not str's methods.)
_CATEGORIES = {
    _C.CATEGORY_DIGIT: regex.compile(r"\d").match,
    _C.CATEGORY_SPACE: regex.compile(r"\s").match,
    _C.CATEGORY_WORD: regex.compile(words(r"\w")).match,
}


def _avoids(members: list, exits: frozenset) -> bool:
    """Whether a class `[…]` takes none of `exits` (unsure: False)."""
    if not exits:
        return True
    if members and members[0][0] is _C.NEGATE:
        return exits <= {chr(a) for o, a in members[1:] if o is _C.LITERAL}
    for op, av in members:
        if op is _C.LITERAL:
            if chr(av) in exits:
                return False
        elif op is _C.RANGE:
            if any(av[0] <= ord(ch) <= av[1] for ch in exits):
                return False
        elif op is _C.CATEGORY and av in _CATEGORIES:
            if any(map(_CATEGORIES[av], exits)):
                return False
        else:
            return False
    return True


def _reach(items) -> int:
    """How far past its start a run of _bounded items reads: what it takes, or what
    a lookahead in it looks at."""
    pos = reach = 0
    for item in items:
        op, av = item
        if op is _C.ASSERT or op is _C.ASSERT_NOT:
            far = _reach(av[1]) if av[0] == 1 else 0  # (a lookbehind looks back)
        elif op is _C.BRANCH:
            far = max(map(_reach, av[1]))
        elif op is _C.SUBPATTERN:
            far = _reach(av[-1])
        elif op is _C.MAX_REPEAT:
            far = av[1] * _reach(av[2])
        else:
            far = 1
        reach = max(reach, pos + far)
        pos += _width(item)
    return reach


def _width(item) -> int:
    """The most characters a _bounded item takes."""
    op, av = item
    if op in (_C.ASSERT, _C.ASSERT_NOT):
        return 0
    if op is _C.BRANCH:
        return max(sum(map(_width, alt)) for alt in av[1])
    if op is _C.SUBPATTERN:
        return sum(map(_width, av[-1]))
    if op is _C.MAX_REPEAT:
        return av[1] * sum(map(_width, av[2]))
    return 1


_SNIPPET = 20  # characters of the text a failure quotes


def _snippet(buf: str, pos: int) -> str:
    if pos >= len(buf):
        return "end of reply"
    piece = buf[pos : pos + _SNIPPET]
    return repr(piece + ("…" if len(buf) > pos + _SNIPPET else ""))
