"""Cheap tests for formats anchored to the reply's start (or first on a line):
whether a format's driver, started at a place, is certain to fail there.

They are built from the LALR table (see _opening below) and switched off with
the fast frames (fastpath.enabled): tests/test_frame.py compares both ways.
"""

from __future__ import annotations

from typing import Any

import regex

from .._guard import passes_through
from . import fastpath as _frame
from .._lalr.close import plan_before
from .._lalr.table import closing_plan, simulate
from .._lalr.tokens import Tok
from .._grammar.registry import Format
from .._grammar.words import Lazy, fast_source

_body = _frame._body

#: A stream starts the drivers of the formats that must open the reply (or a line)
#: once this much of it (after blanks) has come; until then a delta runs only their
#: opening test (Scanner._start, Scanner._in_prose; storm.py's stream reading too).
_START_WAIT = 32

# A cheap test before a reply-anchored format is tried.
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

# What is worked out per format is kept in its compiled.derived (so it dies with
# the format): "openings" (_test), "starters", "opens" (may_open), and "any"
# (opening(), on the first of the formats it is about).

#: The most entries each of those keeps per format (replies start with anything).
_PER_FORMAT = 10_000
_NO_FORMATS: dict[tuple, Any] = {}  # opening() of no formats


def opens(fmt: Format, buf: str, pos: int, final: bool, firsts: frozenset) -> bool:
    """False only when fmt's driver, started at pos, is certain to fail."""
    if not _frame.enabled:
        return True
    pattern, _, for_ascii, for_any = _test(fmt, firsts, starters(fmt, buf[pos : pos + 1]))
    if pattern is None:
        return True
    if final:
        return (for_ascii if buf.isascii() else for_any).match(buf, pos) is not None
    return pattern.match(buf, pos, partial=True) is not None


def marker_opens(fmts: list[Format], buf: str, pos: int, final: bool, markers: frozenset) -> bool | None:
    """Whether a region of one of fmts may open at pos (a marker of theirs there): False
    when each one's driver is certain to fail there, None when a stream's text so far
    ends before that is told (its opening test matches a part of it). A reading rule,
    not a shortcut: the same with the fast path off. markers: the call markers; the
    test is exact about them (see _opening), so `<|start|>assistant.` is no message
    start because the "a" of "assistant" is also the first letter of a marker."""
    told = False
    for fmt in fmts:
        pattern = _test(fmt, markers, starters(fmt, buf[pos : pos + 1]), exact=True)[0]
        if pattern is None:
            return True
        m = pattern.match(buf, pos, partial=not final)
        if m is not None:
            # (A match up to the end of a stream's text may be the test's `\Z`, where
            # the driver could close: more text may undo it.)
            if final or not (m.partial or m.end() >= len(buf)):
                return True
            told = True
    return None if told else False


def marker_test_local(fmts: list[Format], ch: str, markers: frozenset) -> bool:
    """Whether marker_opens of fmts at a place whose character is ch reads only the text
    from there on: no test looks behind its start (a look-behind, `\\A`, `\\b`, `^`), so
    its answer is that of the text from the marker on, wherever it stands."""
    for fmt in fmts:
        pattern = _test(fmt, markers, starters(fmt, ch), exact=True)[0]
        if pattern is None:
            continue
        source = _BEHIND.sub("", pattern.pattern)
        if any(b in source for b in ("(?<", "\\A", "\\b", "\\B", "\\G", "^")):
            return False
    return True


#: What may be left of a test's source that is no look behind its start: an escaped
#: character, a negated class's `[^`.
_BEHIND = regex.compile(r"\\[^AbBG]|\[\^")


def fails_at_once(fmt: Format, buf: str, pos: int, markers: frozenset) -> bool:
    """Whether fmt's driver, started at pos of a whole text (a region's marker there),
    is certain to fail before it takes a second token: no first token matches there,
    or after the one that does (and the text its grammar ignores) neither a token its
    grammar takes next begins, nor what lets the driver close the frame early (an end
    marker, a call marker, the text's end: see _opening). The opening test, two tokens
    deep, exact about the markers; told where the text does not end within reach of
    those two tokens (the caller's: a closer cut short at the end is read otherwise).
    False: it may read on (or no test is built). Switched off with the fast frames."""
    if not _frame.enabled:
        return False
    pattern, _, for_ascii, for_any = _test(fmt, markers, starters(fmt, buf[pos : pos + 1]), exact=True, depth=2, as_close=True)
    # (A whole text's: by `re` where it reads the test as `regex` does, as opens() runs it.)
    return pattern is not None and (for_ascii if buf.isascii() else for_any).match(buf, pos) is None


def _test(
    fmt: Format,
    firsts: frozenset,
    keep: frozenset | None = None,
    exact: bool = False,
    depth: int = 3,
    as_close: bool = False,
) -> tuple[Any, Any, Any, Any]:
    """fmt's opening test, built once: (the pattern, for a stream's partial matches
    and a whole text alike; that one as run on an ASCII text, and on any text: by
    `re` where it matches there as `regex` does, twice as fast: _words.fast), or
    Nones. Each is compiled when first run. keep: only these first tokens may start
    the region (see starters). exact: firsts are whole markers (see _opening).

    One pattern for both, its tokens atomic groups (see _opening): a stream's test
    with backtracking groups tried a long prose word again one character shorter
    at a time, each time looking on for what follows a name, so one delta holding
    a 32 KB word cost ten times the whole parse's test."""
    key = (firsts, keep, True) if exact else (firsts, keep)
    if depth != 3 or as_close:
        key = (*key, depth, as_close)
    known = _derived(fmt, "openings")
    found = known.get(key)
    if found is None:
        try:
            whole = _opening(fmt, firsts, keep, exact, depth, as_close)
        except Exception as exc:  # noqa: BLE001 - no test: the driver decides, as before
            if passes_through(exc):
                raise
            whole = None
        if whole is None:
            found = (None, None, None, None)
        else:
            by_regex = _compiled(whole)
            test = Lazy(by_regex, whole)
            found = (test, test, *fast_source(whole, by_regex))
        if len(known) < _PER_FORMAT:
            known[key] = found
    return found


class _Anything:
    """What a test that does not compile matches: anything (the driver decides)."""

    def match(self, *args: Any, **kwargs: Any) -> bool:
        return True


def _compiled(source: str) -> Any:
    """regex.compile(source) when called, or _Anything when it does not compile (no
    test: the driver decides, as when a test cannot be built)."""

    def make() -> Any:
        try:
            return regex.compile(source)
        except Exception as exc:  # noqa: BLE001
            if passes_through(exc):
                raise
            return _Anything()

    return make


def _derived(fmt: Format, name: str) -> dict:
    """fmt's cache `name` (a dict in fmt.compiled.derived)."""
    derived = fmt.compiled.derived
    try:
        return derived[name]
    except KeyError:
        found = derived[name] = {}
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
    known = _derived(fmt, "starters")
    try:
        return known[ch]
    except KeyError:
        pass
    c = fmt.compiled
    found = None
    if ch and not any(can_start(t, ch) for t in c.ignore):
        found = frozenset(t.name for t in c.allowed[c.start_state] if can_start(t, ch))
    if len(known) < _PER_FORMAT:
        known[ch] = found
    return found


def opening(fmts: list[Format], firsts: frozenset, ch: str) -> tuple:
    """For a region of one of fmts starting with ch: (fmts, one search of all their
    tests, the same for a whole text, each format's tests), for openers()."""
    keeps = [starters(fmt, ch) for fmt in fmts]
    key = (*fmts, firsts, *keeps)
    # (Kept on the first format: an entry's formats live as long as it does.)
    known = _derived(fmts[0], "any") if fmts else _NO_FORMATS
    found = known.get(key)
    if found is None:
        tests = [_test(fmt, firsts, keep) for fmt, keep in zip(fmts, keeps)]
        pattern = for_ascii = for_any = None
        if all(t[0] is not None for t in tests):
            source = "|".join(f"(?:{t[0].pattern})" for t in tests)
            pattern = Lazy(_compiled(source), source)
            whole = "|".join(f"(?:{t[1].pattern})" for t in tests)
            for_ascii, for_any = fast_source(whole, _compiled(whole))
        found = (fmts, pattern, for_ascii, for_any, tests)
        if len(known) < 1000:
            known[key] = found
    return found


def openers(test: tuple, buf: str, pos: int, final: bool) -> list[Format]:
    """The formats of opening()'s `test` whose driver, started at pos (where
    opening()'s character is), is not certain to fail: opens() of each, after
    one search of all their tests (a reply that starts with prose fails it)."""
    fmts, pattern, for_ascii, for_any, tests = test
    if not fmts or not _frame.enabled:
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


def _opening(
    fmt: Format, firsts: frozenset, keep: frozenset | None = None, exact: bool = False, depth: int = 3, as_close: bool = False
) -> Any:
    """fmt's opening test's source: each token's pattern an atomic group, taking what
    the driver's lexer takes there (its pattern's match) and no shorter part of it, so
    a prose word is not tried again, one character shorter at a time, as a name.
    keep: the first tokens to try (None: all). firsts: the first characters of the
    call markers, or with exact, the markers themselves: where the driver may close
    the frame early is then a whole marker (or end marker) there, as the driver's
    at_marker tells, not any text that starts with one of their characters."""
    c = fmt.compiled
    as_close = as_close and exact  # (its end markers are whole words: see below)
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
    if exact:
        # (Longest first; a lookahead: the marker is not the region's.)
        def lookahead(words: set) -> str:
            return "(?=" + alt(regex.escape(w) for w in sorted(words, key=lambda w: (-len(w), w))) + ")"

        stop_ends = {e for e in fmt.ends if e}
        stops = lookahead(set(firsts) | stop_ends) if firsts or stop_ends else ""
        ends = lookahead(stop_ends) if stop_ends else ""
    else:
        ends = "".join(sorted({e[0] for e in fmt.ends if e}))
        stops = "".join(sorted(set(firsts) | set(ends)))
        stops = f"[{regex.escape(stops)}]" if stops else ""
        ends = f"[{regex.escape(ends)}]" if ends else ""

    # (as_close: the blanks before a closer as close() skips them, str.isspace, which
    # holds four separators that `\s` does not; and an end marker only where what it
    # lacks can be supplied before it, as close_before tells: else the driver fails.)
    space = r"[\s\x1c-\x1f]" if as_close else r"\s"

    def closing(stack: list) -> str:
        if closing_plan(c, stack, fmt.ends) is not None:
            return space + r"*(?:\Z" + (f"|{stops}" if stops else "") + ")"
        if as_close:
            able = {e for e in fmt.ends if e and plan_before(c, stack, fmt.ends, e)}
            return space + "*" + lookahead(able) if able else "(?!)"
        return rf"\s*{ends}" if ends else "(?!)"

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
            token = f"(?>{body})"
            ways.append(f"{token}{ignore}(?:{rest})" if rest else token)
        if stack != [c.start_state]:  # (with nothing read there is no frame to close)
            ways.append(closing(stack))
        return alt(ways)

    # The first `depth` tokens, three by default: a prose word is often a NAME, and the
    # newline after it a separator some grammar allows (functionary's NAME\n{…}).
    test = after([c.start_state], depth)
    if not test:
        return None
    # (The driver skips %ignore'd text where no token fits, the first one included;
    # with `keep`, none can start where the region does.)
    return ("" if keep is not None else ignore) + "(?:" + test + ")"


def may_open(fmt: Format, ch: str) -> bool:
    """Could a region of fmt start with this character? A reply-anchored format
    whose first token cannot start with the reply's first character would fail at
    once; skipping it saves building a driver for each of them on every reply."""
    known = _derived(fmt, "opens")
    found = known.get(ch)
    if found is None:
        c = fmt.compiled
        found = any(can_start(t, ch) for t in (*c.allowed[c.start_state], *c.ignore))
        if len(known) < _PER_FORMAT:
            known[ch] = found
    return found


def line_opening(fmts: list[Format], firsts: frozenset, marker: str) -> tuple | None:
    """opening() of the formats a line-anchored marker opens, when each is
    quiet; None: the drivers decide (a failure there would be told)."""
    if not all(f.quiet for f in fmts):
        return None
    return opening([f for f in fmts if may_open(f, marker[0])], firsts, marker[0])
