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

The module also holds `opens`, a cheap test, built from the table too, that
rules out formats anchored to the reply's start which would certainly fail
there (see below).
"""

from __future__ import annotations

from typing import Any

import regex
from lark import Tree

from .._recover import repair as _repair
from .._build.builder import Builder, Draft, Unreadable
from .._lalr.driver import (
    _C, CALL_TAG_FIRST, TAG_FIRST, Tok, _could_grow, _loop_wait, _sre, closing_plan, cut_marker, simulate, step,
)
from .._result.model import ToolCall, make_call
from .._grammar.registry import Compiled, Format
from .._grammar.words import fast

WAIT = "wait"
_SCAN = _repair._JSON.scan_once  # (the decoder _repair.loads tries first)
_JSON_SPACE = " \t\n\r"
_HALF_DEPTH = _repair.MAX_DEPTH // 2

# The rules a frame's tree may hold: `start`, this one (the payload's), and rules
# the builder walks through without reading (Lark's `__start_…` helpers, `_inlined`).
_PAYLOAD_RULE = "json_calls"

# Switched off (frames and opening tests both) by the tests that compare the
# fast path with the general way.
enabled = True


class Frame:
    """One format's fast frame (see the module's docstring); built by frame_of."""

    __slots__ = (
        "fmt", "pattern", "whole", "whole_ascii", "whole_any", "terms", "payload", "ends", "args_key", "offered_only",
        "name", "empty", "_after",
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
            self.whole = regex.compile(pattern.pattern + "(" + "|".join(map(regex.escape, alts)) + ")")
            self.whole_ascii, self.whole_any = fast(self.whole)
        self._after: dict[tuple[str, bool], Any] = {}

    def after(self, marker: str, ascii: bool) -> Any:
        """For Scanner._run, in a whole text where `marker` (which this frame reads)
        is the only marker that may start at its first character: the match, at a
        position, of the prose up to the next such character (none is a backtick),
        then this frame's whole call at it, that marker first; its groups those of
        `whole`. One match for what would be a search, two tests and read(). None
        where read() takes another way (no `whole`, or a token that may be empty).
        ascii: whether the text is ASCII (see _words.fast)."""
        key = (marker, ascii)
        try:
            return self._after[key]
        except KeyError:
            pass
        found = None
        if self.whole is not None and not self.empty and marker:
            prose = f"[^{regex.escape(marker[0])}]*(?<!`)(?={regex.escape(marker)})"
            found = regex.compile(prose + self.whole.pattern)
            found = fast(found)[0 if ascii else 1].match
        self._after[key] = found
        return found

    def read(self, buf: str, pos: int, final: bool, tools: Any) -> Any:
        """The call framed at pos (a ToolCall: a region holding just it, its span in
        buf's positions, no repairs); None (the general way must read it); or a wait:
        WAIT, or a _LoopWait whose absorbs() tells which deltas change nothing."""
        if final and self.whole is not None:
            m = (self.whole_ascii if buf.isascii() else self.whole_any).match(buf, pos)
            if m is None or (self.empty and "" in m.groups()):  # (the driver takes no empty token)
                return None
            return self._call(m.group(self.payload), pos, m.end(), tools)
        m = self.pattern.match(buf, pos, partial=not final)
        if m is None:
            return None
        if m.partial:
            return WAIT
        for i, t in enumerate(self.terms, 1):
            if m.start(i) == m.end(i):
                return None  # the driver takes no empty token
            # The driver waits where more text could change a token, the engine having
            # looked at the end of the text to settle it; so do we.
            if not final and t.literal is None and _could_grow(t, buf, m.start(i)):
                if m.end(i) == len(buf) and i == len(self.terms):
                    # The last token runs to the end of the text (a payload whose close
                    # tag has not come yet): when its pattern tells from a delta alone
                    # whether it goes on (see Driver.absorbs), wait with that.
                    return _loop_wait(t, buf, m.start(i), len(buf)) or WAIT
                return WAIT
        end = self._end(buf, m.end(), final)
        if end is None or end is WAIT:
            return end
        return self._call(m.group(self.payload), pos, end, tools)

    def _call(
        self, payload: str, start: int, end: int, tools: Any, _scan=_SCAN, _half=_HALF_DEPTH, _dict=dict, _str=str
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
        if self.offered_only and tools is not None and name not in tools:
            return None
        return make_call(name, arguments, None, "tool", self.name, (start, end), (), None)

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


_FRAMES: dict[Format, Any] = {}


def frame_of(fmt: Format) -> Frame | JsonFrame | None:
    """The fast frame of fmt, or None when its grammar has none (compiled once)."""
    try:
        return _FRAMES[fmt]
    except KeyError:
        pass
    try:
        frame = _derive(fmt)
    except Exception:  # noqa: BLE001 - no fast path is always a correct answer
        frame = None
    _FRAMES[fmt] = frame
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

    __slots__ = ("fmt", "steps", "json", "ends", "optional", "ignore")

    def __init__(self, fmt: Format, steps: tuple, json: Any, ends: tuple, optional: bool) -> None:
        self.fmt = fmt
        self.steps = steps  # the literals before the payload
        self.json = json.pattern  # the JSON terminal's pattern (what may start the value)
        self.ends = ends  # the terminals that may end the frame, best first
        self.optional = optional  # the region may end right after the payload
        self.ignore = tuple(t.pattern for t in fmt.compiled.ignore)

    _end = Frame._end  # (it reads only self.ends)

    def read(self, buf: str, pos: int, final: bool, tools: Any) -> Any:
        if not final:
            return None
        n = len(buf)
        p = pos
        for literal in self.steps:
            while not buf.startswith(literal, p):
                p = self._skip(buf, p)
                if p < 0:
                    return None
            p += len(literal)
        while not (p < n and buf[p] in "{[" and self.json.match(buf, p)):
            p = self._skip(buf, p)
            if p < 0:
                return None
        # Where the JSON decoder reads the whole value, it ends where the bracket scan
        # would; anything else (to be repaired, cut off) is the general way's, which
        # scans it (so the frame adds no second scan of a value that never closes).
        try:
            stop = _repair.scan_json(buf, p)[1]
        except (StopIteration, ValueError, RecursionError):
            return None
        end = stop
        if self.ends:
            q = stop
            while True:
                found = self._end(buf, q, True)
                if found is not None:
                    end = found
                    break
                q = self._skip(buf, q)
                if q < 0:
                    if not self.optional:
                        return None
                    rest = buf[stop:].lstrip()
                    if cut_marker(rest, [t.literal for t in self.ends if t.literal]):
                        return None  # (an end marker cut short by the end: the general way's repair)
                    break  # (the region never ends inside ignored text)
        from .scanner import Region  # (the scanner imports this module)

        tree = Tree("json_calls", [Tok("JSON", buf[p:stop], p, stop)])
        try:
            items = Builder(self.fmt, tools, (pos, end)).build(tree)
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


def _derive(fmt: Format) -> Frame | JsonFrame | None:
    if fmt.anchor or not fmt.starts:
        return None  # anchored formats are read where the reply starts, not here
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
    return Frame(fmt, regex.compile("".join(f"((?>{b}))" for b in bodies)), terms, payload + 1, ends)


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
        name = str(rule.origin.name).rpartition("__")[2]
        if name == _PAYLOAD_RULE:
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
        found = _expand(_sre.parse(t.pattern.pattern))
    except Exception:  # noqa: BLE001 - a pattern only the `regex` module reads
        return None
    return tuple(found) if found else None


def _expand(items) -> list[str] | None:
    """Every string a parsed pattern of literals, groups and alternations matches."""
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


_FLAGS = regex.compile(r"\(\?[aiLmsux]+\)")


def _body(t) -> str | None:
    """The terminal's pattern, for use inside a larger one (None: not usable)."""
    source = t.pattern.pattern
    if _FLAGS.match(source):
        return None  # global flags cannot sit inside a group
    return source


# -- a cheap test before a reply-anchored format is tried -------------------------
#
# A reply that starts with prose ("The weather…") is tried against every format
# anchored to the reply's start whose first token can begin there (a name, for
# the marker-less formats): three drivers that fail at their second token, which
# cost more than the rest of a short reply. `opens(fmt, …)` rules most of them out
# with one regex built from the table: a first token, %ignore'd text, then a token
# the grammar allows next, or what lets the driver close the frame early (the text
# ending, or a character a marker or end marker starts with). The regex allows
# more than the driver does (any allowed token at each step, and, in a stream,
# any match of each terminal, the text being incomplete), so where it finds
# nothing, the driver would have failed: a format it rules out is one that could
# not read the reply. For a whole text each token is an atomic group: the match
# the lexer takes there (its pattern's, as Driver._lex matches it).

_OPENINGS: dict[tuple, Any] = {}
_STARTERS: dict[tuple[Format, str], frozenset | None] = {}
_ANY: dict[tuple, Any] = {}


def opens(fmt: Format, buf: str, pos: int, final: bool, firsts: frozenset) -> bool:
    """False only when fmt's driver, started at pos, is certain to fail."""
    if not enabled:
        return True
    pattern, _, for_ascii, for_any = _test(fmt, firsts, starters(fmt, buf[pos : pos + 1]))
    if pattern is None:
        return True
    if final:
        return (for_ascii if buf.isascii() else for_any).match(buf, pos) is not None
    return pattern.match(buf, pos, partial=True) is not None


def _test(fmt: Format, firsts: frozenset, keep: frozenset | None = None) -> tuple[Any, Any, Any, Any]:
    """fmt's opening test, built once: (the pattern, for partial matches; the same
    for a whole text; that one as run on an ASCII text, and on any text: by `re`
    where it matches there as `regex` does, twice as fast: _words.fast), or Nones.
    keep: only these first tokens may start the region (see starters)."""
    key = (fmt, firsts, keep)
    found = _OPENINGS.get(key)
    if found is None:
        try:
            pattern, whole = _opening(fmt, firsts, False, keep), _opening(fmt, firsts, True, keep)
        except Exception:  # noqa: BLE001 - no test: the driver decides, as before
            pattern = whole = None
        found = _OPENINGS[key] = (pattern, whole, *fast(whole))
    return found


def can_start(t: Tok, ch: str) -> bool:
    """May a token of terminal t begin with the character ch?"""
    if t.literal is not None:
        return t.literal.startswith(ch)
    return t.pattern.match(ch, partial=True) is not None


def starters(fmt: Format, ch: str) -> frozenset | None:
    """The names of fmt's first tokens that may begin with ch, a region's first
    character; None where no such cut holds (no character, or an %ignore'd token
    may begin with it). The opening test needs only those: a reply that starts
    "the" is not tried for `<|channel|>` or `[TOOL_CALLS]`. (There are a few such
    sets for all the characters there are: tests are built per set.)"""
    key = (fmt, ch)
    try:
        return _STARTERS[key]
    except KeyError:
        pass
    c = fmt.compiled
    found = None
    if ch and not any(can_start(t, ch) for t in c.ignore):
        found = frozenset(t.name for t in c.allowed[c.start_state] if can_start(t, ch))
    if len(_STARTERS) < 100_000:
        _STARTERS[key] = found
    return found


def opening(fmts: list[Format], firsts: frozenset, ch: str) -> tuple:
    """For a region of one of fmts starting with ch: (fmts, one search of all their
    tests, the same for a whole text, each format's tests), for openers()."""
    keeps = [starters(fmt, ch) for fmt in fmts]
    key = (*fmts, firsts, *keeps)
    found = _ANY.get(key)
    if found is None:
        tests = [_test(fmt, firsts, keep) for fmt, keep in zip(fmts, keeps)]
        pattern = for_ascii = for_any = None
        if all(t[0] is not None for t in tests):
            pattern = regex.compile("|".join(f"(?:{t[0].pattern})" for t in tests))
            for_ascii, for_any = fast(regex.compile("|".join(f"(?:{t[1].pattern})" for t in tests)))
        found = (fmts, pattern, for_ascii, for_any, tests)
        if len(_ANY) < 10_000:
            _ANY[key] = found
    return found


def openers(test: tuple, buf: str, pos: int, final: bool) -> list[Format]:
    """The formats of opening()'s `test` whose driver, started at pos (where
    opening()'s character is), is not certain to fail: opens() of each, after
    one search of all their tests (a reply that starts with prose fails it)."""
    fmts, pattern, for_ascii, for_any, tests = test
    if not fmts or not enabled:
        return fmts
    k = 2 if final and buf.isascii() else 3  # (the tests' whole-text patterns: see _test)
    if pattern is not None:
        if final:
            hit = (for_ascii if k == 2 else for_any).match(buf, pos)
        else:
            hit = pattern.match(buf, pos, partial=True)
        if hit is None:
            return []
    if final:
        return [f for f, t in zip(fmts, tests) if t[0] is None or t[k].match(buf, pos) is not None]
    return [f for f, t in zip(fmts, tests) if t[0] is None or t[0].match(buf, pos, partial=True) is not None]


def _opening(fmt: Format, firsts: frozenset, atomic: bool = False, keep: frozenset | None = None) -> Any:
    """fmt's opening test. atomic=True: for a whole text, each token's pattern an
    atomic group, taking what the driver's lexer takes there (its pattern's match)
    and no shorter part of it: a prose word is then not tried again, one character
    shorter at a time, as a name. keep: the first tokens to try (None: all)."""
    c = fmt.compiled
    first = c.allowed[c.start_state]
    if keep is not None:
        first = [t for t in first if t.name in keep]
    if not first or c.accepts_end[c.start_state] or any(_body(t) is None for t in (*first, *c.ignore)):
        return None  # (a grammar that reads an empty region needs no first token)
    alt = "|".join
    # %ignore'd text is skipped a whole token at a time, as the driver does: an atomic
    # group each (and no `(?:\s+)*`, whose backtracking is exponential).
    ignore = f"(?:{alt(f'(?>{_body(t)})' for t in c.ignore)})*" if c.ignore else ""
    # The driver closes a frame early (Driver._close) at an end marker, and, only where
    # literals it may supply complete the frame (closing_plan), where the text ends or
    # a call marker starts.
    ends = "".join(sorted({e[0] for e in fmt.ends if e}))
    stops = "".join(sorted(set(firsts) | set(ends)))

    def closing(stack: list) -> str:
        if closing_plan(c, stack, fmt.ends) is not None:
            return r"\s*(?:\Z" + (f"|[{regex.escape(stops)}]" if stops else "") + ")"
        return rf"\s*[{regex.escape(ends)}]" if ends else "(?!)"

    def after(stack: list | None, depth: int) -> str:
        """What may follow the tokens read so far (the parser at `stack`): tokens
        up to `depth` more, or a way to close; "" where anything may follow."""
        if stack is None or depth == 0 or c.accepts_end[stack[-1]]:
            # The parser refuses the last token (an end marker may still close the
            # frame), or the region may end here: nothing more to test.
            return ""
        allowed = first if stack == [c.start_state] else c.allowed[stack[-1]]
        ways = []
        for u in allowed:
            if u.name in ("JSON", "PYVALUE"):
                # Delimited by the bracket scanner: what it may start with is enough.
                ways.append(_body(u) if u.name == "JSON" else r"[^\s,)\]]")
                continue
            body = _body(u)
            if body is None:
                return ""
            # (Deeper only where few tokens are allowed: the pattern stays small.)
            rest = after(simulate(c, stack, u.name), depth - 1) if len(allowed) <= 8 else ""
            token = f"(?>{body})" if atomic else f"(?:{body})"
            ways.append(f"{token}{ignore}(?:{rest})" if rest else token)
        if stack != [c.start_state]:  # (with nothing read there is no frame to close)
            ways.append(closing(stack))
        return alt(ways)

    # The first three tokens: a prose word is often a NAME, and the newline after
    # it a separator some grammar allows (functionary's NAME\n{…}).
    test = after([c.start_state], 3)
    if not test:
        return None
    # (The driver skips %ignore'd text where no token fits, the first one included;
    # with `keep`, none can start where the region does.)
    return regex.compile(("" if keep is not None else ignore) + "(?:" + test + ")")
