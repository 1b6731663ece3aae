"""The fast path: a grammar whose region is a fixed run of tokens, read by one regex.

Most replies hold well-formed calls in the simplest formats, such as Hermes's
`<tool_call>{json}</tool_call>`. For those the general machinery (our LALR
driver, the tree, the builder, a Region and a Draft) costs ten times more than
the work itself: find the frame, json.loads the payload. So when a grammar's
LALR table admits exactly one token sequence of the shape

    T1 T2 … Tk (E1 | E2 | …)        (one terminal allowed at each step, then
                                     only terminals that end the region)

with the payload one terminal that is the whole of a `json_calls` rule, the
sequence is compiled into one regex: each terminal an atomic group, which
matches what the driver's contextual lexer matches at that point (it tries
only the allowed terminal, and never gives back what it took). The end is
lexed as the driver lexes it (or, when the ends are plain strings, is one more
group: the longest string first).

`Frame.read` then either returns the call, a wait (the text so far may still
become a frame), or None: anything else (no match, a payload json.loads
cannot read, a call object with anything beyond a name and an arguments object)
goes the general way, which decides it exactly as it always did. So the fast
path changes what is fast, never what is read; tests/test_frame.py checks
that on every corpus case, whole and streamed.

A lighter shortcut, JsonFrame, serves grammars whose region is literals around
a JSON payload (delimited by the bracket scanner, so not a pattern): it walks
the tokens as the driver lexes them and gives the payload to the same builder.

The whole-text batch `run` (parse() with a sink: a run of calls the frames read
goes to the Assembler at once) is here too. The opening tests for reply-anchored
formats are in opening.py.
"""

from __future__ import annotations

import re
from typing import Any

import regex
from .._lalr.tree import Tree

from .._build.builder import Builder, Draft, Unreadable
from .._guard import passes_through
from .._grammar import regex_loops as _regex_loops
from .._grammar import vocabulary
from .._grammar.registry import Compiled, Format
from .._grammar.vocabulary import rule_name
from .._grammar.words import fast_source, lazy
from .._lalr.driver import _CALL_TAG_FIRST, _TAG_FIRST, CALL_TAG_FIRST, TAG_FIRST
from .._lalr.growth import _could_grow, _loop_wait, _LoopWait
from .._lalr.table import simulate, step
from .._lalr.tokens import Tok
from .._recover import repair as _repair
from .._lalr.close import cut_marker
from .._lalr import tagread as _tagread
from .._result.model import CallRun, Segment, ToolCall
from .instring import Reading, in_string, quoted
from .quotation import OPENS as _OPENS
from .items import Piece, Region, _piece
from . import gemcall as _gemcall

WAIT = "wait"
# (The decoder _repair.loads tries first, without its depth guard: _call refuses a
# payload of more than _HALF_DEPTH openers before it reads, so none nests deeper.)
_SCAN = _repair._JSON.unguarded_scan
_JSON_SPACE = " \t\n\r"
_SPACE = lazy(re.compile, r"\s*")  # (what str.lstrip() strips)
_HALF_DEPTH = _repair.MAX_DEPTH // 2

# The rules a frame's tree may hold: `start`, this one (the payload's), and rules
# the builder walks through without reading (Lark's `__start_…` helpers, `_inlined`).

# Switched off (frames and opening tests both) by the tests that compare the
# fast path with the general way; the invoke formats' tag reader too (_lalr/tagread.py:
# it asks this switch through tagread.on).
enabled = True
_tagread.on = lambda: enabled


class Frame:
    """One format's fast frame (see the module's docstring); built by frame_of."""

    __slots__ = (
        "_after",
        "args_key",
        "empty",
        "ends",
        "first",
        "fmt",
        "name",
        "offered_only",
        "pattern",
        "payload",
        "terms",
        "whole",
        "whole_any",
        "whole_ascii",
    )  # fmt: skip

    def __init__(self, fmt: Format, pattern: Any, terms: tuple, payload: int, ends: tuple) -> None:
        self.fmt = fmt
        self.pattern = pattern  # group i + 1 is token i
        self.terms = terms  # the terminal of each of those tokens
        self.payload = payload  # the group of the json_calls payload
        self.ends = ends  # the terminals that may end the frame, best first
        self.args_key = fmt.args_key
        self.offered_only = fmt.offered_only
        self.name = fmt.name
        # Whether a token may match empty text (the driver takes no empty token).
        self.empty = any(t.literal is None and t.pattern.match("") is not None for t in terms)
        # When every end terminal is a set of plain strings, of one priority, the end
        # is one more group: its strings longest first, as the lexer picks them. Read
        # with the whole text at hand (where no token may still grow): by `re` where it
        # matches as `regex` does (whole_ascii for an ASCII text, whole_any for any:
        # _words.fast).
        words = [_strings(t) for t in ends]
        self.whole = self.whole_ascii = self.whole_any = None
        if all(words) and len({t.priority for t in ends}) == 1:
            alts = sorted({w for ws in words for w in ws}, key=lambda w: (-len(w), w))
            whole = lazy(regex.compile, pattern.pattern + "(" + "|".join(map(regex.escape, alts)) + ")")
            self.whole = whole
            self.whole_ascii, self.whole_any = fast_source(whole.pattern, lambda: whole)
        self._after: dict[tuple[str, bool, str], Any] = {}
        # The payload's test that no tag comes first (a `re` pattern, as the driver
        # tests it; None: it has none): _resumed asks it again, as the whole pattern does.
        self.first: Any = None

    def after(self, marker: str, ascii: bool, stops: str = "") -> Any:
        """For run() below, in a whole text where `marker` (which this frame reads)
        is the only marker that may start at its first character: the match, at a
        position, of the prose up to the next such character (none is a backtick),
        then this frame's whole call at it, that marker first; its groups those of
        `whole`. One match for what would be a search, two tests and read(). None
        where read() takes another way (no `whole`, or a token that may be empty).
        ascii: whether the text is ASCII (see _words.fast). `stops`: the characters the
        prose may not hold (every marker's first character that the text holds: with
        tools, Hermes's `>` and `{` too); the marker's own first character by default."""
        key = (marker, ascii, stops)
        try:
            return self._after[key]
        except KeyError:
            pass
        found = None
        if self.whole is not None and not self.empty and marker:
            stops = "".join(sorted(set(stops or marker[0])))
            prose = f"[^{regex.escape(stops)}]*(?<!`)(?={regex.escape(marker)})"
            found = fast_source(prose + self.whole.pattern)[0 if ascii else 1].match
        self._after[key] = found
        return found

    def read(self, buf: str, pos: int, final: bool, tools: Any, wait: Any = None) -> Any:
        """The call framed at pos (a ToolCall: a region holding just it, its span in
        buf's positions, no repairs); None (the general way must read it); or a wait:
        WAIT, or a _LoopWait whose absorbs() tells which deltas change nothing.
        `wait`: what the last read of this frame at pos returned, in the same buffer
        (a stream's text is only added to): a _LoopWait of the last token is read on
        from where its match may resume, as the driver does (see _resumed)."""
        if final and self.whole is not None:
            m = (self.whole_ascii if buf.isascii() else self.whole_any).match(buf, pos)
            if m is None or (self.empty and "" in m.groups()):  # (the driver takes no empty token)
                return None
            return self._call(m.group(self.payload), pos, m.end(), tools)
        if not final and type(wait) is _LoopWait and wait.token >= 0:
            return self._resumed(buf, pos, tools, wait)
        m = self.pattern.match(buf, pos, partial=not final)
        if m is None:
            return None
        if m.partial:
            return WAIT
        n = len(buf)
        for i, t in enumerate(self.terms, 1):
            if m.start(i) == m.end(i):
                return None  # the driver takes no empty token
            # The driver waits where more text could change a token, the engine having
            # looked at the end of the text to settle it; so do we. (A token whose match
            # runs to the end of the text could: _could_grow's match of it, the same
            # pattern from the same place, would run there too. The driver asks the same.)
            if not final and t.literal is None and (m.end(i) == n or _could_grow(t, buf, m.start(i))):
                if m.end(i) == n and i == len(self.terms):
                    # The last token runs to the end of the text (a payload whose close
                    # tag has not come yet): when its pattern tells from a delta alone
                    # whether it goes on (see Driver.absorbs), wait with that.
                    looks: dict = {}
                    got = _loop_wait(t, buf, m.start(i), n, None, looks)
                    if got is None:
                        return WAIT
                    if i == self.payload:
                        got.token = m.start(i)  # (the next read resumes it: see _resumed)
                        got.looks = looks
                    return got
                return WAIT
        end = self._end(buf, m.end(), final)
        if end is None or end is WAIT:
            return end
        return self._call(m.group(self.payload), pos, end, tools)

    def _resumed(self, buf: str, pos: int, tools: Any, wait: Any) -> Any:
        """read() in a stream, where the last read found the payload (the last token, at
        wait.token) running to the end of the text: the tokens before it were settled
        then (none could grow), so they stand as the text grows; the payload's match
        goes on from where it may resume (wait.resume: inside its loop, or at a character
        that ends the loop's run, read for good), as Driver._lex reads on a long token
        that it waited on (the same match, the same waits), rather than from pos."""
        t = self.terms[-1]
        start = wait.token
        n = len(buf)
        if self.first is not None and self.first.match(buf, start) is not None:
            return None  # (a tag first after all: the whole pattern matches nothing)
        if wait.resume is None:
            at, pattern = start, t.pattern
        else:
            at, pattern = wait.resume
            pattern = pattern or t.pattern
        m = pattern.match(buf, at, partial=True)
        if m is None:
            return None
        if m.partial:
            return WAIT
        stop = m.end()
        if stop >= n:
            looks = wait.looks if wait.looks is not None else {}
            got = _loop_wait(t, buf, at, n, start, looks)
            if got is None:
                return WAIT
            got.token = start
            got.looks = looks
            if got.resume is None:
                # No later place to resume from (no character of E far enough from the
                # end past `at`): the one this read resumed from stands, as the text only
                # grows (as Driver._lex keeps its resume). Dropped, the next read went
                # back to the token's start: a payload of prose dense with `<` was read
                # from its start at every other delta (issue 17).
                got.resume = wait.resume
            return got
        if stop == start:
            return None  # the driver takes no empty token
        if _could_grow(t, buf, start):
            return WAIT
        end = self._end(buf, stop, False)
        if end is None or end is WAIT:
            return end
        return self._call(buf[start:stop], pos, end, tools)

    def _call(
        self,
        payload: str,
        start: int,
        end: int,
        tools: Any,
        _scan=_SCAN,
        _half=_HALF_DEPTH,
        _dict=dict,
        _str=str,
        _new=object.__new__,
        _set=object.__setattr__,
    ) -> ToolCall | None:
        """The call, when the payload is a plain call object that json.loads reads."""
        # (What _repair.loads does first, without its checks for an empty or a too
        # deeply nested payload: such a payload goes the general way.)
        if len(payload) > _half and payload.count("{") + payload.count("[") > _half:
            return None
        # json.loads's decode() without its two Python-level calls: the value must be
        # the whole payload but for JSON whitespace around it.
        text = payload.strip(_JSON_SPACE)
        try:
            value, stop = _scan(text, 0)
        except (StopIteration, ValueError, RecursionError):  # (StopIteration: no value there)
            return None
        if stop != len(text) or type(value) is not _dict or len(value) != 2:
            return None
        name = value.get("name")
        arguments = value.get(self.args_key)
        if type(name) is not _str or type(arguments) is not _dict or not name or name.strip() != name:
            return None
        if text.count(":") > 2 + len(arguments) and _repair.may_repeat(text, value):
            # (A key written twice, maybe: see _repair.loads. One count at a glance: each key
            # has its colon; more colons, in values too, are looked at closer.)
            return None
        if self.offered_only and tools is not None and name not in tools:
            return None
        # (make_call, inline: a call less for each call read)
        call = _new(ToolCall)
        _set(call, "__dict__", {
            "name": name, "arguments": arguments, "id": None, "kind": "tool", "format": self.name, "span": (start, end),
            "repairs": (), "instructions": None,
        })  # fmt: skip
        return call

    def _end(self, buf: str, pos: int, final: bool) -> Any:
        """Where the end token at pos ends, lexed as Driver._lex does; WAIT; None."""
        n = len(buf)
        if pos >= n:
            return None if final else WAIT
        best = -1
        best_prio = None
        for t in self.ends:
            if best_prio is not None and t.priority < best_prio:
                break
            lit = t.literal
            if lit is not None:
                if buf.startswith(lit, pos):
                    end = pos + len(lit)
                elif not final and n - pos < len(lit) and lit.startswith(buf[pos:]):
                    return WAIT
                else:
                    continue
            else:
                m = t.pattern.match(buf, pos, partial=not final)
                if m is None:
                    continue
                end = m.end()
                if not final and (end >= n or _could_grow(t, buf, pos)):
                    return WAIT
                if m.partial or end == pos:
                    continue
            if end > best:
                best, best_prio = end, t.priority
        return best if best >= 0 else None


def frame_of(fmt: Format) -> Frame | JsonFrame | None:
    """The fast frame of fmt, or None when its grammar has none (built once, kept
    in fmt.compiled.derived: it dies with its format)."""
    if fmt.anchor or not fmt.starts:
        return None  # (see _derive: no frame, and no need to compile fmt to say so)
    try:
        derived = fmt.compiled.derived
    except Exception as exc:  # noqa: BLE001 - a grammar that does not compile: the general way says so
        if passes_through(exc):
            raise  # (a caller's timeout while the grammar compiled: not ours to swallow)
        return None
    try:
        return derived["frame"]
    except KeyError:
        pass
    try:
        frame = _derive(fmt)
    except Exception as exc:  # noqa: BLE001 - no fast path is always a correct answer
        if passes_through(exc):
            raise
        frame = None
    derived["frame"] = frame
    return frame


class JsonFrame:
    """The fast frame of a grammar whose region is literals, then a JSON payload (the
    whole of a `json_calls` rule, delimited by the bracket scanner), then an end
    token, which may be optional or absent; %ignore'd text may come between them
    (Nemotron's `<TOOLCALL>[…]</TOOLCALL>`, InternLM's, `functools[…]`).

    It reads a whole reply only (a stream goes the general way): it walks the
    tokens as the driver lexes them, and hands the payload to the Builder, as the
    general way does, so the calls, their spans and repairs are the same. Anything
    else (no match, a JSON value that never closes, an unreadable payload, a name
    not offered where the format wants one) goes the general way."""

    __slots__ = ("closers", "ends", "fmt", "ignore", "json", "optional", "steps")

    def __init__(self, fmt: Format, steps: tuple, json: Any, ends: tuple, optional: bool) -> None:
        self.fmt = fmt
        self.steps = steps  # the literals before the payload
        self.json = json.pattern  # the JSON terminal's pattern (what may start the value)
        self.ends = ends  # the terminals that may end the frame, best first
        self.optional = optional  # the region may end right after the payload
        self.ignore = tuple(t.pattern for t in fmt.compiled.ignore)
        # The strings that may end the frame, as a cut short one is told (_read's end):
        # an end terminal's literal, each string of one that is an alternation of them
        # (`_CLOSE: "<|im_end|>" | "<|end_header_id|>"`), the format's end markers. (A
        # pattern's were left out: `<|end_he` at the end of the reply was prose here and
        # markup cut short in a stream, which reads it the general way.)
        found = [s for t in ends for s in (_strings(t) or ())]
        self.closers = tuple(dict.fromkeys(found + list(fmt.ends)))

    _end = Frame._end  # (it reads only self.ends)

    def read(self, buf: str, pos: int, final: bool, tools: Any, wait: Any = None) -> Any:
        # (`wait`: Frame.read's resume point, which this frame never gives: it reads only a
        # whole text, Scanner.call_reads_at passes it to every frame alike.)
        if not final:
            return None
        return self._read(buf, pos, tools, -1)

    def settled(self, buf: str, pos: int, tools: Any, room: int) -> Any:
        """What read() gives at pos in the whole text, asked of a stream's text so far: the
        Region, or None, where no text after it can change that (room: the longest marker's
        length, the text read ending at least that far before the end of the text so far);
        WAIT where more text may. Scanner.call_reads_at asks it: a stream was told "no call
        reads here" (0) by read()'s None, which only means "the general way reads it", and
        cut a Python string that quotes such a call at a marker inside the call's JSON,
        where parse() read the call and cut the string at its marker (fuzz seed 7
        #108059290, #108081703, issue 17)."""
        return self._read(buf, pos, tools, room)

    def _read(self, buf: str, pos: int, tools: Any, room: int) -> Any:
        # (room < 0: a whole text. Else each place where the end of the text so far decides
        # is WAIT.)
        n = len(buf)
        near = n - room if room >= 0 else n + 1  # (text read past here may yet read otherwise)
        p = pos
        for literal in self.steps:
            while not buf.startswith(literal, p):
                if p >= near:
                    return WAIT
                p = self._skip(buf, p)
                if p < 0:
                    return None
            p += len(literal)
        while not (p < n and buf[p] in "{[" and self.json.match(buf, p)):
            if p >= near:
                return WAIT
            p = self._skip(buf, p)
            if p < 0:
                return None
        # Where the JSON decoder reads the whole value, it ends where the bracket scan
        # would; anything else (to be repaired, cut off) is the general way's, which
        # scans it (so the frame adds no second scan of a value that never closes).
        try:
            stop = _repair.scan_json(buf, p)[1]
        except (StopIteration, ValueError, RecursionError) as exc:
            # (Stopped near the end of the text so far: the value may yet read.)
            if room >= 0 and (type(exc) is not ValueError or getattr(exc, "pos", n) >= near):
                return WAIT
            return None
        end = stop  # (a `{` or `[` value whose brackets closed: more text changes nothing)
        if self.ends:
            q = stop
            while True:
                found = self._end(buf, q, True)
                if found is not None:
                    if found >= near and any(len(c) > found - q and c.startswith(buf[q:found]) for c in self.closers):
                        return WAIT  # (a longer end token may yet be written there)
                    end = found
                    break
                if q >= near:
                    return WAIT
                q = self._skip(buf, q)
                if q < 0:
                    if not self.optional:
                        return None
                    closers = self.closers
                    # (Only a rest shorter than a closer can be one cut short: no more of it is
                    # copied. All of it, for each call read, cost the square of a reply of calls.
                    # A `<` alone too: after a JSON value whose brackets closed, the general way
                    # reads it as the end marker begun, markup (close.cut_close), where the end
                    # marker is optional as where it is not: `<|im_start|>{…}\n<` kept the `<`
                    # as text here and not in a stream (issue 17).)
                    at = _SPACE.match(buf, stop).end()
                    if room >= 0 and at + max(map(len, closers), default=0) > n:
                        return WAIT  # (a closer may yet be cut short at the end of the text so far)
                    rest = buf[at : at + max(map(len, closers), default=0)]
                    if cut_marker(rest, closers) or (len(rest) == 1 and any(len(m) > 1 and m.startswith(rest) for m in closers)):
                        return None  # (an end marker cut short by the end: the general way's repair)
                    break  # (the region never ends inside ignored text)

        tree = Tree("json_calls", [Tok("JSON", buf[p:stop], p, stop)])
        try:
            items = Builder(self.fmt, tools, (pos, end), buf=buf).build(tree)
        except (Unreadable, RecursionError):
            return None
        if self.fmt.offered_only and tools is not None:
            if any(type(item) is Draft and item.name not in tools for item in items):
                return None
        return Region(pos, end, self.fmt.name, items, [])

    def _skip(self, buf: str, p: int) -> int:
        """Past the %ignore'd text at p, as the driver skips it where no token fits; -1."""
        for pattern in self.ignore:
            m = pattern.match(buf, p)
            if m is not None and m.end() > p:
                return m.end()
        return -1


def _derive(fmt: Format) -> Frame | JsonFrame | Any:
    if fmt.anchor or not fmt.starts:
        return None  # anchored formats are read where the reply starts, not here
    if fmt.name in _gemcall.FORMATS:
        return _gemcall.GemmaFrame(fmt) if _gemcall.fits(fmt) else None  # (Gemma 4's calls: gemcall.py)
    walk = _walk(fmt.compiled)
    if walk is None:
        return None
    terms, payload, ends, optional = walk
    if payload < 0:
        return None
    if terms[-1].name == "JSON":
        # Literals, then the payload: a JsonFrame (the literals are tried first, as
        # the driver does, so %ignore'd text may come between them).
        steps = terms[:-1]
        if payload != len(steps) or not steps or any(t.literal is None for t in steps):
            return None
        if steps[0].literal not in fmt.starts:
            return None
        return JsonFrame(fmt, tuple(t.literal for t in steps), terms[-1], ends, optional)
    # A run of patterns: one regex, which needs an end token and no %ignore'd text
    # (nor a bracket-delimited token anywhere).
    if fmt.compiled.ignore or not ends or any(t.name in ("JSON", "PYVALUE") for t in terms):
        return None
    bodies = [_body(t) for t in terms]
    if None in bodies:
        return None
    body = terms[payload]
    if body.literal is not None or body.name.startswith("_"):
        return None  # (kept out of the tree: the builder would read no payload)
    if body.name in fmt.compiled.json_text:
        first = CALL_TAG_FIRST if body.name in fmt.compiled.call_text else TAG_FIRST
        bodies[payload] = f"(?!{first})" + bodies[payload]  # (no tag first: as the driver lexes)
    frame = Frame(fmt, lazy(regex.compile, "".join(f"((?>{b}))" for b in bodies)), terms, payload + 1, ends)
    if body.name in fmt.compiled.json_text:
        frame.first = _CALL_TAG_FIRST if body.name in fmt.compiled.call_text else _TAG_FIRST
    return frame


def _walk(c: Compiled) -> tuple | None:
    """The one run of tokens the table admits from its start: (terms, payload,
    ends, optional), the terminals of the run (one allowed at each step), the
    index of the one that is the whole of a json_calls rule (-1: none), the
    terminals that may end it (each ends the frame; () when nothing may follow),
    and whether the region may also end without one of them. None when the table
    allows more than one way on, or a rule that means something."""
    stack = [c.start_state]
    # A symbol stack beside the state stack: token indices each entry covers.
    covers: list[list[int]] = []
    terms: list = []
    payload = -1
    for index in range(12):
        allowed = c.allowed[stack[-1]]
        if not allowed:
            found = _take(c, list(stack), [list(x) for x in covers], "$END", index)
            if found is None:
                return None
            ends, optional = (), True
        else:
            # (A bracket-delimited token never ends a frame: its end is not a pattern.)
            bracketed = any(t.name in ("JSON", "PYVALUE") for t in allowed)
            ending = None if bracketed else _ending(c, stack, covers, allowed, index)
            if ending is None:
                if len(allowed) != 1:
                    return None
                t = allowed[0]
                found = _take(c, stack, covers, t.name, index)
                if found is None:
                    return None
                payload = found if found >= 0 else payload
                terms.append(t)
                continue
            found = ending[0]
            ends, optional = tuple(allowed), simulate(c, stack, "$END") is not None
        payload = found if found >= 0 else payload
        return (tuple(terms), payload, ends, optional) if terms else None
    return None


def _ending(c: Compiled, stack: list, covers: list, allowed: tuple, index: int) -> tuple | None:
    """When each allowed terminal ends the frame (nothing may follow it), the
    payload's token index it reveals (-1: none) in a 1-tuple; else None. (They are
    lexed as the driver does, in Frame._end: the longest of the best priority.)"""
    payload = -1
    for t in allowed:
        after_stack, after_covers = list(stack), [list(x) for x in covers]
        found = _take(c, after_stack, after_covers, t.name, index)
        if found is None or c.allowed[after_stack[-1]] or not c.accepts_end[after_stack[-1]]:
            return None
        if _take(c, after_stack, after_covers, "$END", index + 1) is None:
            return None
        if found >= 0:
            if payload >= 0 and found != payload:
                return None
            payload = found
    return (payload,)


def _take(c: Compiled, stack: list, covers: list, term: str, index: int) -> int | None:
    """Feed `term` (token `index`) to the state stack, checking the rules it reduces.
    Returns the payload's token index if a json_calls rule was reduced, -1 if not,
    None if the frame is unfit (the term is rejected, or a rule means something)."""
    payload = -1

    def reduced(rule) -> bool:
        nonlocal payload
        size = len(rule.expansion)
        covered = [i for entry in covers[len(covers) - size :] for i in entry] if size else []
        if size:
            del covers[-size:]
        covers.append(covered)
        name = rule_name(rule.origin.name)
        if name == vocabulary.PAYLOAD:
            if len(covered) != 1 or size != 1:
                return False
            payload = covered[0]
        elif name != "start" and not str(rule.origin.name).startswith("_"):
            return False
        return True

    if not step(c, stack, term, reduced):
        return None
    if term != "$END":  # (a shift: the token is on the stack)
        covers.append([index])
    return payload


def _strings(t) -> tuple[str, ...] | None:
    """The strings a terminal matches, when it is a plain string or an alternation
    of them (`"<|im_end|>" | "<|im_start|>"`); None for any other pattern."""
    if t.literal is not None:
        return (t.literal,)
    try:
        found = _expand(_regex_loops.sre().parse(t.source))
    except Exception as exc:  # noqa: BLE001 - a pattern only the `regex` module reads (or no parser: None)
        if passes_through(exc):
            raise
        return None
    return tuple(found) if found else None


def _expand(items) -> list[str] | None:
    """Every string a parsed pattern of literals, groups and alternations matches."""
    _C = _regex_loops._C  # (set: _strings asked sre() first)
    out = [""]
    for op, av in items:
        if op is _C.LITERAL:
            choices = [chr(av)]
        elif op is _C.IN and all(o is _C.LITERAL for o, _ in av):
            choices = [chr(c) for _, c in av]
        elif op is _C.SUBPATTERN:
            choices = _expand(av[-1])
        elif op is _C.BRANCH:
            choices = []
            for branch in av[1]:
                more = _expand(branch)
                if more is None:
                    return None
                choices += more
        else:
            return None
        if choices is None or len(out) * len(choices) > 64:
            return None
        out = [a + b for a in out for b in choices]
    return out


_FLAGS = lazy(regex.compile, r"\(\?[aiLmsux]+\)")


def _body(t) -> str | None:
    """The terminal's pattern, for use inside a larger one (None: not usable)."""
    source = t.source
    if _FLAGS.match(source):
        return None  # global flags cannot sit inside a group
    return source


def run(
    sc: Any, out: list, buf: str, call: ToolCall, nxt: dict, marker: str, frame: Any, _new=tuple.__new__
) -> int:
    """For Scanner._in_prose, in a whole reply with a sink (parse), at a call a fast
    frame read (the scanner `sc`'s state is read, not changed): that call and the ones after it that fast frames read, each with the prose before it, go to
    the sink at once (after the items so far), with none of the items that the
    general loop would make and the sink take apart again. Returns where the run
    stops: at the next marker that is not such a call (the loop reads it, as it
    would have); or -1 where no marker follows, the rest of the text, as the loop
    would make it, put in `out`."""
    sink = sc.sink
    take = sink.take
    start = end = -1
    prose = ""
    if out:
        last = out[-1]
        if type(last) is Piece and last[2] == call.span[0] and last[0] == "text":
            out.pop()  # (the prose just before the call goes with it, as in the loop below)
            _, start, end, prose = last
        if out:
            sink.extend(out)
            out.clear()
    frames, line, tools, frame_type = sc.frames, sc.line, sc.tools, Frame
    gemma_type = _gemcall.GemmaFrame  # (its calls too, read one at a time: it has no `after`)
    pos = call.span[1]
    take(start, end, prose, call)
    keys = sc.whole_keys
    one, symbols = (keys[0], sc.symbols) if len(keys) == 1 and keys[0] in sc.symbol_chars else ("", None)
    # The marker characters the text holds, when it holds no word marker: the prose
    # before a call that frame.after reads holds none of them (tools given, a Hermes
    # reply holds `>` and `{` too: a marker of a format read only with tools starts so).
    stops = "".join(keys) if keys and sc.symbol_chars.issuperset(keys) else ""
    # The marker of the call just read, when the next one found in the text may be
    # taken for it without a look at the markers: the text holds marker characters
    # only, and this marker is a symbol marker that no other extends, with no line
    # condition (the common case: call after call in one format).
    unextended = sc.unextended
    again = marker if stops and type(frame) is frame_type and marker in unextended and marker not in line else None
    closer = closer_of(frame.fmt, buf, pos)
    if closer and again is not None and closer[0] not in stops:
        again = None  # (frame.after's prose, free of the markers' first characters, might hold the closer)
    plain = sink.plain()
    if plain is not None:
        segments, note, calls, offered = plain
        keep = calls.append
    ascii = buf.isascii()  # (see Frame.after)
    quote = quoted  # (a marker after prose with a quote may be inside a string: instring.py)
    find = buf.find
    # (What a marker's check read, kept for the next: instring.Reading, made where a check
    # first reads, as Scanner._in_string makes it: prose with no quote asks for none.)
    while True:
        if again is not None:
            # The next call of the same format, right after prose (or none), read
            # by one match (see Frame.after); else the same, the long way below.
            # (The prose is matched free of the marker's first character alone, and the other
            # stops are each looked for in it by a find, a memchr: a class of several
            # characters is matched a character at a time, twice as slow. With tools, a
            # Hermes reply's stops are `<`, `>` and `{`.)
            others = stops.replace(again[0], "") if again[0] in stops else ""
            after = frame.after(again, ascii, again[0] if others else stops)
            read, payload = frame._call, frame.payload
            # (With no tools, the calls go in as they are, and their segments as one
            # CallRun, made whole only if they are read: see model.CallRun.)
            run_from, first = pos, (-1 if plain is None else len(calls))
            while after is not None:
                m = after(buf, pos)
                if m is None:
                    break
                i = m.start(1)
                if others and i > pos:
                    for c in others:
                        if buf.find(c, pos, i) >= 0:
                            m = None  # (the match of the prose free of every stop finds none)
                            break
                    if m is None:
                        break
                # (_shown and quote need a character of these in the prose, or a quote mark
                # right before the marker: most prose has none, told by finds, no call.)
                if i > pos and (buf[i - 1] in _OPENS or find("`", pos, i) >= 0 or find("~", pos, i) >= 0 or find('"', pos, i) >= 0 or find("'", pos, i) >= 0 or find("<", pos, i) >= 0):
                    if _shown(buf, pos, i) or quote(buf, pos, i) and in_string(buf, i, pos, _reading(sc), 0, True, i + len(again), sc.ends_of(again)):
                        break  # (inside a string of a call no format read, or shown: the loop tells it)
                got = read(m.group(payload), i, m.end(), tools)
                if got is None:
                    break  # (the loop below reads it again, and takes the general way)
                if plain is not None and offered is not None and got.name not in offered:
                    break  # (refused: the loop reads it again, and take() makes it an error)
                if plain is None:
                    take(pos, i, buf[pos:i], got)
                else:  # (take(), inline)
                    if pos < i:
                        note(buf[pos:i])
                    note(None)  # (the cut)
                    keep(got)
                pos = got.span[1]
                if not closer or not buf.endswith(closer, 0, pos):
                    # A call that ends otherwise than the one before (`<|im_start|>`, a
                    # turn's token, for `</tool_call>`): the closer written again after
                    # it is its own (the check below, as Scanner.after_call notes each
                    # call's). (One that ends with the same closer has it: no format's
                    # closer is a proper suffix of another's, which closer_of would take.)
                    closer = closer_of(frame.fmt, buf, pos)
                    if closer and closer[0] not in stops:
                        again = m = None  # (the prose after it may hold the closer: see above)
                        break
            if first >= 0 and len(calls) > first:
                segments.append(_new(CallRun, ("call", run_from, pos, calls[first:])))
            if after is not None and m is not None:
                return pos  # (the call it could not read: the loop reads it again, the general way)
        if closer and _written_again(buf, pos, closer):
            # The call's closer written again: the loop takes it (Scanner._closer_again).
            sc.closed_at, sc.closer = pos, closer
            return pos
        turn = turn_closer(frame.fmt, buf, pos) if frame.fmt.end_of_turn else ""
        if turn and (not closer or closer == turn) and (assistant_turn(buf, pos, True) or _written_again(buf, pos, turn)):
            # The model's next turn opened after the call's end-of-turn token, or that
            # token written again (`<|im_end|><|im_end|>`): the loop takes it (Scanner.
            # _closer_again; a stream, which reads the call the general way, made the
            # second token markup where parse() left it in the text: QA32 P1).
            sc.closed_at, sc.closer, sc.closer_turn = pos, turn, True
            return pos
        # (_whole_next's search when the text holds one symbol character, inline)
        i = buf.find(one, pos) if one else -1
        if again is not None and i >= 0 and buf.startswith(again, i) and buf[i - 1] != "`" and not _shown(buf, pos, i):
            if quote(buf, pos, i) and in_string(buf, i, pos, _reading(sc), 0, True, i + len(again), sc.ends_of(again)):
                return pos  # (the loop tells it: Scanner._in_string)
            got = frame.read(buf, i, True, tools)
            if type(got) is not ToolCall:
                return pos  # (the loop reads it again, and takes the general way)
            take(pos, i, buf[pos:i], got)
            pos = got.span[1]
            continue
        m = symbols.match(buf, i) if i >= 0 else None
        if m is not None:
            marker = m.group()
        else:
            found = None if one and i < 0 else sc._whole_next(buf, pos, nxt)  # (one: the only key)
            if found is None:
                if pos < len(buf):
                    if plain is None:
                        out.append(_piece("text", pos, len(buf), buf[pos:]))
                    else:  # (what the sink would do with that piece)
                        segments.append(_new(Segment, ("text", pos, len(buf))))
                        note(buf[pos:])
                return -1
            i, marker = found
        frame = frames[marker]
        # (What the loop does first, at a marker that is neither <think> tag nor in
        # `line`, has no backtick before it, and has a Frame: it reads the frame.)
        if (type(frame) is not frame_type and type(frame) is not gemma_type) or marker in line or (i > 0 and buf[i - 1] == "`") or _shown(buf, pos, i) or (quote(buf, pos, i) and in_string(buf, i, pos, _reading(sc), 0, True, i + len(marker), sc.ends_of(marker))):
            return pos
        got = frame.read(buf, i, True, tools)
        if type(got) is not ToolCall:
            return pos  # (the loop reads it again, and takes the general way)
        take(pos, i, buf[pos:i], got)
        pos = got.span[1]
        again = marker if stops and marker in unextended and type(frame) is frame_type else None  # (not in line: see above)
        closer = closer_of(frame.fmt, buf, pos)
        if closer and again is not None and closer[0] not in stops:
            again = None


def _reading(sc: Any) -> Reading:
    """The scanner's instring.Reading, made when first asked for."""
    reading = sc.reading
    if reading is None:
        reading = sc.reading = Reading()
    return reading


def _shown(buf: str, pos: int, i: int) -> bool:
    """Whether the marker at i, the prose before it from pos on (the last call's end),
    may be a call the prose shows (quotation.py): an opening quote right before it, or a
    code fence in that prose. The loop tells it (Scanner._in_string, _in_sample).
    (A fence is looked for from its character's first place, found by a one-character
    find, a memchr: a three-character find reads the prose a character at a time, 1.6 µs
    for 380 characters, and prose most often holds neither character.)"""
    if i > 0 and buf[i - 1] in _OPENS:
        return True
    j = buf.find("`", pos, i)
    if j >= 0 and buf.find("```", j, i) >= 0:
        return True
    j = buf.find("~", pos, i)
    return j >= 0 and buf.find("~~~", j, i) >= 0


def _written_again(buf: str, end: int, closer: str) -> bool:
    """Whether `closer`, which ends a call at `end`, is written again right after it,
    blanks between (as many as Scanner._repeated allows), in a whole text."""
    j = end
    stop = min(len(buf), end + STUTTER_BLANKS)
    while j < stop and buf[j].isspace():
        j += 1
    return buf.startswith(closer, j)


def turn_closer(fmt: Format, buf: str, end: int) -> str:
    """The end-of-turn token of `fmt` (`// end_of_turn:`) that its call ending at `end`
    ends with, its grammar reading it as the call's close (Llama 3's `<|eot_id|>`), a
    quiet format's too; "" when it ends with none. What the template writes after it
    is Scanner._closer_again's (assistant_turn)."""
    for t in fmt.end_of_turn:
        if buf.endswith(t, 0, end):
            return t
    return ""


# A chat template's turn boundary after its end-of-turn token (Scanner._turn_between,
# _closer_again): blanks, the next turn's opener and role, blanks; each part bounded, so
# that a stream reads it whole within TURN_MOST characters of the token.
TURN_BOUNDARY = regex.compile(
    r"[ \t]{0,8}+(?:\r?\n){0,2}+[ \t]{0,8}+"
    r"(?:(?:<\|im_start\|>|<\|start_header_id\|>)(?P<role>[A-Za-z_]{1,32}+)(?:<\|end_header_id\|>)?+[ \t]{0,8}+(?:\r?\n){0,2}+[ \t]{0,8}+)?+"
)
TURN_MOST = 112  # (the longest TURN_BOUNDARY match: 108 characters)
_TURN_OPENERS = ("<|im_start|>", "<|start_header_id|>")


def assistant_turn(buf: str, at: int, final: bool) -> int | None:
    """Where the boundary ends that opens the model's own next turn at `at` (right after
    an end-of-turn token: `\n<|im_start|>assistant\n`,
    `<|start_header_id|>assistant<|end_header_id|>\n\n`), 0 where none opens there, None
    while a stream's text cannot tell yet: the text after `at` may still become one (its
    blanks, then an opener or the start of one) and is no longer than the longest."""
    m = TURN_BOUNDARY.match(buf, at)
    role = m.group("role")
    if not final and len(buf) - at <= TURN_MOST:
        if role is not None:
            return None
        rest = buf[m.end() :]
        if any(o.startswith(rest) or rest.startswith(o) for o in _TURN_OPENERS):
            return None
    return m.end() if role == "assistant" else 0


def closer_of(fmt: Format, buf: str, end: int) -> str:
    """The closer that the call of `fmt` ending at `end` ends with, which written again
    right after it is markup (Scanner._closer_again): the longest of the format's end
    markers, or of its declared call's closer (Qwen3-Coder's `</function>`), of three
    characters or more; "" when it ends with none, or fmt is quiet (a fence's ``` is
    no call's closer written twice)."""
    if fmt.quiet:
        return ""
    found = ""
    for c in fmt.ends:
        if len(c) > len(found) and len(c) >= 3 and buf.endswith(c, 0, end):
            found = c
    call = fmt.stream_call
    if call is not None and len(call[1]) > len(found) and buf.endswith(call[1], 0, end):
        found = call[1]
    return found


# The most blanks between an opener and the same opener written again (a stutter:
# Scanner._repeated), and between a call's closer and the closer written again.
STUTTER_BLANKS = 16
