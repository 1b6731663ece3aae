"""Closing moves: what the driver does when no token fits but a frame the model
left open may still be closed (each names its repair: closed_tag, closed_bracket),
or a broken value cut short at a marker. Functions of the driver `d`; the Driver
keeps one-line methods that call them (its loop is unchanged)."""

from __future__ import annotations

import re
from typing import Any

from .growth import _HOLD, _JSON_SPACE, _SETTLED, _LoopWait, _QuoteWait, _loop_wait
from .table import _ENDING_NAME, _PLAN_STACK, _PLANS, _UNKNOWN, _closes, _plan, ends_something, goes_on
from .extent import outside_strings, string_open_at_end
from .tokens import _SNIPPET, WAIT, WAIT_MORE, Unbounded, _snippet
from .._recover import repair as _repair
from .._grammar.words import lazy


def through(d: Any, t, buf: str, pos: int, end: int, final: bool) -> Any:
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
        if type(at) is not int or at <= j:
            return None
        unterminated = str(getattr(exc, "msg", "")).startswith("Unterminated string")
        if final:
            if unterminated and _starts_at(d, buf, end):
                # A string runs to the end of the reply, the format's start marker in it
                # or in one before it that the JSON read through (`{"content": "Use
                # <tool_call> tags`): the end of the reply cut the value, the marker is
                # its text. (An end marker or an end-of-turn token there is the
                # structure's: `{"a": "Paris</tool_call>`.)
                return n
            return _quoted_call(d, t, buf, end, at, final)
        # Broken for good where it breaks well before the end of the text (a
        # string that does not close yet is an answer of the end of the text).
        if at + _SETTLED <= n and not unterminated:
            return _quoted_call(d, t, buf, end, at, final)
        # It may yet close: wait until its brackets do (or, as a JSON token
        # does, look again when the text has grown by a quarter).
        d.recheck = n + max(16, (n - pos) // 4)
        extent = d._extent(j, None)
        closed = extent.advance(buf, 0)
        return WAIT, (_HOLD if closed is not None else extent)
    except RecursionError:
        return None
    if close <= end:
        return None  # (the value closes before the marker: no string was open there)
    if close >= n:
        # (It closes where the text ends: at the end of the reply, through there.)
        return close if final else (WAIT, None)
    m = t.pattern.match(buf, close) if final else t.pattern.match(buf, close, partial=True)
    if m is None or m.end() == close:
        return close
    if not final and (m.partial or m.end() >= n):
        loop = _loop_wait(t, buf, close, n) if not m.partial else None
        return WAIT, loop
    return m.end()


def _starts_at(d: Any, buf: str, end: int) -> bool:
    """Whether a start marker of the driver's format begins at `end` that tells a call's
    start alone: not a bracket (xLAM's `[`, JSON's own), nor one that begins as an end
    marker does (a code fence's ```` ```json ````, which its ```` ``` ```` closes)."""
    ends = d.fmt.ends
    return any(
        len(s) > 1 and buf.startswith(s, end) and not any(e and s.startswith(e) for e in ends)
        for s in d.fmt.starts
    )  # fmt: skip


def _quoted_call(d: Any, t, buf: str, end: int, at: int, final: bool) -> Any:
    """through's answer where the JSON, read on past the marker at `end`, breaks for good
    at `at`: None where it breaks at the marker or before (the marker ends the value as
    before), and where the marker is no start marker of the format. Read past it, the
    marker was inside a string, and the JSON broke after it: a string whose own quotes
    the model did not escape, quoting a call (`{"content": "Docs:\n<tool_call>\n{"name":
    "rm_rf", …}}\n</tool_call>\nThat is all.`: r1mat). Where that call's end marker comes
    next and text follows it, the string quoted it: the token runs on to that end marker
    (the JSON cannot be read: an error, not the quoted call run). Where the call runs to
    the end of the reply, or only blanks follow its end, or another call opens first, it
    is read as before (a string whose close the model left out, then its next call)."""
    if at <= end or not _starts_at(d, buf, end):
        return None
    n = len(buf)
    # (From where it broke, or past the marker: the quoted call's end marker is the next
    # place the token stops, a string the JSON read through that holds one before it
    # being read whole: `{"b": "<tool_call>", "q": "</tool_call>", "a": 1}\n</tool_call>`.)
    x = max(at, buf.index(">", end) + 1 if buf.find(">", end, end + 64) >= 0 else end + 1)
    if buf.startswith("<", x) and not any(buf.startswith(e, x) for e in d.fmt.ends if e):
        x += 1  # (the token's pattern begins with no `<`)
    m = t.pattern.match(buf, x) if final else t.pattern.match(buf, x, partial=True)
    stop = x if m is None else m.end()
    if not final and (m is not None and m.partial or stop >= n):
        return WAIT, None
    if stop >= n:
        return None
    if x == at and any(e and buf.find(e, end, at) >= 0 for e in d.fmt.ends):
        # The JSON read through the quoted call's end marker too (in a string: outside
        # one, a `<` breaks it at once), then broke after it (`…</tool_call>" "}}`, a
        # stray quote): the string quoted that whole call, whatever follows (QA18 Q3).
        return stop
    shut = next((e for e in d.fmt.ends if e and buf.startswith(e, stop)), None)
    if shut is None:
        return None
    after = _SPACE_TO_END.match(buf, stop + len(shut))
    if after is not None or _turn_ends(d, buf, stop + len(shut), final):
        # (Or an end-of-turn token of the format that its grammar reads, which a reply
        # ending with it is not read without (Hermes's `<|im_end|>`, `<|endoftext|>`):
        # only blanks around it to the end of the reply, as where the token is one the
        # reply is read without, region._before_turn_end.)
        return None if final else (WAIT, None)
    if not final:
        # An end-of-turn token of the format that may end the reply, only blanks before
        # it: the reply read whole is read without it (region._before_turn_end), where
        # only blanks follow that end marker. Wait for the end of the reply or more text.
        told = d.told(buf)
        if stop + len(shut) <= told < n and not buf[stop + len(shut) : told].strip():
            return WAIT, None
    return stop


def _turn_ends(d: Any, buf: str, pos: int, final: bool) -> bool:
    """Whether the text from pos is blanks, one of the end-of-turn tokens of d's format,
    and blanks at most to its end; in a stream's text so far (not final), also where it
    ends inside such a token, or with one whole (more text may still follow)."""
    tokens = d.fmt.end_of_turn
    if not tokens:
        return False
    q = _SPACES.match(buf, pos).end()
    n = len(buf)
    for token in tokens:
        if buf.startswith(token, q):
            if _SPACE_TO_END.match(buf, q + len(token)) is not None:
                return True
        elif not final and n - q < len(token) and token.startswith(buf[q:]):
            return True
    return False


# Gemma's string delimiters, and what follows a string's close in arguments that go on
# properly: a comma, or the close of its object or list.
_LOOSE_DELIM = lazy(re.compile, r'<\|"\|>|<escape>')
_AFTER_STRING = lazy(re.compile, r"\s*[,}\]]")
_SPACE_TO_END = lazy(re.compile, r"\s*\Z")
_SPACES = lazy(re.compile, r"\s*")


def through_loose(d: Any, t, buf: str, pos: int, end: int, final: bool) -> Any:
    """A Gemma-style argument token (see Compiled.loose_text) stopped at `end`, a marker,
    with a delimited string open there (`{text:<|"|>wrap it in <tool_call|> tags<|"|>}`):
    inside `<|"|>…<|"|>` everything is text, so where the string closes and the arguments
    go on properly after it (a `,`, `}` or `]`), the token goes on past the marker, as its
    pattern says (and past later markers in later strings the same way). The plain text is
    ambiguous only where a string is left open: then the reading in which the structure
    closes is taken, and where none does (a delimiter followed by other text: the one
    that opens the next call's string), the token ends at the first marker as before.
    With no closing delimiter at all, the reply was cut inside the string: the token
    runs to its end (but for the slip of a brace closing the object right before the
    marker: brace_closes). Returns the new end, None (not past the marker), or
    (WAIT, grower) when the text so far cannot tell."""
    n = len(buf)
    rest = t.rest
    if rest is None:
        return None
    found = None
    at = pos
    while True:
        delim, opened = _open_delimiter(buf, at, end)
        if delim is None:
            return found
        # (A stream asks again with each delta that may bring the delimiter: the search
        # goes on from where the last one stopped, not from the marker.)
        memo = d.loose_memo
        since = memo[1] if memo is not None and memo[0] == end else end
        close = buf.find(delim, max(end, since - len(delim)))
        if close < 0:
            d.loose_memo = (end, n)
            if final:
                # The string never closes: the reply was cut inside it, and the marker
                # is its text, as all the rest of the reply is (the value is cut_value).
                # Unless the object's brace closes right before the marker, the slip
                # `{command:<|"|>git status}<tool_call|>` (brace_closes).
                return found if brace_closes(buf[opened:end]) else n
            return WAIT, _DelimiterWait(delim, buf[max(end, n - len(delim) + 1) :])
        m = _string_goes_on(rest, buf, close + len(delim), final)
        if m is None:
            # (The delimiter is no string's close: it may open a string of a call the
            # string quotes whole, whose close comes later.)
            close = _quoted_close(d, buf, end, delim, final)
            if close is TO_END:
                return n  # (the string quoted whole calls, then the end of the reply cut it)
            if type(close) is not int:
                return close
            m = None if close < 0 else _string_goes_on(rest, buf, close + len(delim), final)
            if m is None:
                return found
        if m is WAIT:
            return WAIT, None
        after = close + len(delim)
        found = m.end()
        if found >= n:
            return found
        at, end = after, found


def _string_goes_on(rest: Any, buf: str, after: int, final: bool) -> Any:
    """The match of the arguments going on properly after a string's close delimiter
    (ending at `after`): a `,`, `}` or `]`, then the rest of the token's pattern; None
    when they do not, WAIT when the text so far cannot tell."""
    if _AFTER_STRING.match(buf, after) is None:
        if not final and _SPACE_TO_END.match(buf, after) is not None:
            return WAIT
        return None
    m = rest.match(buf, after) if final else rest.match(buf, after, partial=True)
    if m is None:
        return None
    if not final and (m.partial or m.end() >= len(buf)):
        return WAIT
    return m


# The markers of a Gemma call, opener and end: a whole call quoted in a delimited string
# (its own strings in it) is the string's text (quoted_close). So is a bare one,
# `call:NAME{…}` (gemma4_bare's call, the body of one with its markers left out), whole
# where its braces pair up, its strings' delimiters in pairs (_bare_end).
QUOTED_CALLS = (("<|tool_call>", "<tool_call|>"), ("<start_function_call>", "<end_function_call>"))
_BARE_CALL = lazy(re.compile, r"call:[\w.\-]{1,64}\{")
# (The opener at the place a value stopped: gemma4_bare's value stops at the line break
# before the next line's `call:`.)
_BARE_AT = lazy(re.compile, r"\s*(call:[\w.\-]{1,64}\{)")
_BARE_TOKEN = lazy(re.compile, r'<\|"\|>|<escape>|[{}\[\]]')
# How long such a call may be (its opener to its end marker), and how far after it the
# string's close, or the next such call, may come: a stream holds no more than this past
# the first delimiter that closes no string.
_QUOTED_CALL = 2048
_QUOTED_GAP = 2048
_OPENER_LEN = max(len("call:{") + 64, *(len(o) for o, _ in QUOTED_CALLS))
_NEEDLES = (*(o for o, _ in QUOTED_CALLS), "call:")
# What a call glued to a string's last word follows (`Paris<|tool_call>call:g{…}`: a
# model that left the string's close out wrote the next call so), and how the prose a
# turn ends with ends: as nest._quoted_to_end reads a raw value's (QA12 N2).
_GLUED = lazy(re.compile, r"[\w.!?。！？]")
_TURN_END = lazy(re.compile, r"[.!?。！？][)\]\"'”’」*_`]{0,3}\s*\Z")
_TURN_END_READ = 64
_TEXT = lazy(re.compile, r"\S")
TO_END = object()  # (quoted_close: the string runs to the end of the reply, cut short)


def _quoted_close(d: Any, buf: str, end: int, delim: str, final: bool) -> Any:
    """quoted_close for a driver: the reading goes on from the end of the last quoted
    call a stream's earlier look passed (d.loose_quoted), not from the marker."""
    memo = d.loose_quoted
    if memo is None or memo[0] != end:
        memo = d.loose_quoted = (end, end, [])
    close, x = quoted_close(buf, end, delim, final, memo[1], memo[2])
    d.loose_quoted = (end, x, memo[2])
    return close


def next_opener(buf: str, lo: int, hi: int) -> tuple[int, str]:
    """The first opener of a Gemma call that starts in [lo, hi] (a marker of QUOTED_CALLS,
    or a bare `call:NAME{`), and its end marker ("" for a bare one: its braces end it);
    (-1, "") when none does."""
    opened, shut = -1, ""
    for opener, closer in QUOTED_CALLS:
        o = buf.find(opener, lo, hi + len(opener))
        if o >= 0 and (opened < 0 or o < opened):
            opened, shut = o, closer
    m = _BARE_CALL.search(buf, lo, (hi if opened < 0 else opened) + _OPENER_LEN)
    if m is not None and m.start() <= hi and (opened < 0 or m.start() < opened):
        opened, shut = m.start(), ""
    return opened, shut


def _bare_end(buf: str, brace: int, limit: int, scan: list | None = None) -> int | None:
    """Where a bare call whose `{` is at `brace` ends (past its matching `}`), its strings'
    delimiters read in pairs (inside one everything is text); -1 when it does not end
    whole before `limit` (a string of it, or a bracket, left open), None when the text
    so far ends first. `scan` (a stream's, per driver) keeps, for the last call that
    ended None, [brace, where its last token ended, depth, quote]: a stream's next look
    goes on from there. Each delta read the call again from its brace, up to 2,048
    characters of Python-level token loop a delta: a Gemma value quoting a bare call
    whose code holds `[x]` (each `]` a delta its wait does not absorb) streamed at 60 µs
    a character, five times its budget (fuzz seed 7 #94011104, issue 17)."""
    depth, quote, at = 0, None, brace
    if scan and scan[0] == brace and scan[1] <= len(buf):
        at, depth, quote = scan[1], scan[2], scan[3]
    last = at
    for m in _BARE_TOKEN.finditer(buf, at, min(len(buf), limit)):
        last = m.end()
        s = m.group()
        if quote is not None:
            if s == quote:
                quote = None
        elif len(s) > 1:
            quote = s
        elif s in "{[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.end()
    if len(buf) >= limit:
        return -1
    if scan is not None:
        scan[:] = (brace, last, depth, quote)
    return None


def quoted_close(buf: str, at: int, delim: str, final: bool, x: int, scan: list | None = None) -> tuple[Any, int]:
    """Where a delimited string open at `at`, a call's opener, closes when that opener
    begins a whole call that the string quotes (`{content:<|"|>Docs:
    <|tool_call>call:rm{path:<|"|>/home<|"|>}<tool_call|> That is all.<|"|>}`, or the bare
    `call:rm{…}` on a line of its own): the quoted call's own strings, delimiters in pairs
    between its opener and its end marker (a bare call's braces), are the outer string's
    text, as its markers are; the delimiter after the last such call (each within
    _QUOTED_GAP of the one before) is the string's close. At the end of the reply, with
    no delimiter after those calls and text after them, TO_END: the string quoted them
    and the end of the reply cut it (`…<tool_call|>\nThat is the whole format.`; not
    where the first is glued to the string's last word and that text ends as a turn
    does, as nest._quoted_to_end reads a raw value's). -1 when the string quotes no
    whole call so; (WAIT, wait) when the text so far cannot tell. With where the reading
    got to (x: where it goes on from; `at` at first). `scan`: _bare_end's, a stream's."""
    n = len(buf)
    while True:
        # The next call quoted whole, or the string's close, within the gap after x (the
        # opener at `at` itself first).
        look = x + (1 if x == at else _QUOTED_GAP)
        close = buf.find(delim, x, look + len(delim))
        if x == at:
            bare = _BARE_AT.match(buf, at)
            opened, shut = (bare.start(1), "") if bare is not None else next_opener(buf, x, look)
            if bare is None and opened != at:
                opened = -1
            close = -1
        else:
            opened, shut = next_opener(buf, x, look)
        if opened < 0 or 0 <= close < opened:
            if x == at:
                return -1, x  # (no call opens at the marker)
            if close >= 0:
                return close, x
            reach = look + max(len(delim), _OPENER_LEN)  # (what starts by `look` is whole by then)
            if final and n < reach and buf.find(delim, x) < 0:
                return (TO_END if _cut_inside(buf, at, x, n) else -1), x
            if final or n >= reach:
                return -1, x
            return (WAIT, _QuotedWait((delim, *_NEEDLES), buf[max(x, n - 64) :], reach)), x
        if shut:
            e = buf.find(shut, opened, opened + _QUOTED_CALL)
            after = e + len(shut) if e >= 0 else None
            needles: tuple = (shut,)
        else:
            after = e = _bare_end(buf, buf.index("{", opened), opened + _QUOTED_CALL, scan)
            needles = ("}", "]")
        if after is None or after < 0:
            if after is None and final and n < opened + _QUOTED_CALL and x > at and _gap_text(buf, at, opened):
                # (The end of the reply inside a call quoted after whole ones and text
                # between: the string quoted them all, cut short.)
                return TO_END, x
            if after is not None or final or n >= opened + _QUOTED_CALL:
                return -1, x
            return (WAIT, _QuotedWait(needles, buf[max(opened, n - 64) :], opened + _QUOTED_CALL)), x
        if shut and buf.count(delim, opened, e) % 2:
            return -1, x  # (a string of it left open: no call quoted whole)
        x = after


def _cut_inside(buf: str, at: int, x: int, n: int) -> bool:
    """At the end of the reply, after the calls a string quotes whole (from `at` to x) and
    no delimiter after them: whether the string runs on to the end, cut short. Not with
    no text after them nor between them (calls whose string's close was left out before
    them, as before), nor where the first is glued to the string's last word and the text
    after them is prose on the lines after them that ends as a turn does
    (nest._quoted_to_end)."""
    text = _TEXT.search(buf, x)
    if text is None:
        return _gap_text(buf, at, n)
    return not (
        at > 0 and _GLUED.match(buf, at - 1) is not None and buf.startswith(_NEEDLES[:2], at)
        and "\n" in buf[x : text.start()]
        and _TURN_END.search(buf, max(text.start(), len(buf) - _TURN_END_READ)) is not None
    )  # fmt: skip


def _gap_text(buf: str, at: int, hi: int) -> bool:
    """Whether text that is no blank comes between two of the whole calls quoted one after
    another from `at` (where the text up to `hi` holds them: read again once, at the end
    of the reply, as quoted_close read them)."""
    bare = _BARE_AT.match(buf, at)
    p, shut = (bare.start(1), "") if bare is not None else next_opener(buf, at, at)
    while 0 <= p < hi:
        if shut:
            e = buf.find(shut, p, hi)
            after = e + len(shut) if e >= 0 else -1
        else:
            after = _bare_end(buf, buf.index("{", p), hi) or -1
        if after < 0:
            return False
        p, shut = next_opener(buf, after, hi)
        if _TEXT.search(buf, after, p if p >= 0 else hi) is not None:
            return p >= 0 or hi < len(buf)
    return False


class _QuotedWait:
    """A wait for what tells _quoted_close's reading: a delta that brings none of the
    needles (with the end of the text before it), with the text still short of the
    limit, changes nothing. The tail is text the reading has seen: a needle wholly in it
    was read (a `]` of the code a quoted bare call holds); only one that the delta
    completes, or a bare opener the tail ends in (`call:name`, whose `{` may come), is
    news. Each needle in the last 64 characters refused every delta: a 1-character
    stream of such code re-read the call at each one (fuzz seed 7 #94011104, issue 17)."""

    __slots__ = ("needles", "tail", "limit")

    def __init__(self, needles: tuple, tail: str, limit: int) -> None:
        self.needles = needles
        self.tail = tail
        self.limit = limit

    def absorbs(self, text: str, n: int) -> bool:
        tail = self.tail
        seen = tail + text
        if n + len(text) >= self.limit:
            return False
        for s in self.needles:
            if seen.find(s, max(0, len(tail) - len(s) + 1)) >= 0:
                return False
        if _BARE_GROWING.search(tail) is not None:
            return False
        self.tail = seen[-64:]
        return True


# A bare opener the text ends in, its name still growing (`call:get_wea`): its `{` may come.
_BARE_GROWING = lazy(re.compile, r"call:[\w.\-]{0,64}\Z")


class _DelimiterWait:
    """A wait for the delimiter that closes a Gemma string: a delta that does not
    complete it (with the end of the text before it) changes nothing."""

    __slots__ = ("delim", "tail")

    def __init__(self, delim: str, tail: str) -> None:
        self.delim = delim
        self.tail = tail  # the last characters so far, which may begin the delimiter

    def absorbs(self, text: str, n: int) -> bool:
        seen = self.tail + text
        if self.delim in seen:
            return False
        self.tail = seen[len(seen) - len(self.delim) + 1 :]
        return True


def brace_closes(body: str) -> bool:
    """Whether the text of a delimited string left open, running to the end of the
    payload (or to a marker: through_loose), ends with the object's closing
    brace, the slip `{command:<|"|>git status}`: its last `}`, where the braces before
    it pair up. Where one before it is left open (`{code:<|"|>x = {}`), that brace is
    the string's own text: inside `<|"|>…<|"|>` everything is text, and the string,
    the object too, is what the end of the reply cut."""
    body = body.rstrip()
    if not body.endswith("}"):
        return False
    inner = body[:-1]
    return inner.count("{") <= inner.count("}")


def _open_delimiter(buf: str, start: int, end: int) -> tuple[str | None, int]:
    """The delimiter of a string that is open at `end`, reading the delimiters from
    `start` (outside a string) on, and where its text begins; (None, -1) when none is."""
    open_, at = None, -1
    for m in _LOOSE_DELIM.finditer(buf, start, end):
        if open_ is None:
            open_, at = m.group(), m.end()
        elif m.group() == open_:
            open_ = None
    return open_, at


# A line beginning with a code fence's ``` (blanks before it): fence_cut's.
_FENCE_CLOSE = re.compile(r"\n[ \t]*```")
# _next_fence's last answer: (text, from, the line break before the first fence line
# after it (the text's end: none), that fence's ``` (-1: none)), one tuple replaced whole.
_NEXT_FENCE: list = [None]


def _next_fence(buf: str, p: int) -> int:
    """Where the ``` of the first line from p on that begins with one is (-1: none): kept
    per text, any later place before it has the same answer (the values of a fence, each
    asked, read the text once)."""
    memo = _NEXT_FENCE[0]
    if memo is not None and memo[0] is buf and memo[1] <= p <= memo[2]:
        return memo[3]
    m = _FENCE_CLOSE.search(buf, p)
    found = m.end() - 3 if m is not None else -1
    _NEXT_FENCE[0] = (buf, p, m.start() if m is not None else len(buf), found)
    return found


def fence_cut(d: Any, buf: str, pos: int) -> int:
    """Where a Python string value at pos in a code fence's call (```python) ends at the
    fence's close, or -1. A line beginning with the fence's ``` closes the fence (a
    code block holds none), and the string, which Python cannot run over a line's end
    (triple quotes aside), was left open before it (`print("hi` then ```): the value
    ends there, as a string left open ends at its format's end marker. Read on, it ran
    over what comes after the fence (a Hermes call, swallowed into `print`'s value, the
    error naming print: QA19 R10). Asked only where the string crosses a line's end; the
    driver takes the end the call's structure gives the value (_repair.quoted_end) where it
    comes before the fence: such a value was not left open."""
    if "```" not in d.fmt.ends or "PYVALUE" not in d.c.terminals:
        return -1
    if d.stop is not None:
        raise Unbounded  # (the text ends there: see Driver.stop)
    if buf.startswith(buf[pos] * 3, pos):
        return -1
    close = _repair.py_string_end(buf, pos)
    nl = buf.find("\n", pos + 1, close if close >= 0 else len(buf))
    if nl < 0:
        return -1  # (the string is on one line: the usual case)
    fence = _next_fence(buf, nl)
    return fence if fence >= 0 and (close < 0 or fence < close) else -1


def cut(d: Any, buf: str, pos: int, stop: int, final: bool, open_to: bool = False) -> Any:
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
    end of the reply, is closed there by the repair, as at the end of a reply.
    `open_to`: text[pos:stop] is a Python value's string up to the quote that closes it,
    read as a stream reads it while that quote has not come (its text so far ending at
    `stop`): a break that the end of the text told (_Reader.unsettled) is none (see
    open_cut)."""
    room = d.cutter[1]
    settled = final or stop + room <= len(buf)  # (every marker that starts before stop is whole)
    if settled and d._first_marker(buf, pos + 1, stop) < 0:
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
    spans = _spans(d)
    if opened < 0 and final and stop >= len(buf) and buf[pos] == "'" and _repair.py_string_end(buf, pos) < 0:
        # A single-quoted Python value left open to the end of the reply, as Python reads
        # it (its apostrophes inside: `text='It's hi<|tool_call_end|>`), ends at its
        # format's first marker as a double-quoted one does (below: where the text up to
        # it reads, a `"` in it too). Told without reading the rest of the reply for each
        # such value (a storm of them, each opened after the last one's marker:
        # py_string_end, and first_other's walk, kept per text).
        m = _own_marker(d, buf, pos + 1, stop)
        if m >= 0:
            if _starts_at(d, buf, m):
                # Its own start marker in it (a mention, `'Use <|tool_call_start|> tags`:
                # whole, cut_value), unless another format's call reads whole before it:
                # that is the model's next call, as in a string with no marker of its own
                # after it (below, QA19 R15), and the string ends there; the start marker
                # is its next call's (QA22 D8: `[f(a='x<newline><tool_call>{…}</tool_call>`
                # twice was one call holding the three others).
                if len(d.cutter) > 4 and (d.fmt.stream_python or "PYVALUE" in d.c.terminals):
                    c = _call_between(d, buf, pos + 1, m)
                    if c >= 0:
                        return c
            # Where the value does not read up to that marker, it is a value broken
            # before it, not a string left open: it is read on below, as a stream reads
            # its text so far (which may have cut it at a marker after its break already;
            # the end of the reply tells nothing else). Taken as the string's text, the
            # marker made `t='"]|<|tool_call_end|>'a f` (Python's string never closes:
            # `'a` is an apostrophe) an empty call y, dropped_partial_argument, where a
            # stream cut it at the marker: an error naming t, as before 4359011 (issue 17).
            if spans.breaks_at(buf, pos, buf[pos:m]) is None:
                # Read up to that marker, it is a string left open there (or a mention of
                # its own start marker, whole) only where it does not break for good after
                # that marker before a later one: one that does (`t='<|tool_call_end|>'x"]
                # <tool_call>`, Python's `'x` an apostrophe where the lenient reading closed
                # the string) is a value broken before that later marker, cut there as a
                # stream cuts it while the reply goes on (told by the text so far, the break
                # and the marker in it; not by the end of the reply, which a stream cannot
                # know then). Taken as a string left open, it was cut at its own end marker
                # in parse() alone (fuzz seed 7 #9071606); taken whole at its own start
                # marker, it could not be read: an empty call, dropped_partial_argument,
                # where a stream gave the value and the calls after it (#9067311, issue 17).
                late = _late_cut(d, buf, pos, stop, spans)
                if late >= 0:
                    return late
                if _starts_at(d, buf, m):
                    if not _own_call_at(d, buf, m):
                        return None
                    _own_noted(d, pos, m)
                return m
        elif len(d.cutter) > 4 and (d.fmt.stream_python or "PYVALUE" in d.c.terminals):
            # No marker of its own after it (a bare pythonic list has none): another
            # format's call that reads whole in it ends it (below, QA19 R15), told as at
            # its own marker, by the text up to that call (read to the end of the reply
            # for each value of a storm, the square of it: QA22 D3).
            c = _call_between(d, buf, pos + 1, stop)
            if c >= 0 and spans.breaks_at(buf, pos, buf[pos:c]) is None:
                line = _quoted_before_list(d, buf, pos, c, stop)
                return c if line < 0 else line
    at = _repair.unreadable_in(buf, pos, stop, spans, not open_to and (final or stop < len(buf)))
    if at is None and final and stop >= len(buf) and len(d.cutter) > 4:
        # A Python value's string left open to the end of the reply (`f(q='a\n<tool_call>
        # {…}</tool_call>`: the other quote never closes it): another format's call that
        # reads whole in it is the model's next call, not the string's text; the string
        # ends there, as if the reply had been cut there (QA19 R15). (A mention of a
        # marker, `'Use <tool_call> tags`, stays its text: no call reads there.)
        m = _call_in_open_string(d, buf, pos, stop)
        if m >= 0:
            return m
    elif final and stop >= len(buf) and len(d.cutter) > 4:
        # (Its string closed inside such a call, and the value broke after that quote.)
        m = _call_in_open_string(d, buf, pos, stop, closed_only=True)
        if m >= 0:
            return m
    d.quote_wait = None
    start, quoted = _quoted_call_span(d, buf, pos, final) if at is not None and len(d.cutter) > 4 else (-1, -1)
    if quoted == WAIT or (not final and quoted > 0 and stop >= len(buf) and _SPACE_TO_END.match(buf, quoted) is not None):
        # A stream's text so far, the value running on to its end: the end of the reply
        # may still cut it at that call's marker (above), which is before any marker after
        # its break (below): wait until it cannot (issue 17).
        _quoted_wait(d, buf, pos, stop, settled and quoted == WAIT and stop < len(buf))
        return WAIT
    if at is None:
        if buf[pos] == "'" and len(d.cutter) > 4 and (d.fmt.stream_python or "PYVALUE" in d.c.terminals):
            line = _apostrophes_over_list(d, buf, pos, stop)
            if line >= 0:
                if not final and stop >= len(buf):
                    # (A stream's text so far, the value running on to its end: it reads
                    # here only as the end of the text left it (unreadable_in's `whole`),
                    # and more text may break it, which is then read below, cut at the
                    # first marker after its break or not at all: `'<tool_call>{…}
                    # </tool_call>\n[y(''<tool_call>` then `'"]`, where parse() reads no
                    # cut (fuzz seed 7 #103090401, issue 17). Told once the value closes.)
                    return WAIT
                return line
        if opened >= pos:
            # A string left open to the end of the reply (`{"city": "Par<|tool_call_end|>…`,
            # or a Python value's, `text="hi<|tool_call_end|>`, which opens at pos):
            # it ends at the first marker of its own format in it, as if the reply had
            # been cut there. Another format's is the string's text (`"Use <tool_call>
            # tags` in a Llama 3 value that the end of the reply cut: cut_value), as a
            # Hermes value reads it, whose pattern stops at Hermes's markers only. So is
            # a start marker of its own in a Python value's (`text="Use <|tool_call_start|>
            # tags`: whole, cut_value), as a JSON token reads it (through).
            m = _own_marker(d, buf, opened + 1, stop)
            own = m >= 0 and opened == pos and _starts_at(d, buf, m)
            if own and not _own_call_at(d, buf, m):
                return None
            if m >= 0 and spans.breaks_at(buf, pos, buf[pos:m]) is None:
                if own:
                    _own_noted(d, pos, m)
                return m
        return None
    # (From the character the pass gave up at: a marker that starts there is what
    # broke the value.)
    lo = pos + max(at - 1, 1)
    back = d._first_marker(buf, max(pos + 1, lo - room), lo + room)
    marker = d.cutter[6].match(buf, back) if 0 <= back < lo and len(d.cutter) > 6 and d.cutter[6] is not None else None
    if marker is not None and lo < marker.end() and _opens_calls(d, marker.group()):
        # (A marker begun before it that the break lies in, the pass having read its first
        # characters as the value's, `[1, [TOOL_CALLS]g…`: a list's `[`, then the word it
        # broke at. Issue 19: the value ran on over it, unquoted_string, and the call it
        # opens was lost. Not one whole before the break: a string's text, read.)
        lo = back
    line = -1
    if quoted > lo:
        lo = quoted  # (the markers in that call are its text: _quoted_call_span)
        line = _next_list_line(d, buf, lo, stop)
        if line >= 0 and d.lines and not buf[quoted:line].strip():
            # Only blanks between that call's end and the model's next list: the string
            # was left open before that call, which is the model's next one, as where it
            # runs to the end of the reply (_call_in_open_string, QA19 R15), not the
            # string's text run on to the list (QA26 S2: `[f(a="x` then a Hermes call on
            # the next line, then `[h()]`: one f holding the call, no error). The value
            # ends at that call's marker. Where each line's list is a region of its own
            # (Driver.lines: pythonic with tools): without tools the lists in a row are
            # one region, and a list after that call, no longer at the reply's start,
            # would be prose (its calls lost untold); there the value runs on to the list
            # and the region reads on (_list_cut), as before.
            if start > pos:
                return start
    m = d._first_marker(buf, lo, stop if line < 0 else line)
    if m < 0:
        m = line  # (the model's next list, on a line after that call: _next_list_line)
    if not settled and (m < 0 or may_start(d, buf, lo, m)):
        return WAIT
    if m < 0:
        return None
    broke = spans.breaks_at(buf, pos, buf[pos:m])
    if broke is not None and broke != at:
        return None  # (cut there, it would break elsewhere)
    return m  # (it breaks there still; or, read to the marker, it is only unfinished)


def element_cut(d: Any, buf: str, pos: int, cut: int) -> bool:
    """Whether the Python value at pos (no string), cut at `cut`, was cut where an element of
    it begins, at a call's marker (`a=[1, <tool_call>`, `a={"k": <tool_call>`): a bare value
    never begins with one (the argument's own, `a=<tool_call>`, neither), so the value is
    broken there, told cut off by that marker (mention._broken_at_marker), not a shorter
    value closed before it (`[1]`, `closed_json`). A value whose last element was written
    whole before the marker (`[1, 2<tool_call>`) is closed there, as a string left open is."""
    if buf[pos] in "'\"" or d.cutter[0](buf, cut, cut + 1) != cut or string_open_at_end(buf, pos, cut):
        return False
    i = cut  # (its last character: outside its strings, or a string's closing quote)
    while i > pos and buf[i - 1].isspace():
        i -= 1
    return i > pos and buf[i - 1] in "[({,:" or _key_cut(buf, pos, cut)


def _key_cut(text: str, pos: int, cut: int) -> bool:
    """element_cut: whether the Python value at pos, cut at `cut` (no string left open, its
    last character no opener, `,` or `:`), ends in a dict's key written before its `:` came
    (`a={"k"<tool_call>`, `a={"j": 1, "k"<tool_call>`): an element begun, not whole, as
    after its `:` (issue 19: the key was dropped, `closed_json` alone, where the reply's end
    there gives `cut_value`). A `{` with a `,` in it and no `:` before is a set, whose
    element is whole (`{"a", "b"<tool_call>`): not so."""
    stack: list[list[Any]] = []  # (per open bracket: [a `{`, a `:` in its current element, one in an element before, a `,` before])
    for _, c in outside_strings(text, pos, cut):
        if c in "[({":
            stack.append([c == "{", False, False, False])
        elif c in "])}":
            if stack:
                stack.pop()
        elif stack and stack[-1][0]:
            top = stack[-1]
            if c == ":":
                top[1] = True
            elif c == ",":
                top[1], top[2], top[3] = False, top[2] or top[1], True
    if not stack:
        return False
    top = stack[-1]
    return top[0] and not top[1] and (top[2] or not top[3])


def _next_list_line(d: Any, buf: str, lo: int, stop: int) -> int:
    """Where, in [lo, stop), the first line begins with a call list of the driver's
    format (`[name(`; pythonic, which has no marker of its own), or -1. After a call that a broken
    Python string quoted (_quoted_call_span), that list is the model's next one: the
    value, which cannot be read, is cut before it (the line's break), as at another
    format's marker after that call, not run on over the list (QA26 S2) to a marker in
    it (QA26 S1: the region failed there, untold, its quoted call run). With tools each
    line's list is a region of its own (Driver.lines), which the cut ends; without, the
    lists in a row are one region, and close() closes the list there and reads on
    (_list_cut: issue 19)."""
    if "[" not in d.fmt.starts:
        return -1
    m = _LIST_LINE.search(buf, lo, stop)
    return -1 if m is None else m.start()


def _list_cut(d: Any, buf: str, pos: int) -> bool:
    """close(): a Python value cut at `pos` (blanks up to the frame's next text), the
    line after a call that its broken string quoted, where the model's next list begins
    (_next_list_line), in a region without tools, whose lists in a row are one region
    (no line of its own ends it: Driver.lines). The call and its list are closed there
    (their `)` and `]` supplied: the call's closed_tag, as at a list's `]` its value ran
    over: Driver._close_list), and the region reads on, the next list its own, as with
    tools: not the region failed there untold, its calls prose (QA26 S1, issue 19).
    False where the grammar closes no list there."""
    if _LIST_LINE.match(buf, pos) is None:  # (its look-behind: a line's start)
        return False
    return d.supply_list_close()


def _quoted_before_list(d: Any, buf: str, pos: int, c: int, stop: int) -> int:
    """cut: where a single-quoted Python value at pos left open to the end of the reply
    (its later `'x` apostrophes, as Python reads them), whose string holds another
    format's call that reads whole at `c`, is cut instead of at that call: at the line
    after it where the model's next list begins, no marker between (_list_after_call).
    Then text follows the call, and the string quoted it, as a double-quoted one that
    Python closes inside that call does (_quoted_call_span); in a region without tools,
    whose lists in a row are one region, close() closes the list there and reads on
    (_list_cut), not the region ended at that call, each later line's list prose with
    no error (issue 19). -1: cut at the call, as before (with tools each line's list is
    a region of its own, which begins after the call read)."""
    if d.lines:
        return -1
    line, m = _list_after_call(d, buf, pos, c, stop)
    return line if m < 0 else -1


def _apostrophes_over_list(d: Any, buf: str, pos: int, stop: int) -> int:
    """cut: where the single-quoted Python value at pos, which reads (up to `stop`), is
    cut all the same: its string, closed only by a quote after an apostrophe that the
    lenient reading took (`'x <tool_call>{…}</tool_call>\n[g(c='y')]`: `'y` read as one),
    holds another format's call that reads whole, then, on a line after it, the model's
    next list (_list_after_call), with tools or without. Python's string cannot run over
    a line's end; read so, it swallowed that list, a call in it, and the quoted call,
    told only as an apostrophe. Cut before that list (or at a marker before it, as cut()
    cuts a double-quoted one's there), the string quoted the call, as a double-quoted
    one's does, and the list is read. -1: not cut."""
    end = _repair.py_string_end(buf, pos)
    if end < 0:
        return -1  # (left open to the end: cut() reads it above, at its first call)
    close = min(end, stop)
    if buf.find("\n", pos, close) < 0:
        return -1  # (the usual case: a string on one line)
    c = _call_between(d, buf, pos + 1, close)
    if c < 0:
        return -1
    line, m = _list_after_call(d, buf, pos, c, close)
    return line if m < 0 else m


def _list_after_call(d: Any, buf: str, pos: int, c: int, stop: int) -> tuple[int, int]:
    """For the Python string at pos that holds another format's call reading whole at
    `c`: where, in [that call's end, stop), the first line begins with a call list of
    the driver's format (_next_list_line), and the first marker between that call's end
    and it (-1 where none is); (-1, -1) where no such line is, or one begins before the
    call (the string ran over the model's next list before it quoted any call: not
    this shape)."""
    e = d.cutter[4](buf, c, d.fmt)
    if not e or _next_list_line(d, buf, pos, c) >= 0:
        return -1, -1
    line = _next_list_line(d, buf, e, stop)
    if line < 0:
        return -1, -1
    return line, d._first_marker(buf, e, line)


# A line that begins a Python call list (blanks before it): _next_list_line's.
_LIST_LINE = lazy(re.compile, r"(?<=\n)[ \t]*\[[ \t]*[A-Za-z_][\w.\-]*[ \t]*\(")


def _late_cut(d: Any, buf: str, pos: int, stop: int, spans: Any) -> int:
    """For the single-quoted Python value at pos whose string, as Python reads it, runs on
    to `stop`, the end of the reply: where it is cut at the first marker after where it
    breaks for good (_after_break), or -1. Its lenient reading is one string token that
    Python's apostrophes do not close (_repair's _TOKEN reads them as _PY_STRING does),
    unless the first quote of the other kind in it (first_other) closes it (the pass's
    slip, told by what follows that quote alone: its own quote, an apostrophe, never
    stands); from there on the reading is that of any such value that quote is the first
    in. So the answer is kept per text and that quote (_LATE_CUT, its place absolute): a
    storm of values left open (`[f(a='x<|tool_call_end|>` again and again, each reading
    on over all the later ones to the end of the reply) is read once, not once per
    value (test_bounded)."""
    other = _repair.first_other(buf, pos)
    key = (other, stop, d.cutter[0], d.fmt.ends)
    memo = _LATE_CUT[0]
    if memo is not None and memo[0] is buf and memo[1] == key:
        return memo[2]
    at = _repair.unreadable_in(buf, pos, stop, spans)
    late = -1 if at is None else _after_break(d, buf, pos, at, stop, spans)
    _LATE_CUT[0] = (buf, key, late)
    return late


# _late_cut's last answer: (text, (the first other quote, the end, the driver's marker
# search, its format's end markers), where the value is cut or -1), one tuple replaced whole.
_LATE_CUT: list = [None]


def _after_break(d: Any, buf: str, pos: int, at: int, stop: int, spans: Any) -> int:
    """Where the value at pos, which runs to `stop` and breaks for good at `at` (relative
    to pos: _repair.unreadable_in), is cut: at the first marker after that break, as
    cut() cuts it below (and a stream, which looks before the end of the reply, once the
    text has run on past that marker); -1 where no marker follows the break, or the
    value cut there would break elsewhere."""
    m = d._first_marker(buf, pos + max(at - 1, 1), stop)
    if m < 0:
        return -1
    broke = spans.breaks_at(buf, pos, buf[pos:m])
    return -1 if broke is not None and broke != at else m


def open_cut(d: Any, buf: str, pos: int, final: bool) -> Any:
    """Where the quoted Python value at pos, which quoted_end ends past its string's close
    as Python reads it ((end, paired): a quote too many after that close, or a later
    quote of its kind that ends the value), is cut all the same: at a marker inside
    Python's string after a break for good (cut), told by the string's text before its
    closing quote, not by what follows that quote. A stream reads that text before the
    quote comes, while the string is open (quoted_end's OPEN), and cuts the value there:
    `y(t='x"]='x<|tool_call_start|>'')]` was cut at the marker by a stream that looked
    then (7-character deltas), where parse() read the string on to `''`, a stray quote,
    the marker (and any call after it) in a value that cannot be read (fuzz seed 7
    #8128411, #8138410). Now parse() and every stream cut it there, whenever the stream
    looked. None: not cut (no marker in the string, the usual case, or no break for good
    before one); WAIT: the text so far cannot tell (a marker may still begin right
    before the quote)."""
    close = _repair.py_string_end(buf, pos) - 1
    if close <= pos or d._first_marker(buf, pos + 1, close) < 0:
        return None
    return cut(d, buf, pos, close, final, open_to=True)


def _spans(d: Any) -> Any:
    """The _repair.Spans shared by the drivers of the text (on their BracketIndex)."""
    return _repair.Spans() if d.brackets is None else _repair.Spans.of(d.brackets)


def _call_in_open_string(d: Any, buf: str, pos: int, stop: int, closed_only: bool = False) -> int:
    """Where, in the Python argument value at pos that is a string its quote never
    closes (as Python reads it) and runs to `stop`, the end of the text, the first
    marker starts at which another format's call reads whole (cutter[4]), or -1; and
    in one that closes inside such a call (below). `closed_only`: that case only."""
    quote = buf[pos]
    if quote not in "'\"" or not d.fmt.stream_python and "PYVALUE" not in d.c.terminals:
        return -1
    end = _repair.py_string_end(buf, pos)  # (a single-quoted one's kept per text)
    if end < 0:
        return -1 if closed_only else _call_between(d, buf, pos + 1, stop)
    # It closes, as Python reads it, at a quote inside another format's call that reads
    # whole from a marker in it (`[f(a="x<newline><tool_call>{"name": …}</tool_call>`:
    # the `"` of the call's JSON): that quote is the call's, the string was left open
    # before it as above, where the call runs to the end of the reply (blanks after it
    # at most: QA22 D7). Where text follows the call, the string quoted it (its own
    # quotes not escaped: `content="Docs: <tool_call>{"name": "rm_rf", …}</tool_call>
    # That is all."`), as a JSON string does (_quoted_call): never that call run.
    close = end - 1
    reads = d.cutter[4]
    m = d._first_marker(buf, pos + 1, close)
    while m >= 0:
        e = reads(buf, m, d.fmt)
        if e:
            return m if e > close and _SPACE_TO_END.match(buf, e) is not None else -1
        m = d._first_marker(buf, m + 1, close)
    return -1


def _quoted_call_span(d: Any, buf: str, pos: int, final: bool) -> Any:
    """Where the call begins and ends, (its marker, its end), that the Python value at
    pos, a string whose close (as Python reads it) is a quote inside another format's
    call beginning at a marker in it, quotes: the first marker in that string at which
    such a call reads whole, by its frame (call_reads_at), where that call runs on past
    the string's close (`[f(a="<tool_call>{"name": "```", …}}</tool_call>`: its `"`
    after `{` is the call's), or (-1, -1); (-1, WAIT) where a stream's text so far
    cannot tell yet (the call may still read whole). cut takes the start from here
    rather than walking the string's markers again.
    That call is either the model's next one (where it runs to the end of the reply:
    _call_in_open_string) or the string's text, unescaped quotes and all: a marker
    inside it (a ``` or another format's marker in its JSON) is its text, never where
    the value breaks and is cut; a marker after it is where the value may be cut. A
    stream that cut it at such a marker before the call's end came sent the call with
    the quoted call's head for its value, the rest of it prose, its close tag too,
    where parse() read the call (fuzz seed 7 #12170362, issue 17)."""
    if buf[pos] not in "'\"" or not d.fmt.stream_python and "PYVALUE" not in d.c.terminals:
        return -1, -1
    end = _repair.py_string_end(buf, pos)
    if end < 0:
        return -1, -1
    close = end - 1
    reads = d.cutter[4]
    m = d._first_marker(buf, pos + 1, close)
    first = m
    while m >= 0:
        e = reads(buf, m, d.fmt, final)
        if type(e) is _LoopWait:
            # (The call's frame waits on its payload, which runs to the end of the text:
            # see _quoted_wait. Only that call's own reading is kept, at the string's first marker.)
            d.quote_wait = (m, e) if m == first else None
            return -1, WAIT
        if e == WAIT:
            return -1, WAIT
        if e:
            return (m, e) if e > close else (-1, -1)
        m = d._first_marker(buf, m + 1, close)
    return -1, -1


def _quoted_wait(d: Any, buf: str, pos: int, stop: int, settled: bool) -> None:
    """cut waits on the call that the value's string quotes (_quoted_call_span), whose
    frame waits on its payload running to the end of the text (`[f(b='"]<tool_call>'s')`
    then prose: the Hermes call never closes). Where that call's reading is all that more
    text can change (the value closed, and settled: text a marker's length past its
    end; that call at the string's first marker, and no other format's marker after it
    in the value, whose call _call_between may yet read whole), d.quote_wait keeps the
    frame's wait, (pos, stop, its marker, the wait): the driver waits with it
    (Driver._closed_wait), and a delta it absorbs is not looked at, as where no value
    waits; one it does not is read by that frame alone, on from its wait (Driver._cut).
    Each delta cut the value again from its start, and read that call's payload to the
    end of the text: 80 µs a delta, a 1-character stream of 15,000 three times its
    budget (issue 17). Else None."""
    got = d.quote_wait
    d.quote_wait = None
    if got is None or not settled:
        return
    m, wait = got
    own = _own_markers(d)
    x = d._first_marker(buf, m + 1, stop)
    while x >= 0:
        if not any(buf.startswith(o, x) for o in own):
            return
        x = d._first_marker(buf, x + 1, stop)
    d.quote_wait = (pos, stop, m, wait)


def _own_call_at(d: Any, buf: str, m: int) -> bool:
    """Whether, at the start marker of the driver's own format at m, in a Python value's
    string left open to the end of the reply (a whole text), a call reads whole, by that
    marker's frame (cutter[4], own=True): the model's next call, written after the string
    it never closed (`[f(a='+)<|tool_call_start|>[g()]`), and the string ends there, as
    at another format's call (_call_between). Not a mention of the marker (`'Use
    <|tool_call_start|> tags`: no call reads there), which is the string's text, whole."""
    if len(d.cutter) <= 4 or not (d.fmt.stream_python or "PYVALUE" in d.c.terminals):
        return False
    e = d.cutter[4](buf, m, d.fmt, True, None, True)
    return bool(e) and e is not WAIT


def _own_noted(d: Any, pos: int, m: int) -> None:
    """A whole text's cut of the value at pos at m, its own start marker, where a call
    reads (_own_call_at), noted for the storm memo (Driver.own_hint): in the log of the
    scanner whose call_reads_at told it (cutter[4]), so that every driver of its reading
    notes it, a salvage's or a mention's too, which are given no log of their own."""
    log = getattr(d.cutter[4], "__self__", d).listed_log
    if log is not None:
        log.append((d.fmt.name, pos, m))


def _call_between(d: Any, buf: str, lo: int, hi: int) -> int:
    """Where the first marker in [lo, hi) starts at which another format's call reads
    whole (cutter[4]), or -1."""
    reads = d.cutter[4]
    m = d._first_marker(buf, lo, hi)
    while m >= 0:
        if reads(buf, m, d.fmt):
            return m
        m = d._first_marker(buf, m + 1, hi)
    return -1


def _own_marker(d: Any, buf: str, lo: int, hi: int) -> int:
    """Where the first marker in [lo, hi) that is the driver's format's own starts (a
    start or end marker, or a literal of its grammar: Mistral's `[ARGS]`), or -1.
    (Each marker of the string is found once: linear in its length.) The last walk is
    kept per text (_OWN_MARKER): from any place between where it began and what it
    found (the end, where it found none) the answer is the same, with no marker of
    the format's own before it. So a storm of values left open, each asked to the end
    of the text (a bare pythonic list has no marker of its own to stop at: `[f(a='x
    <tool_call>…` again and again), reads the text once, not once per value."""
    own = _own_markers(d)
    find = d.cutter[0]  # (the scanner's markers: the same scanner, the same markers)
    memo = _OWN_MARKER[0]
    if memo is not None and memo[0] is buf and memo[1] is own and memo[2] == find and memo[3] == hi:
        if memo[4] <= lo and (lo <= memo[5] if memo[5] >= 0 else lo < hi):
            return memo[5]
    m = d._first_marker(buf, lo, hi)
    while m >= 0 and not any(buf.startswith(x, m) for x in own):
        m = d._first_marker(buf, m + 1, hi)
    _OWN_MARKER[0] = (buf, own, find, hi, lo, m)
    return m


def _own_markers(d: Any) -> tuple:
    """The driver's format's own markers (_own_marker), kept per grammar."""
    own = d.c.derived.get("own_markers")
    if own is None:
        literals = (t.literal for t in d.c.terminals.values() if t.literal and len(t.literal) >= 3)
        own = d.c.derived["own_markers"] = tuple({*d.fmt.starts, *d.fmt.ends, *literals})
    return own


# _own_marker's last walk: (text, the format's own markers, the scanner's marker search,
# the walk's end, where it began, what it found), one tuple replaced whole.
_OWN_MARKER: list = [None]


def may_start(d: Any, buf: str, lo: int, hi: int) -> bool:
    """Whether a marker may yet start in [lo, hi) of the text so far: the text from
    there on is the beginning of one (a scanner's marker, or this format's end),
    which _first_marker cannot see before it is whole."""
    n = len(buf)
    prefixes, ends = d.cutter[2], d.fmt.ends
    for k in range(max(lo, n - d.cutter[1] + 1), hi):
        rest = buf[k:]
        if rest in prefixes or any(len(e) > len(rest) and e.startswith(rest) for e in ends):
            return True
    return False


def close(d: Any, buf: str, final: bool, at_marker) -> str:
    """The frame is open but nothing more fits. Close it with the missing
    markers when the text has ended or the next call starts here."""
    if d.pos == d.start:
        # Nothing of the frame is in the text (a marker-less format at the start of
        # the reply): there is no frame to close, whatever markers could complete it.
        # (Its reason quotes the text: wait for it, as run() does.)
        if not final and (d.quotes or d.stray) and d.told(buf) - d.pos <= _SNIPPET:
            return WAIT
        return d._fail(f"unexpected {_snippet(buf, d.pos)}")
    pos = d.pos
    n = len(buf)
    while pos < n and buf[pos].isspace():
        pos += 1
    near = False
    if pos >= n:
        if not final:
            return WAIT
    else:
        closer = next((e for e in d.fmt.ends if buf.startswith(e, pos)), None)
        if closer is not None:
            return close_before(d, closer)
        if not final and any(n - pos < len(e) and e.startswith(buf[pos:]) for e in d.fmt.ends):
            return WAIT  # the text ends inside what may become an end marker
        hit = at_marker(buf, pos)
        # The text ends inside what may become a call marker: that matters only
        # if the missing markers can close the frame.
        if hit is None and not final and d._closing_plan() is not None:
            return WAIT
        near = not final and (d.quotes or d.stray) and d.told(buf) - d.pos <= _SNIPPET  # see run()
        if not hit and d.pos <= d.cut_at <= pos and not d.lines and _list_cut(d, buf, d.cut_at):
            return WAIT_MORE  # (the list closed at the line its next list begins: _list_cut)
        if not hit:
            if near:
                if hit is False:  # (nothing more text can change here but the quote: _QuoteWait)
                    d.hint = [_QuoteWait(d.pos + _SNIPPET)]
                return WAIT
            if buf[pos] not in d.c.literal_firsts or _stray_closer(d, buf, pos):
                d.prose_at = pos
            return d._fail(f"unexpected {_snippet(buf, d.pos)}")
    plan = d._closing_plan()
    if plan is not None:
        for term in plan:
            d.supply(term)
        d.closed_at = d.pos
        if "closed_tag" not in d.repairs:
            d.repairs.append("closed_tag")
        return d._finish(d.pos)
    if pos >= n:
        expected = [t.literal for t in d.c.allowed[d.stack[-1]] if t.literal]
        return d._fail("the reply ended inside the call" + (f" (expected {expected[0]})" if expected else ""))
    if near:
        return WAIT
    return d._fail(f"unexpected {_snippet(buf, d.pos)}")


def _stray_closer(d: Any, buf: str, pos: int) -> bool:
    """Whether the text at pos, where nothing more fits, is a closer of a Python call list
    (`)`, `]`: stray.watch_args' Python closers) right after a whole list or call, the
    frame wanting nothing but the region's end marker (`<|tool_call_start|>[f(a=1)])]
    <|tool_call_end|>`): prose after the region, its end marker left out there, as prose
    of another first character is, so that stray.Watch tells a run of them, as after a
    list whose end marker the grammar makes optional (`<|python_start|>[f(a=1)])]<|python_end|>`:
    the run is markup and one error, the end marker markup; text after it on its line,
    prose). It was "unexpected `)]<|tool_call_end|>`", all of it left as prose (issue 19)."""
    if buf[pos] not in ")]" or not d.fmt.stream_python or d.c.nest is not None or "```" in d.fmt.ends:
        return False  # (the formats stray.watch_args watches as a Python call list's: no code fence's)
    plan = d._closing_plan()
    if not plan:
        return False
    ends, terminals = d.fmt.ends, d.c.terminals
    return all(getattr(terminals.get(t), "literal", None) in ends for t in plan)


_OPENS_CALLS: dict = {}  # (format name, marker) -> _opens_calls's answer


def _opens_calls(d: Any, marker: str) -> bool:
    """Whether `marker` opens calls in a format that starts with it: its grammar, having
    read it first, takes more than the end of the text (`[TOOL_CALLS]`: a call or a list
    follows). Not a message's marker that only marks where prose begins, which its grammar
    reads as markup and then ends (Apriel's `[BEGIN FINAL RESPONSE]`, `[END FINAL RESPONSE]`:
    `(BEGIN_FINAL | END_FINAL) prose`): no call is cut by it (qa41 F4: `days=[1, [BEGIN FINAL
    RESPONSE]ok]` was told cut off by that "call marker"). Where no format's table says (the
    scanner unknown, the marker not first in its grammar), True, as before."""
    scanner = getattr(d.cutter[4], "__self__", None) if len(d.cutter) > 4 else None
    fmts = getattr(scanner, "by_marker", {}).get(marker) if scanner is not None else None
    if not fmts:
        return True
    from .table import simulate  # (only a value broken over such a marker asks, once per format)

    told = False
    for fmt in fmts:
        key = (fmt.name, marker)
        known = _OPENS_CALLS.get(key)
        if known is None:
            c = fmt.compiled
            for name, term in c.terminals.items():
                if term.literal != marker:
                    continue
                after = simulate(c, [c.start_state], name)
                if after is None:
                    continue
                row = c.states[after[-1]]
                known = any(t != "$END" and t in c.terminals and simulate(c, after, t) is not None for t in row)
                if known:
                    break
            _OPENS_CALLS[key] = known = "unknown" if known is None else known
        if known is True or known == "unknown":
            return True
        told = True
    return not told


def cut_close(d: Any, buf: str, allowed) -> str | None:
    """The reply ends inside a close marker (`</tool_call`, a fence's "``"): that
    marker was cut short, by the model or by max_chars. It is supplied and the
    region runs to the end of the text, so the cut tag is markup, not prose.
    None: the rest of the text is not such a start (one character, `<`, names
    no tag), or the frame cannot be closed."""
    if not d.taken:
        return None  # (nothing read: a reply-anchored region that never began)
    pos, n = d.pos, len(buf)
    while pos < n and buf[pos].isspace():
        pos += 1
    # (One character, `<`, after a whole closer, `</function>\n<`, or a JSON value whose
    # brackets closed, `<TOOLCALL>[…]\n<`: the next closer begun,
    # as cut_markup reads it after a value's; it names no tag elsewhere. Issue 19: it was
    # an error, `unexpected '\n<'`, and the `<` text.)
    # (Or after a comment, fenced_python's `[f(a=1)]  # note\n``: it ran to its line's end,
    # and the calls before it are whole. qa41 F3: an error, `unexpected '\n`'`.)
    lone = n - pos == 1 and (
        last_closes(d, buf)
        or d.last_term == "JSON" and buf[d.last_end - 1 : d.last_end] in ("}", "]")
        or d.last_term is not None and d.last_term.rpartition("__")[2] == "COMMENT"
    )
    if not (2 <= n - pos < d.c.longest_literal + _CUT_TAG or lone):
        # (Too short or too long to be any closer cut short, as cut_marker tells: the
        # usual case, mid-text, told without a list of them, nor a copy of all the rest
        # of the text, which for each region cost the square of a reply of calls.)
        return None
    rest = buf[pos:]
    if lone:
        here = any(
            (t.literal is not None and _closes(t.literal) and len(t.literal) > 1 and t.literal.startswith(rest))
            or (t.literal is None and t.name not in ("JSON", "PYVALUE") and _ENDING_NAME.search(t.name.rpartition("__")[2])
                and (m := t.pattern.match(buf, pos, partial=True)) is not None and m.partial)
            for t in allowed
        )  # fmt: skip
        if not here and not any(len(e) > 1 and e.startswith(rest) for e in d.fmt.ends):
            return None
    else:
        here = _cut_closer_at(d, buf, pos, allowed)
        if not here and not cut_marker(rest, d.fmt.ends):
            return None
    if _begins_more(d, buf, rest, allowed, here):
        # (It begins a marker the grammar takes here that closes nothing, as well as a
        # closer: Kimi K3's `<|` after an argument's attributes begins the `<|sep|>`
        # before its value more than `<|close|>tools<|sep|>`; Kimi K2's `<|t` after the
        # call's name begins `<|tool_call_argument_begin|>` as much as `<|tool_call_end|>`
        # (QA15 F4). The end cut what was being written; it is not told as a close cut
        # short: see salvage.)
        return None
    plan = d._closing_plan()
    if plan is None:
        return None
    if not here and not plan:
        # (The format's end marker, cut short, where the grammar has nothing left to
        # close and takes no such closer: it is not this region's. The text is read on
        # as the stream reads it, which has already ended the region there.)
        return None
    for term in plan:
        d.supply(term)
    if plan and "closed_tag" not in d.repairs:
        d.repairs.append("closed_tag")
    return d._finish(n)


def last_closes(d: Any, buf: str) -> bool:
    """Whether the last token d read from the text ends something (table.ends_something:
    `<｜tool_call_end｜>`, `</parameter>`): what was open before it is whole."""
    term = getattr(d, "last_term", None)
    return term is not None and ends_something(d.c.terminals.get(term), buf[d.last_start : d.last_end], d.fmt.ends)


def _begins_more(d: Any, buf: str, rest: str, allowed, here: bool) -> bool:
    """cut_close: whether `rest` begins a literal the grammar takes at d that closes
    nothing. Where it begins a closer too (`here`), only one that goes on with the call
    open there counts (table.goes_on: the marker that opens its arguments), not one
    taken after closing it, nor one of the format's start markers (`<｜tool▁c` after
    DeepSeek's arguments begins the next call's `<｜tool▁call▁begin｜>` too, Step-3's
    `<｜tool` after `<｜tool_call_end｜>` its next `<｜tool_call_begin｜>`: the call before
    it is whole either way). Nor after a token that ends something: the call read is
    whole, and what may follow it begins something else."""
    if here and last_closes(d, buf):
        return False
    for t in allowed:
        if t.literal is None or not t.literal.startswith(rest) or t.literal in d.fmt.ends or _closes(t.literal):
            continue
        if not here or (t.literal not in d.fmt.starts and goes_on(d.c, d.stack, t.name)):
            return True
    return False


# How much longer than the grammar's longest literal a close tag its pattern reads may
# be, cut short (M3's `]<]minimax[>[</` and an element's name: see _cut_closer_at).
_CUT_TAG = 64
CUT_ROOM = _CUT_TAG  # (cut_closer looks within longest_literal + this of the end: _lalr/looks.py)


def _cut_closer_at(d: Any, buf: str, pos: int, allowed) -> bool:
    """Whether the text from pos to its end is a closer the grammar takes here, cut
    short: a literal one (`</invoke` of `</invoke>`), or a pattern's that is named as
    ending something (M3's `_CLOSE`, `]<]minimax[>[</a` of `…</a>`), which only the
    end of the text kept from matching."""
    size = len(buf) - pos
    if size < 2:
        return False
    if size < d.c.longest_literal and cut_marker(buf[pos:], [t.literal for t in allowed if t.literal is not None and _closes(t.literal)]):
        return True
    if size >= d.c.longest_literal + _CUT_TAG:
        return False
    for t in allowed:
        if t.literal is None and t.name not in ("JSON", "PYVALUE") and _ENDING_NAME.search(t.name.rpartition("__")[2]):
            m = t.pattern.match(buf, pos, partial=True)
            if m is not None and m.partial:
                return True
    return False


def cut_closer(d: Any, buf: str, pos: int, allowed, taken: int) -> bool:
    """At the end of the reply: whether the lexer's best token at pos, `taken`
    characters, is only the start of a closer the end cut short (M3's `]<]minimax[>[<`
    of `]<]minimax[>[</invoke>`): then the text from pos is that closer, as cut_close
    reads it, not a token that the next character then breaks, which lost the call
    with no error."""
    size = len(buf) - pos
    return taken < size < d.c.longest_literal + _CUT_TAG and _cut_closer_at(d, buf, pos, allowed)


def close_before(d: Any, end_marker: str) -> str:
    """The model wrote the end marker too soon (`[f(a=1)<|tool_call_end|>`):
    supply the brackets it skipped, then read on."""
    plan = _plan_before(d, end_marker)
    if not plan:
        return d._fail(f"unexpected {end_marker!r}")
    for term in plan:
        d.supply(term)
    if "closed_bracket" not in d.repairs:
        d.repairs.append("closed_bracket")
    return WAIT_MORE


def _plan_before(d: Any, end_marker: str) -> tuple | None:
    """close_before's plan: the closing brackets and tags to supply before the end marker
    (its terminal: a literal of the grammar) is taken at d's stack; None: none does (or
    the grammar spells that marker inside a pattern). The table's answer for the stack
    and the format's ends, remembered per grammar as closing_plan's is, for a stack no
    deeper than _PLAN_STACK: a fence opened and closed with nothing a grammar reads in
    it (`` ```json``` ``, `` ``` ``` ``) asks it at the same stack at each fence, and
    working it out simulates the table for each closer of each state on the way."""
    return plan_before(d.c, d.stack, d.fmt.ends, end_marker)


def plan_before(c: Any, stack: list, ends: tuple, end_marker: str) -> tuple | None:
    """_plan_before's answer for the table c at `stack`, of a format whose end markers
    are `ends` (also asked by opening.fails_at_once's test)."""
    key = (end_marker, ends, tuple(stack)) if len(stack) <= _PLAN_STACK else None
    if key is not None:
        memo = c.derived.get("plans_before")
        if memo is None:
            memo = c.derived["plans_before"] = {}
        found = memo.get(key, _UNKNOWN)
        if found is not _UNKNOWN:
            return found
    end_term = next((t.name for t in c.terminals.values() if t.literal == end_marker), None)
    plan = None
    if end_term is not None:
        found = _plan(
            c,
            stack,
            end_term,
            lambda allowed: [t for t in allowed if t.literal is not None and t.literal not in ends and _closes(t.literal)],
        )
        plan = None if found is None else tuple(found)
    if key is not None:
        if len(memo) >= _PLANS:
            memo.clear()  # (a bound: a grammar's frames are few, but replies are many)
        memo[key] = plan
    return plan


def cut_marker(rest: str, markers: Any) -> bool:
    """Whether rest is one of the markers cut short at the end of the text: two
    characters of it at least (a lone "<" names no tag)."""
    return len(rest) >= 2 and any(len(rest) < len(m) and m.startswith(rest) for m in markers)


def cut_markup(text: str, literals: Any, patterns: Any = (), room: int = 0, nest: Any = None) -> int:
    """Where the markup that the end of the reply cut begins, at the end of a value's text
    that runs to it (a raw XML-ish value, Gemma's delimited string): a closer cut short,
    two characters of it at least and not all of it (`</param` of `</parameter>`, Kimi
    K3's `<|close|>argument<|se`, Gemma's `<|"` of `<|"|>`), after the whole closers
    written right before it, blanks between them (`</arg_value></tool_ca`; after one, a
    `<` alone too). The model had begun to close the value: that is markup, not the
    value's text. -1 where the text does not end so (a `<` alone names no tag, and may
    be the value's own). `literals`: the closers written out; `patterns`: terminals
    whose pattern reads a closer (`</(?:｜DSML｜)?parameter>`), looked for within `room`
    characters of the end (see _cut_closer_at). `nest` (the grammar's Nest): a closer
    of an element that the value's text opened, balanced there (a call quoted in the
    value), is that text, as the driver reads it (_lalr/nest.py): the markup begins
    after it, if at all. Work: the closers times their length, and one look at the
    text for the tags it leaves open."""
    run = _cut_run(text, literals, patterns, room)
    if not run:
        return -1
    if nest is not None:
        # (The elements the text before the run leaves open, by the closer each needs;
        # each closer of the run closes one of them, or is markup, and all after it.)
        open_: dict = {}
        for m in nest.tags.finditer(text, 0, run[0][0]):
            tag = m.group()
            closer = nest.closer_of.get(tag)
            if closer is not None:
                open_[closer] = open_.get(closer, 0) + 1
            elif open_.get(tag):
                open_[tag] -= 1
        for k, (start, end) in enumerate(run):
            tag = text[start:end]
            # (The last is cut short: any closer it begins.)
            closes = [tag] if k < len(run) - 1 else [c for c in nest.closer_of if len(c) > len(tag) and c.startswith(tag)]
            held = next((c for c in closes if open_.get(c)), None)
            if held is None:
                return start
            open_[held] -= 1
        return -1
    return run[0][0]


def _cut_run(text: str, literals: Any, patterns: Any, room: int) -> list[tuple[int, int]]:
    """cut_markup: the closers at the end of the text, in order, (start, end) each, the
    last one cut short; [] where the text does not end with one cut short."""
    n = len(text)
    at = -1
    longest = max((len(lit) for lit in literals), default=0)
    for i in range(max(0, n - max(longest, room if patterns else 0)), n - 1):
        rest = text[i:]
        if any(len(lit) > len(rest) and lit.startswith(rest) for lit in literals) or any(
            (m := t.pattern.match(text, i, partial=True)) is not None and m.partial for t in patterns
        ):
            at = i
            break
    lone = at < 0
    if lone:
        # (One character, `<`, is markup only after a whole closer: `</arg_value><`.)
        if n < 1 or not (any(lit.startswith(text[-1]) for lit in literals) or any(
            (m := t.pattern.match(text, n - 1, partial=True)) is not None and m.partial for t in patterns
        )):
            return []
        at = n - 1
    run = [(at, n)]
    while True:  # (the whole closers right before it)
        k = len(text[:at].rstrip())
        whole = next((k - len(lit) for lit in literals if lit and text.endswith(lit, 0, k)), -1)
        if whole < 0 and patterns:
            whole = next(
                (s for s in range(max(0, k - room), k) for t in patterns if t.pattern.fullmatch(text, s, k) is not None), -1
            )
        if whole < 0:
            return [] if lone else run[::-1]
        run.append((whole, k))
        at = whole
        lone = False


def value_closers(c: Any) -> tuple:
    """The closers of a compiled grammar that cut_markup looks for at the end of a raw
    value: (the literal ones, the terminals that read one with a pattern), each a token
    that ends something (`</parameter>`, `<|close|>argument<|sep|>`, a terminal named
    `_PARAM_CLOSE`: table.ends_something), not an opener that begins with a bracket (M3's
    `]<]minimax[>[<`). Kept with the grammar (Compiled.derived)."""
    got = c.derived.get("value_closers")
    if got is None:
        literals, patterns = [], []
        for name, t in c.terminals.items():
            ending = t.literal is not None and (t.literal.startswith("</") or "end" in t.literal.lower())
            if not ending and _ENDING_NAME.search(name.rpartition("__")[2]) is None:
                continue
            if t.literal is not None:
                literals.append(t.literal)
            elif name not in ("JSON", "PYVALUE"):
                patterns.append(t)
        got = c.derived["value_closers"] = (tuple(literals), tuple(patterns))
    return got
