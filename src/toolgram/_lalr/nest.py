"""A raw value's token stopped at a tag of its format: whether the tag is the value's
text, by the pairs the header declares (`// nest: <function= … </function>`; compiled
in _grammar/nest.py). The rule (docs/formats.md, "Markers inside values"):

 - an opener inside a value (`<tool_call>` first on its line: the whole example call a
   `write_file` documents), and a closer that the structure does not go on after (a
   `</function>` line in PHP, followed by `?>`), are the value's text when, read so,
   the value goes on to its own close tag where its pattern stops at one, with every
   tag after that opener balanced by its closer in between (nesting counted, bounded
   depth);
 - a closer that pairs with an opener the value's text holds (read as text by the
   pattern: indented, or after a space) is the value's text the same way, those openers
   counted first (_open_in_value); so is a closer of what holds the value, after an
   opener the value stopped at, that pairs with an opener of the value's text (`Example:
   <tool_call>`, then the example's `<function=rm>` first on its line, its `</tool_call>`,
   a second example); and a value may begin with an opener (the driver
   reads one glued to the parameter's `>` here, where the parser would otherwise supply
   a left-out close);
 - a reply that ends inside that reading, with every tag after the opener balanced and
   no closer of what holds the value among them (a value that quotes a whole call, then
   the token limit): the value runs to the end of the reply, cut short; but not where
   they are a call of the format glued to the value's last word, where a left-out close
   puts it, and the text after them is prose that ends as a turn does (_quoted_to_end);
   and where they close a call whose start marker the value's text holds (`Say
   "<tool_call>`, indented: _shows_call), to the end however the reply ends after them,
   or, where the closes but the value's own follow them, to that closer;
 - where that reading fails at an opener (another format's marker, which the header
   does not declare, or an opener whose closer never comes: `<tool_call> is the tag.`),
   the opener is text when the value's own close tag comes later and closes there,
   pairing with no tag written after the opener (_loose); so is a closer the header
   does not declare that closes an opener written in the value's text before it
   (`<root><tool_call id="7">log</tool_call></root>` in Seed-OSS; a quoted Qwen call's
   `</parameter>` after a long argument in a MiniCPM5 value);
 - a reading that starts at a run of closers then prose on one line reads no further
   than _HORIZON, but to the close of a quoted block begun within it (_inline_past:
   so a stream completes the call that run closes a bounded look after it);
 - a reading that starts at another close tag read as text (the own close on a line
   of a file), and _loose's, look through any tag within _HORIZON; past it they go
   on only through whole quoted blocks (the format's own tags in each no further than
   _HORIZON from its start, but for closers that close a tag of a block begun in
   another format's spelling: a quoted call whose argument is long) and at the opener
   of one more that starts no call or part of the format, and the first place the value stops with its own close there, a tag after
   it, ends the value however far (_past_declared, _past_look: a file of any length,
   ten quoted calls of another format). So no reading runs on over the format's own
   calls: a reply of N calls, each a reading that fails, costs N looks, not N replies;
 - otherwise the value ends where its pattern stopped, as before: a close tag left out
   before the next part (`1\\n<parameter=b>\\n2\\n</parameter>\\n</function>`: the
   value's own close never comes), a closer the structure goes on after (`</function>`
   then `</tool_call>`), a tag that does not pair up, any other marker, the end of the
   reply.

Where the plain text allows both readings, the one in which the structure closes
properly is taken. Each tag is looked at once per reading; a stream keeps where its
reading got to, and decides only on text that more text cannot change (what a whole
parse sees), so it reads as parse() does.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Iterator

import regex

from .growth import _loop_wait
from .._grammar.fence import FENCE_HEAD
from .._grammar.regex_loops import reads_to
from .._grammar.words import lazy
from .table import simulate, takes
from .tokens import WAIT, Tok

# Without the pattern's loop shape (growth.py), how far its look-aheads may read past
# a `<` (32 spaces, a line of 200 characters, a tag): text this far from the end of a
# stream's buffer reads as it will.
_MARGIN = 320
# How deep declared tags may nest inside a value (a call shown inside a call shown
# inside a value is 6).
_DEPTH = 12
# After a closer, what says the structure goes on: a tag, or the end of the reply.
_GOES_ON = lazy(regex.compile, r"\s{0,32}(?:<|\Z)")
# How many closers in a row (`</parameter></function></tool_call>`) are looked through.
_RUN = 8
# How far after a close-tag run read as text the value's own close tag may come.
_HORIZON = 320
_TEXT = lazy(regex.compile, r"\S")
# How prose a model ended its turn with ends: a sentence's end, then closing quotes or
# brackets at most, then blanks (the token limit cuts anywhere: `It would clear every`).
_TURN_END = lazy(regex.compile, r"[.!?。！？][)\]\"'”’」*_`]{0,3}\s*\Z")
_TURN_END_READ = 64  # (looked for in the reply's last characters only: each value asks)
# What a call glued to a value's text follows, where a model that left the value's closes
# out wrote it (`celsius<tool_call>`, `nice.<tool_call>`): a word's or a sentence's end. A
# quoted call is written on a line of its own, or after a space, a `:`, a quote mark.
_GLUED = lazy(regex.compile, r"[\w.!?。！？]")
_TAG_NEXT = lazy(regex.compile, r"\s{0,32}<")
_BLANKS_TO_END = lazy(regex.compile, r"[ \t]{0,32}\Z")  # (what _inline_run_then_text reads past a closer)
_READ_ON = object()  # (past the look: the reading goes on; _past_declared, _past_look)
# The rest of an opener that closes itself (`<parameter name="Title" class="x"/>` in a
# JasperReports file): it opens nothing. Looked for this far (a stream's settled text
# reaches further past a tag: the value patterns' look-aheads read 200 characters on).
_SELF_CLOSING = lazy(regex.compile, r"[^<>\n]{0,160}/>")
_SELF_CLOSING_READ = 162
_EDGE = max(_MARGIN, _SELF_CLOSING_READ + 16)  # (how far a pattern of no loop shape is settled before the end: _settled)
_SHUT = lazy(regex.compile, r"[<>\n]")
# The blanks a look after a tag reads through (a run of closers: _RUN of them, 32
# blanks before each), and no more.
_BLANKS_READ = 32 * (_RUN + 1)
_BLANKS = lazy(regex.compile, r"\s{0,%d}" % (_BLANKS_READ + 1))
# A tag that the header does not declare, where a value's pattern stopped at it (another
# format's `<minimax:tool_call>`, `<invoke name=…>` in a DSML value, `</function_calls>`):
# whether it closes, and its name, which its closer repeats (DSML V4.1 writes a space
# after `｜DSML｜`). A special token (`<|open|>`, `<|sep|>` of a Kimi K3 call, `<|im_end|>`)
# is no element: it opens nothing (a begin/end pair of them is _SPECIAL_PAIR's).
# (Its name and blanks are bounded, so that a stream tells it as parse() does once
# _TAG_READ characters past its `<` have come: _cut_tag.)
_TAG = lazy(regex.compile, r"<(/?)((?:｜DSML｜ ?)?[^\s<>/=\"'|｜][^\s<>/=\"']{0,199})[ \t]{0,32}>?")
_TAG_READ = 256
# A close tag of any format (DSML V4.1 writes a space after `｜DSML｜`), and the blanks a
# run of them may have between them (_foreign_run).
_CLOSER = lazy(regex.compile, r"</(?:｜DSML｜ ?)?[^\s<>/=\"']+>")
_RUN_BLANKS = lazy(regex.compile, r"\s{0,32}")
# A special token that begins or ends a section or a call (Step-3's `<｜tool_calls_begin｜>`,
# DeepSeek's `<｜tool▁call▁begin｜>`, Kimi K2's `<|tool_calls_section_begin|>`): its begin
# opens what its end closes.
_SPECIAL_PAIR = lazy(regex.compile, r"<([｜|])([^\s<>｜|]{1,48}?)([_▁])(begin|end)\1>")
# A special token (`<|close|>`), and a name and a token after it, which make it a
# marker of the format (`<|close|>think<|sep|>`), not text.
_TOKEN = lazy(regex.compile, r"(?P<token><([｜|])[^\s<>｜|]{1,48}\2>)(?P<marker>[A-Za-z_][\w\-]{0,31}<[｜|][^\s<>｜|]{1,48}[｜|]>)?")
_MARKER = lazy(regex.compile, r"[A-Za-z_][\w\-]{0,31}<[｜|][^\s<>｜|]{1,48}[｜|]>")


def _token_cut(buf: str, p: int) -> bool:
    """Whether the end of a stream's text so far cuts a special token at p, or the name
    and token that may follow it and make it a marker (`<|close|>argumgument<|se`):
    _TOKEN's marker is optional, so a partial match does not tell that it was cut."""
    m = _TOKEN.match(buf, p, partial=True)
    if m is None:
        return False
    if m.partial:
        return True
    if m.group("marker") is not None:
        return False
    after = _MARKER.match(buf, m.end(), partial=True)
    return after is not None and after.partial


# How far back the parser's values are looked through for the opener of the part a
# value is in (its tag, then its attributes and `>`).
_OPENER_BACK = 16


def _settled(d: Any, t: Any, buf: str, final: bool, x: int) -> int:
    """Where the text that a reading of the value token t from x on looks at is settled
    (the whole text, when final): before it, more text changes neither where t's
    pattern stops nor what is read at and after the tags there. Each such look starts
    at a character of the pattern's loop exits E (a stop: what P and X read there) or
    at a tag's first character; a look that starts more than the pattern's width
    before the end is settled, and one nearer is settled when, as far as the text
    tells, it ends before the end (regex_loops.reads_to, _tag_reads): the text is
    settled up to the first look from x on that is not. (Only the width was asked
    before: Kimi K3's VALUE may look 1,579 characters on, so a call closed on one line
    then prose was held that long after the reading's own look had ended: issue 21.)"""
    n = len(buf)
    if final:
        return n
    loop = t.loop
    edge = max(0, n - (_EDGE if loop is None else max(loop[2] + 1, _SELF_CLOSING_READ + 16)))
    derived = d.c.derived
    known = derived.get(("settled", t.name))  # (what this asks of t and the format, each delta)
    if known is None:
        known = derived["settled", t.name] = (
            loop is None or bool(t.pattern.flags & regex.IGNORECASE),
            _starts(d, t) if loop is not None else None,
            max(map(len, d.fmt.starts), default=0),  # (a tag is asked whether a call starts there)
        )
    unknown, starts, longest = known
    if unknown:
        return edge  # (a pattern of another shape: where it may look is not known)
    nest = d.c.nest
    reads = loop[7]
    seen = derived.get("tag_reads")
    if seen is None:
        seen = derived["tag_reads"] = {}
    lo = max(x, edge)
    # (The looks found settled before are not looked at again; one found unsettled, once
    # a quarter more of what lies past it came: a stream that waits there costs a few
    # looks at each place, not one per delta.)
    # (What is settled stays so as text comes: the range known settled keeps its start
    # when a reading that began further on looks again. Kept from its own start only,
    # each value of `<parameter=k>\nx\n` repeated, its close left out, looked at every
    # place of the reading before it again: a stream cost ten times parse(), Q11.)
    was, hi, again, shut = d.nest_unsettled.get(t.name, _NO_LOOK)
    q = lo - 1
    if was <= lo <= hi:
        if again and n < again and (shut < 0 or _SHUT.search(buf, shut, n) is None):
            return hi
        q = hi - 1
        lo = was
    only = next(iter(starts)) if len(starts) == 1 else None  # (`<` alone, the commonest: one find)
    while True:
        if only is not None:
            q = buf.find(only, q + 1)
            if q < 0:
                q = n
        else:
            q = min((at for c in starts if (at := buf.find(c, q + 1)) >= 0), default=n)
        if q >= n:
            d.nest_unsettled[t.name] = (lo, n, 0, -1)
            return n
        # (The cheapest look first: one that the text cannot settle yet costs no other,
        # and is not looked at again before it can be.)
        if q + longest >= n:
            if _SHUT.search(buf, q + 1, n) is None:
                # (The tag's own look (_tag_reads) runs on to a `<`, `>` or line break after
                # it, or _SELF_CLOSING_READ past it: it is settled no sooner, whatever its name
                # turns out to be. Waited for so, not looked at again each eighth of it: a
                # stream of parameters whose closes were left out asked each value's
                # reading once more at every tag's name.)
                d.nest_unsettled[t.name] = (lo, q, max(q + 1 + _SELF_CLOSING_READ, q + longest + 1), q + 1)
            else:
                d.nest_unsettled[t.name] = (lo, q, max(n + max(8, (n - q) // 4), q + longest + 1), -1)
            return q
        if _tag_reads_seen(seen, nest, buf, q) >= n or reads_to(reads, buf, q) >= n:
            # (Asked of a long tag only, with none of them after its `<` yet: a short one
            # is looked at again once or twice, and the asking cost more.)
            shut = _shut_wait(nest, buf, q) if n - q >= _SHUT_WAIT_FROM and _SHUT.search(buf, q + 1, n) is None else None
            if shut is not None:
                # (The tag's look runs on to its `>`, a line's end or the next `<`: not
                # settled before one comes, or the text runs that far. A DSML parameter
                # tag is forty characters long: looked at again each eighth of them, a
                # stream of them lexed each value five times over.)
                d.nest_unsettled[t.name] = (lo, q, shut + _SELF_CLOSING_READ, shut)
            else:
                d.nest_unsettled[t.name] = (lo, q, n + max(8, (n - q) // 4), -1)
            return q


_NO_LOOK = (0, 0, 0, -1)
_SHUT_WAIT_FROM = 16


def _shut_wait(nest: Any, buf: str, q: int) -> int | None:
    """Where the look at the tag at q (_tag_reads) waits for a `<`, `>` or line break
    from, when that is what it waits on (the tag read, none of them in the
    _SELF_CLOSING_READ characters after it so far): until one comes or the text
    reaches that far, it runs past the end of the text whatever comes (its first
    steps, as _tag_reads takes them). None: it waits on something else."""
    n = len(buf)
    if _token_cut(buf, q):
        return None
    e = q + 1
    for rx in (nest.tags, _SPECIAL_PAIR, _TAG, _TOKEN):
        m = rx.match(buf, q, partial=True)
        if m is not None:
            if m.partial or m.end() >= n:
                return None
            e = max(e, m.end())
    if _SHUT.search(buf, e, e + _SELF_CLOSING_READ) is None and e + _SELF_CLOSING_READ > n:
        return e
    return None


def _starts(d: Any, t: Any) -> frozenset:
    """The characters a look of the reading of t may start at (see _settled)."""
    return frozenset(("<", *t.loop[1], *(tag[0] for tag in d.c.nest.closer_of)))


class _Quiet:
    """through_nest's wait where the text so far settles the reading and nothing in it
    from where the reading got to stops the value: a delta changes it only with a
    character that may start a look, or by bringing the text to `need` characters (the
    end of a look; None: none)."""

    __slots__ = ("starts", "need")

    def __init__(self, starts: frozenset, need: int | None) -> None:
        self.starts = starts
        self.need = need

    def absorbs(self, text: str, n: int) -> bool:
        if self.need is not None and n + len(text) >= self.need:
            return False
        return not any(c in text for c in self.starts)


def _unsettled(d: Any, t: Any, limit: int) -> _Quiet | None:
    """The wait of a reading held at `limit`, a look not settled yet (see _settled): no
    delta changes it before the text reaches the length at which that look is looked at
    again (not a quarter of a long value later: a stream's wait on a token that cannot
    tell what may change it)."""
    _, hi, again, shut = d.nest_unsettled.get(t.name, _NO_LOOK)
    if hi != limit or not again:
        return None
    return _ShutQuiet(again) if shut >= 0 else _Quiet(frozenset(), again)


_SHUT_CHARS = frozenset("<>\n")  # (what _SHUT finds)


class _ShutQuiet(_Quiet):
    """_unsettled's wait on a tag's look that runs on to the first `<`, `>` or line break
    after it (_tag_reads): none has come since the wait began. The look reads that
    character and the one after it, and a look is settled only where it ends before the
    end of the text (_settled), so the first such character at p settles nothing before
    the text is p + 3 long: a delta that brings it only moves the wait there (a stream
    of `<parameter=q>x` waited on the `>` and looked again with the delta that ended
    right after it)."""

    __slots__ = ()

    def __init__(self, need: int) -> None:
        super().__init__(_SHUT_CHARS, need)

    def absorbs(self, text: str, n: int) -> bool:
        end = n + len(text)
        if end >= self.need:
            return False
        m = _SHUT.search(text)
        if m is None:
            return True
        i = m.start()
        if end >= n + i + 3:
            return False
        self.need = n + i + 3
        return True


def _unsettled_edge(d: Any, x: int, horizon: int) -> _Quiet:
    """The wait of a reading of a value whose pattern has no loop shape, held at `x`:
    its text is settled only _EDGE characters before the end (_settled), and the reading
    looks at nothing from x on before that edge passes x (or, for a run of closers read as
    text, the end of its look): no delta changes it before the text is that long, but one
    that brings a tag's first character. (Each delta read it again, and with it every
    other value the state takes: MiniMax's INLINE_VALUE at a value that begins with an
    `<invoke …>` it quotes, fuzz seed 7 #112003273, 28 µs a delta.)"""
    starts = d.c.derived.get("edge_starts")
    if starts is None:
        starts = d.c.derived["edge_starts"] = frozenset(("<", *(tag[0] for tag in d.c.nest.closer_of)))
    return _Quiet(starts, min(x, horizon) + _EDGE)


def _tag_reads_seen(seen: dict, nest: Any, buf: str, q: int) -> int:
    """_tag_reads, its answers kept by the text they read (`seen`, the format's: as
    regex_loops.reads_to keeps the pattern's): a value of markup lines repeated looks
    at the same tags at each of its lines, and a stream at each delta."""
    key = buf[q : q + _SEEN_KEY]
    if len(key) == _SEEN_KEY:
        got = seen.get(key)
        if got is not None:
            if buf.startswith(got[1], q):
                return q + got[0]
            n = len(buf)
            if n - q < got[0] and got[1].startswith(buf[q:n]):
                return n + 1  # (the text so far begins what a look read past its end: see reads_to)
    else:
        # (Fewer than _SEEN_KEY characters from q to the end of a stream's text: no key,
        # but the last look's answer is asked as above, as reads_to asks its own. A
        # stream of parameters whose closes were left out looked, at each value, at the
        # tag near the end of its text anew: a tenth of its time.)
        last = seen.get(None)
        if last is not None:
            if buf.startswith(last[1], q):
                return q + last[0]
            if len(key) < last[0] and last[1].startswith(key):
                return len(buf) + 1
        got = key  # (no keyed answer to keep: see below)
    far = _tag_reads(nest, buf, q)
    if far < len(buf) and far - q <= _SEEN_TEXT:
        told = seen[None] = (far - q, buf[q:far])
        if got is None and len(seen) < _SEEN_KEPT:
            seen[key] = told
    return far


# (As regex_loops' memo of reads_to: the key's length, and how much is kept.)
_SEEN_KEY = 48
_SEEN_TEXT = 512
_SEEN_KEPT = 512


def _tag_reads(nest: Any, buf: str, q: int) -> int:
    """Where the looks that begin at a tag at q end, as far as the text tells (past the
    end: more text may change them): the tag (declared, a special pair's, any `<name`),
    an opener's look for `/>`, and what follows it after blanks; a tag there is read on
    as the next of a run of closers (_inline_run_then_text), at most _RUN of them."""
    n = len(buf)
    far = q + 1
    for _ in range(_RUN + 1):
        e = q + 1
        if _token_cut(buf, q):
            return n + 1  # (a special token, or the name and token after it, cut)
        for rx in (nest.tags, _SPECIAL_PAIR, _TAG, _TOKEN):
            m = rx.match(buf, q, partial=True)
            if m is not None:
                if m.partial or m.end() >= n:
                    return n + 1
                e = max(e, m.end())
        # (An opener's `/>`: _SELF_CLOSING reads up to a `<`, `>` or line break.)
        shut = _SHUT.search(buf, e, e + _SELF_CLOSING_READ)
        if shut is None and e + _SELF_CLOSING_READ > n:
            return n + 1
        far = max(far, e + _SELF_CLOSING_READ if shut is None else shut.end() + 1)
        y = _BLANKS.match(buf, e).end()
        if y >= n:
            return n + 1
        if buf[y] != "<" or y - e > _BLANKS_READ or buf[q + 1] not in "/|｜":
            # (Only a closer is read on from as a run of closers: after an opener, the
            # next tag's own looks are _settled's next start. Reading nine tags on from
            # each opener of `<param <param …` cost a stream of such a value ten times
            # parse(): QA11 D9.)
            return max(far, y + 1)
        q = y
    return far


def _inline_run_then_text(nest: Any, buf: str, pos: int, final: bool) -> bool | None:
    """After a closer ending at pos: whether, on the same line, one or more of the
    format's closers (at most _RUN, spaces or tabs between) are followed by text that
    is no tag (`</parameter></function></tool_call> are written so.`): a run of close
    tags written as text, which no structure goes on after. None when a stream's text
    so far ends inside that run. (A template puts its closers on lines of their own, so
    a call followed by prose on the next line is no such run.)"""
    n = len(buf)
    x = pos
    seen = 0
    for _ in range(_RUN + 1):
        while x < n and buf[x] in " \t" and x - pos < 32 * (seen + 1):
            x += 1
        if x >= n:
            return False if final or not seen else None
        if buf[x] != "<":
            return seen > 0 and buf[x] not in "\r\n"
        m = nest.tags.match(buf, x, partial=not final)
        if m is not None and (m.partial or (not final and m.end() >= n)):
            # A tag the end of a stream's text cut, or one that ends there: an opener's
            # match there is no opener yet (`<param` goes on as `<parameter` or `<params>`).
            return None
        if m is None or nest.closer_of.get(m.group()) is not None:
            return False  # another tag, or an opener: the structure goes on
        seen += 1
        x = m.end()
    return False


def _open_in_value(d: Any, nest: Any, buf: str, pos: int, end: int) -> tuple:
    """The declared openers that the value's text from pos to its stop at `end` left
    open (their closers, innermost last; nesting counted, a closer that pairs with none
    of them is text): an indented `<invoke name="a">` line the value's pattern read as
    text, whose `</invoke>` or inner `</parameter>` the pattern then stopped at. Kept per
    (pos, end): a stream asks again with each delta."""
    memo = d.nest_open
    if memo is not None and memo[0] == (pos, end):
        return memo[1]
    if buf.find("<", pos, end) < 0:  # (every declared tag begins with `<`: none in a value without one)
        d.nest_open = ((pos, end), (), (), -1)
        return ()
    stack: list = []
    where: list = []  # (where each of them begins: _shows_call)
    closed = -1  # (where the value's own close first pairs with none of them: _shows_call)
    for m in nest.tags.finditer(buf, pos, end):
        need = nest.closer_of[m.group()]
        if need is not None:
            if len(stack) >= _DEPTH:
                stack, where = [], []
                break
            stack.append(need)
            where.append(m.start())
        elif stack and stack[-1] == m.group():
            stack.pop()
            where.pop()
        elif closed < 0 and m.group() in nest.own:
            closed = m.start()
    found = tuple(stack)
    d.nest_open = ((pos, end), found, tuple(where), closed)
    return found


# The head of a call from its start marker to the next tag: tags, each followed by at
# most a name (GLM's `<tool_call>rm_rf`) and blanks.
_CALL_HEAD = lazy(regex.compile, r"(?:<[^<>]{1,200}>[^\s<>]{0,64}\s{0,32}){1,%d}" % _DEPTH)


def _shows_call(d: Any, nest: Any, buf: str, pos: int, end: int, i: int) -> bool:
    """Whether the i-th opener _open_in_value found left open in the value's text (from
    pos to its stop at `end`) is a start marker of the format whose call's next tag is
    the one the value stopped at: the value's pattern read it as text, written after a
    quote mark, a space or indentation (`Say "<tool_call>`, `  <tool_call>`, `>
    <tool_call>`), so the call it begins is one the value quotes. (A start marker
    mentioned earlier in the value, `Use "<tool_call>" tags.`, begins no call there.)
    Not where the value's own close, pairing with no opener of its text, was written
    before that marker (`v</parameter> Then: <tool_call>…`): the value closed there, its
    call's closers left out, and the call after the prose is the model's next (QA13 F1)."""
    _open_in_value(d, nest, buf, pos, end)
    at = d.nest_open[2][i]
    if 0 <= d.nest_open[3] < at:
        return False
    return any(buf.startswith(s, at) for s in d.fmt.starts if s) and _CALL_HEAD.fullmatch(buf, at, end) is not None


def _first_on_line(buf: str, lo: int, p: int) -> bool:
    """Whether the tag at p is first on its line, after at most 32 spaces or tabs, with
    the value's text (from lo) before that line: a close tag written inside the value
    (a Python string's line), where a template writes a value's close right after it."""
    x = p
    while x > lo and p - x < 32 and buf[x - 1] in " \t":
        x -= 1
    return x > lo and buf[x - 1] == "\n"


def _goes_on(nest: Any, buf: str, pos: int, final: bool, run: bool | None = None) -> bool | None:
    """Whether the structure goes on after a closer of what holds the value, ending at
    pos: a tag or the end of the reply follows it (after at most 32 blanks), and it is
    no run of closers written as text (_inline_run_then_text: `run`, when known). None
    when a stream's text so far ends in those blanks."""
    if run is None:
        run = _inline_run_then_text(nest, buf, pos, final)
    if run:
        return False
    follows = _GOES_ON.match(buf, pos)
    if follows is None:
        return False
    return True if final or follows.end() < len(buf) else None


def _closes_on(nest: Any, buf: str, pos: int) -> bool:
    """Whether a tag follows the close tag that ends at pos (after at most 32 blanks),
    and the structure goes on with it: the next part, or what holds the value closing
    (not a run of closers written as text, nor the end of the reply). Read on settled
    text: a stream asks only where the reading is settled past pos."""
    follows = _TAG_NEXT.match(buf, pos)
    return follows is not None and not _inline_run_then_text(nest, buf, pos, True)


def _closes_after(nest: Any, buf: str, pos: int, quoted: bool) -> bool:
    """Whether the value's own close tag ending at pos, past a reading's look, closes the
    value: as _closes_on, but after a quoted block the reading paired whole (`quoted`: a
    MiniMax call quoted in a dots value, then a paragraph), any tag after it does, a run
    of closers then prose on its line too (`</parameter></invoke></dots_function_call> ok`:
    the call closed on one line, then prose, as issue 21 reads it). Read so, the structure
    closes; else the value ended at the quoted call's opener, and that call, which the
    model only showed, was read as one of its own (QA11 D3)."""
    if quoted:
        return _TAG_NEXT.match(buf, pos) is not None
    return _closes_on(nest, buf, pos)


def _taken_after(d: Any, t, buf: str, end: int) -> bool:
    """Whether the grammar takes the tag at `end` right after the value (token t): the
    reading in which the value ends there (a close tag left out before the next part)
    can go on. Where it cannot (Kimi K3: no call opens inside an argument), that
    reading fails at once, and a reply cut inside what the value quotes is the value
    cut short."""
    if any(buf.startswith(s, end) for s in d.fmt.starts if s):
        return True  # a call of the format starts there (its left-out close tags supplied)
    after = simulate(d.c, d.stack, t.name)
    if after is None:
        return True  # (cannot tell: as before)
    for u in d.c.allowed[after[-1]]:
        if u.literal is not None:
            if not buf.startswith(u.literal, end):
                continue
        elif u.name in ("JSON", "PYVALUE") or u.pattern.match(buf, end) is None:
            continue
        if simulate(d.c, after, u.name) is not None:
            return True
    return False


def _own_close(d: Any, nest: Any) -> str | None:
    """The close tag of the value's own spelling: the closer the header pairs with the
    opener of the part the value is in (`<parameter` -> `</parameter>`, `<param` ->
    `</param>`), found among the parser's last values; None when there is none."""
    values = d.values
    for i in range(len(values) - 1, max(-1, len(values) - 1 - _OPENER_BACK), -1):
        v = values[i]
        if type(v) is Tok:
            need = nest.closer_of.get(v.value)
            if need is not None:
                return need
    return None


def _foreign_run(d: Any, buf: str, end: int, final: bool) -> Any:
    """Where the value's pattern stopped at a close tag that the grammar takes as the
    value's close but in another spelling than its opener's (`</param></function>`, the
    MiniCPM5 tags, in a MiniMax value opened by `<parameter`; `</parameter></invoke>` in a
    MiniCPM5 or DSML value): whether a run of close tags from there (blanks between, at
    most _RUN) reaches the value's own close tag, after which the structure goes on (a tag,
    or the end of the reply). Read as closing, the run leaves that own close with nothing
    to close (an error, the next parameter lost); read as the value's text, the structure
    closes properly: the value ends at its own close (its position is returned). None when
    not so, (WAIT, None) when a stream's text so far ends inside the run. The look is
    bounded by the run, and told by its text alone."""
    if not buf.startswith("</", end):
        return None
    nest = d.c.nest
    first = _CLOSER.match(buf, end)
    if first is None or not nest.closes_value(first.group()):
        return None
    own = _own_close(d, nest)
    if own is None or first.group() == own:
        return None
    n = len(buf)
    x = end
    for _ in range(_RUN):
        m = _CLOSER.match(buf, x, partial=not final)
        if m is None:
            return None
        if m.partial:
            return WAIT, None  # (a tag the end of a stream's text cut)
        if m.group() == own:
            run = _inline_run_then_text(nest, buf, m.end(), final)
            goes_on = None if run is None else _goes_on(nest, buf, m.end(), final, run)
            if goes_on is None:
                return WAIT, None
            return x if goes_on else None
        x = _RUN_BLANKS.match(buf, m.end()).end()
        if x >= n and not final:
            return WAIT, None  # (blanks up to the end of the text so far: the next tag not yet told)
    return None


foreign_run = _foreign_run  # (the driver asks it where a value begins with a close tag)


# A state stack deeper than this holds no value of a call's own (a member of a dict
# nested in the value): _named_close does not ask the table there, and as a value
# nested thousands deep asks it at each token, the question stays bounded.
_NAMED_STACK = 64


def _named_close(d: Any, t: Any, buf: str, pos: int, end: int, after: int, final: bool) -> Any:
    """The value token t at pos stopped at its own close (from `end` to `after`), written
    after its text on its line, and no tag right after it. Where the grammar takes
    neither text nor that close after it (a call's value, not a dict's member: text
    there is no value, so a close read there leaves what follows as prose), the close
    is the value's text when the look after it reaches, with no other tag of the
    format in between:
     - that close again, after text (or at once, where the first came after a blank),
       with the structure going on after it (a tag, the end of the reply): the value
       ends there (`print("</cofl:value>") # end</cofl:value>`, `ends with
       </cofl:value></cofl:value>`); where the structure does not go on after any, at
       the last of them (`` `</cofl:value>` always.</cofl:value> Then: <cofl:tool_calls>…``:
       what follows is prose after a call whose closes were left out);
    Else None: the value closed at `end`, and what follows is prose after a call whose
    closes were left out (`v</cofl:value> Then: <cofl:tool_calls>…`), or, where the
    call's next value or its close follows it (`Paris</cofl:value> or
    Lyon</cofl:tool_call>`), the call's stray text, dropped (the grammar's `stray`: a
    value's text it is not, as it was read here before, the value's own close taken
    for its text and left out); so is a close written twice with no blank before it. (WAIT, None): a stream's text so far cannot
    tell. The look ends at the end of the close's next line and within _HORIZON, told
    by the text from `after` alone: a stream waits at most that far, and decides as
    parse() does. The table is asked only where the stack is short (_NAMED_STACK)."""
    tag = buf[end:after]
    if len(d.stack) > _NAMED_STACK or _takes_after_close(d, t, tag):
        return None
    mention = buf[end - 1] in " \t"  # (a close after a blank: written about)
    n = len(buf)
    x = after
    nest = d.c.nest
    # (The look ends at the end of the next line, or _HORIZON on: where the text so
    # far shows neither, a stream waits.)
    hi = min(n, after + _HORIZON)
    first = buf.find("\n", after, hi)
    stop = buf.find("\n", first + 1, hi) if first >= 0 else -1
    told = stop >= 0 or n >= after + _HORIZON or final
    if stop < 0:
        stop = hi
    last = -1  # (the last of its closes the look met that the structure does not go on after)
    while True:
        m = nest.tags.search(buf, x, stop)
        if m is None:
            if not told:
                return WAIT, None
            return None if last < 0 else last  # (else the value closed at `end`)
        if not final and m.end() >= n:
            return WAIT, None  # (a tag the end of a stream's text may still change)
        s = m.start()
        text = buf[x:s].strip()
        if m.group() != tag:
            # (Another tag of the format: the structure's. Text, then a close of what
            # holds the value, `v</cofl:value> ok</cofl:tool_call>`, or the next value,
            # is no value's text either: the grammar reads it as the call's stray text.)
            return None if last < 0 else last  # (another tag of the format: the structure's)
        if not text and x == after and not mention:
            return None  # (a close written twice)
        follows = _GOES_ON.match(buf, s + len(tag))
        if follows is not None:
            if not final and follows.end() >= n and not follows.group().endswith("<"):
                return WAIT, None  # (blanks to the end of the text so far: not yet told)
            return s
        last = s
        x = s + len(tag)  # (text after that one too: it is written about as well, or prose follows it)


def _takes_after_close(d: Any, t: Any, tag: str) -> bool:
    """Whether the grammar, after the value token t and its close `tag`, takes more text
    (t) or that close again (True where it cannot tell)."""
    c = d.c
    name = next((u.name for u in c.terminals.values() if u.literal == tag), None)
    after = simulate(c, d.stack, t.name) if name is not None else None
    if after is not None:
        after = simulate(c, after, name)
    return after is None or takes(c, after, t.name) or takes(c, after, name)


def _cut_tag(buf: str, end: int) -> bool:
    """Whether the tag at `end` may be cut by the end of a stream's text so far: no `>`
    after it yet, within _TAG_READ (`<`, `<invo`: what it is, and its name, are told once
    its `>` or that much text has come; a value that begins with a tag glued to its
    parameter's `>` stops there before the tag has come whole)."""
    n = len(buf)
    return n - end < _TAG_READ and buf.find(">", end, n) < 0


def through_nest(d: Any, t, buf: str, pos: int, end: int, final: bool) -> Any:
    """The value token at pos, whose pattern stopped at `end`: where it ends when the tag
    there is its text (the position of its own close tag), None when it is not, or
    (WAIT, None) when the text so far cannot tell."""
    nest = d.c.nest
    n = len(buf)
    if not final and _cut_tag(buf, end):
        return WAIT, None
    if buf[end] != "<":
        # (No tag there, declared or not, nor a special token: every one begins with
        # `<`. The value ends as its pattern says, as _loose answers at once.)
        return None
    foreign = _foreign_run(d, buf, end, final)
    if foreign is not None:
        return foreign
    m = nest.tags.match(buf, end)
    if m is None:
        return _loose(d, t, buf, pos, end, final)  # a marker of another kind
    tag = m.group()
    if end == pos and nest.closer_of[tag] is None:
        return None  # (no value before a closer: the value's pattern matched nothing)
    if final and nest.closer_of[tag] is not None and _deep_run(d, t, nest, buf, pos, end, m.end()):
        return None
    first_end = end
    still_open: tuple = ()  # (the openers of the value's text a reading on must close first)
    # The openers the value's text left open before an opener it stopped at (`Example:
    # <tool_call>` then the example's `<function=rm>` first on its line): a closer of what
    # holds the value that pairs with one of them is the quoted example's, read as text.
    quoted: tuple = ()
    # A run of closers then text on its line read as text (`</parameter></invoke></minimax:tool_call>
    # Then done.`): its reading ends at the look (_inline_past), so a stream completes
    # the call that run closes a bounded look after it, not at the end of the reply.
    inline = False
    if nest.closer_of[tag] is not None:
        quoted = _open_in_value(d, nest, buf, pos, end)
    if nest.closer_of[tag] is None:
        run = _inline_run_then_text(nest, buf, m.end(), final)
        if run is None:
            return WAIT, None  # (closers up to the end of the text so far: not yet told)
        inner = _open_in_value(d, nest, buf, pos, end)
        if inner and inner[-1] == tag:
            # It closes an opener written in the value's text (an indented `<invoke …>`
            # line, a config file's `<parameter name="x">`): text, if the value then
            # closes, the openers around that one closed first.
            first_end = m.end()
            still_open = inner[:-1]
        elif tag in nest.own:
            if not run:
                if not final and _BLANKS_TO_END.match(buf, m.end()) is not None:
                    # (Nothing after it yet: a run of closers then text may follow, which
                    # reads it as the value's text. Another terminal growing at the value
                    # held a MiniMax value here; a Cohere cofl value has only this one.)
                    return WAIT, None
                if not _first_on_line(buf, pos, end):
                    # (`Oslo</arg_value>` then prose: a call whose close was left out;
                    # unless the value names its own close on its line: _named_close.)
                    return _named_close(d, t, buf, pos, end, m.end(), final)
                goes_on = _goes_on(nest, buf, m.end(), final, run)
                if goes_on is None:
                    return WAIT, None  # (spaces up to the end of the text so far: not yet told)
                if goes_on:
                    return None  # the value's own close tag, where its pattern says it closes
            # Its own close tag, then closers and text on that line (`tags: </parameter>
            # </function></tool_call> look so.`), or text that is no tag on the next line
            # (a Python string that holds the tag on a line of its own, then `"""`): text,
            # if the value then closes.
            first_end = m.end()
            inline = run
        else:
            goes_on = _goes_on(nest, buf, m.end(), final, run)
            if goes_on:
                return None  # a closer the structure goes on after: it ends the value
            if goes_on is None:
                return WAIT, None  # (spaces up to the end of the text so far: not yet told)
            inline = run
    if not takes(d.c, d.stack, t.name):
        # (The parser does not take the value here: the table offers it only through
        # merged LALR lookaheads, cofl's VALUE at a call's level, at the call's stray
        # text. The driver refuses it wherever it ends and lexes the text again
        # without it, so it is not read on: reading on to the reply's end at each
        # stray text was the square of a call of many.)
        return None
    # A close-tag run read as text looks for the value's own close tag this far on,
    # no further (each such run reading on to the end of the reply was the square of
    # a reply of calls closed on one line and followed there by prose).
    horizon = first_end + _HORIZON if first_end > end else n + 1
    memo = d.nest_memo.get(t.name)
    if memo is not None and memo[0] == (pos, end):
        _, x, stack, stop, outer, paired, resume, quoted, bottom, shown = memo
        stack = list(stack)
    else:
        x, stack, stop, outer, paired, resume = first_end, list(still_open), -1, first_end > end, end, None
        bottom = first_end  # (where the quoted block open now began)
        shown = False  # (a call the value's text began, quoted: _shows_call)
    # Read on as if the tag were text: the value's pattern and the tags, up to where a
    # stream's text is settled (what the pattern's look-aheads and the tags' looks read).
    limit = _settled(d, t, buf, final, x)
    origin = None  # (where the match that found `stop` began, its pattern, the value's start)
    tags = nest.tags
    pattern = t.pattern
    ahead = not inline
    # (The tags this reading meets, and whether each opener closes itself, as found by
    # the readings before it in this text: the next value's reading meets the same ones.)
    found = d.nest_found
    if found is None or found[0] is not buf:
        found = d.nest_found = (buf, {}, {})
    _, after_x, shut_at = found
    while True:
        if ahead and stack:
            # (Openers only from x on, up to the one past _DEPTH: the reading pushes each
            # and ends the value at its stop there. Told from where the reading of the
            # value before this one found them: each value of a thousand parameters whose
            # closes were left out read the next dozen tags again. Asked once a reading.)
            ahead = False
            k = max(1, _DEPTH - len(stack) + 1)
            met = _openers_ahead(d, nest, buf, x, k, min(horizon, n if final else limit))
            if len(met) == k:
                return None
            if met:
                stack.extend(need for need, _ in met)
                x = met[-1][1]
        m = after_x.get(x, found)
        if m is found:
            if len(after_x) >= _FOUND_KEPT:
                after_x.clear()  # (the readings go on forward: those behind are not met again)
            m = after_x[x] = tags.search(buf, x)
        p = n if m is None else m.start()
        if not stack:
            if stop < x:
                # The first place at or after x where the value's pattern stops (n: none);
                # where it stops is told by the text around each place alone.
                if resume is not None:
                    # The match a stream's earlier look began, read on from where it
                    # was settled (not begun again at x: the pattern's first character
                    # is not its loop's, `[^\s<]` of a bare value).
                    origin, resume = resume, None
                    at, rest, _ = origin
                    s = rest.match(buf, at)
                    stop = at if s is None else s.end()
                if stop < x:
                    s = pattern.match(buf, x)
                    stop = x if s is None else s.end()
                    origin = (x, pattern, x)
            if stop < p:
                p, m = stop, None
        if p >= horizon and (final or p < limit):
            if inline:
                decided = _inline_past(m, p, stack, bottom)
            else:
                decided = _past_declared(d, nest, buf, end, p, m, stop, stack, bottom, paired)
            if decided is not _READ_ON:
                return decided
        if inline and not final and p >= limit >= horizon and (not stack or limit - bottom > _HORIZON):
            # (Whatever comes at or past limit is past the look, outside a quoted block
            # begun within it: _inline_past's answer is None, told now.)
            return None
        if p >= limit:
            if final:
                # The end of the reply, inside the reading. Where every tag after the
                # stop paired up and none closed what holds the value, the value was
                # showing markup when the reply was cut: it runs to the end (a value
                # cut short, not a call invented from what it quotes). Otherwise the
                # value ends as before (a close tag left out before the next part).
                if outer:
                    return outer if type(outer) is int else None  # (see _quoted_then_text)
                if not stack:
                    # (Text after the last tags that paired up: they were quoted, unless
                    # it is the prose a turn ends with after the format's own calls. A
                    # reply that ends on them is calls whose close tags were left out.)
                    return n if shown or _in_open_fence(buf, pos, end) else _quoted_to_end(d, buf, end, paired)
                return n if _in_open_fence(buf, pos, end) or not _taken_after(d, t, buf, end) else None
            # (Nothing starts in [x, limit): a stream's next look goes on from there. A
            # stop found past limit, or none up to the end so far, may move: found again.)
            if 0 <= stop < limit:
                resume = None
            elif origin is not None:
                # Where the match so far may be read on from (growth.py: inside its loop,
                # or at a character that begins one more round of it, settled); where it
                # began when the pattern has no such shape.
                at, _, start = origin
                wait = _loop_wait(t, buf, at, limit, start) if t.loop is not None else None
                resume = (*wait.resume, start) if wait is not None and wait.resume is not None else origin
            # (Else no stop was looked for in this look: the place to read on from stays.)
            d.nest_memo[t.name] = ((pos, end), max(x, limit), tuple(stack), stop if stop < limit else -1, outer, paired, resume, quoted, bottom, shown)
            if limit < n:
                if t.loop is None:
                    return WAIT, _unsettled_edge(d, max(x, limit), horizon if inline else n + 1)
                return WAIT, _unsettled(d, t, limit)
            if p < n or t.loop is None:
                return WAIT, None
            # Nothing in the text from x on stops the value or is a tag, and all of it is
            # settled: only a character that may start a look changes the reading, or, for
            # a run of closers read as text, the end of its look (so a stream completes the
            # call that run closes right there, not a quarter of the value later).
            need = None
            if inline:
                need = horizon if not stack else max(horizon, bottom + _HORIZON + 1)
            return WAIT, _Quiet(_starts(d, t), need)
        if m is None:
            return _loose(d, t, buf, pos, end, final)  # a marker of another kind
        tag = m.group()
        need = nest.closer_of[tag]
        if need is not None:
            e = m.end()
            closes = shut_at.get(e)
            if closes is None:
                if len(shut_at) >= _FOUND_KEPT:
                    shut_at.clear()
                closes = shut_at[e] = _SELF_CLOSING.match(buf, e, e + _SELF_CLOSING_READ) is not None
            if closes:
                pass  # (it closes itself: text, opening nothing)
            elif len(stack) >= _DEPTH:
                return None
            else:
                if not stack:
                    bottom = p  # (a quoted block begins)
                    ahead = not inline  # (the openers it begins a run of: told at once, above)
                stack.append(need)
        elif stack:
            if stack[-1] != tag:
                return _loose(d, t, buf, pos, end, final)  # tags that do not pair up
            if tag in nest.own and (_call_open(d, quoted) or end > pos and _starts_call(d, buf, end)):
                # The value's close in a part of a call of the format the value holds
                # opened (`celsius<tool_call>g` … `<arg_value>print("</arg_value>")`):
                # with text after it on its line, it is a mention in the next call's
                # value (no call writes prose after a value's close), which pairs with no
                # opener of it (as _text_tags reads one): else that call is swallowed.
                # (A tag right after it, a run of closers then prose too, is a quoted
                # call's structure going on: `</parameter></invoke> then`.)
                follows = _GOES_ON.match(buf, m.end())
                if follows is None:
                    return _loose(d, t, buf, pos, end, final)
                if not final and not follows.group().endswith("<"):
                    return WAIT, None  # (blanks to the end of the text so far: not yet told)
            stack.pop()
            if not stack:
                paired = m.end()
        elif quoted and quoted[-1] == tag and not (p == stop and tag in nest.own):
            # It closes an opener of the value's text before the stop (the quoted
            # example's `</tool_call>`, another example after it): text, if the value
            # then reaches its own close where that closes (a reading that ends
            # otherwise ends the value at its stop, as for a closer read as text). Where
            # that opener is the start marker of a call the value quotes (`Say
            # "<tool_call>`), every tag from it on has paired up: a reply that ends
            # in the reading ends inside the value, cut short (_quoted_to_end).
            if not outer and _shows_call(d, nest, buf, pos, end, len(quoted) - 1):
                paired, shown = m.end(), True
            else:
                outer = True
            quoted = quoted[:-1]
        else:
            if p == stop:
                if tag in nest.own:
                    if inline and _in_fence(buf, pos, first_end, p):
                        x = m.end()  # (a code fence in the prose after the run shows it)
                        continue
                    return p if p > end else None
                quote = not outer and _quoted_then_text(buf, end, paired, p)
                if _goes_on(nest, buf, m.end(), True):
                    # The structure goes on after this closer: it ends the value, its own
                    # close left out; after a call the value quotes, here (`Say
                    # "<tool_call>…</tool_call>"\n</function>`, or a block quoted whole
                    # then text: _quoted_then_text), else at its stop.
                    return p if (shown or quote) and not outer else None
                if quote and _line_end(buf, m.end()):
                    # (At its line's end, after a block quoted whole then text: where the
                    # value's own close never comes, it ends here. Kept as `outer`: a
                    # reading on that meets the own close takes that instead.)
                    outer = p
                    x = m.end()
                    continue
            if type(outer) is not int:
                outer = True  # (a closer of what holds the value, read as its text)
        x = m.end()


# (How many of the tags through_nest's readings met are kept, and of the openers whether
# each closes itself: a reading looks at most a few dozen tags on, past _DEPTH openers.)
_FOUND_KEPT = 256


def _deep_run(d: Any, t: Any, nest: Any, buf: str, pos: int, end: int, after: int) -> bool:
    """Whether, in a whole text, the reading below, from the opener the value stopped at
    (from `end` to `after`), pushes that opener and then _DEPTH - 1 more, one after
    another (_openers_ahead): past _DEPTH it ends the value at its stop, whatever else
    it would ask first (the openers the value's text left open, whether the parser takes
    the value there: each answer leads to that end). No reading of this value was kept
    (a stream's, d.nest_memo), and the opener does not close itself. A call of
    parameters whose closes were all left out meets this at each value: told by the
    run of openers after it alone."""
    memo = d.nest_memo.get(t.name)
    if memo is not None and memo[0] == (pos, end):
        return False
    if _SELF_CLOSING.match(buf, after, after + _SELF_CLOSING_READ) is not None:
        return False
    need = nest.closer_of[buf[end:after]]
    got = _step(d, nest, buf, after) if need not in nest.own else None
    if got is not None and got[2] is None and buf[got[1] : got[3]] == need:
        # The opener's closer is the next tag but pairs (`<arg_key>q</arg_key>`): the
        # reading pushes and pops it, and at the empty stack after it asks where the
        # value's pattern stops (at the next tag, or it ends the value there, _loose);
        # the next tag, an opener, then begins the run.
        x = got[3]
        got = _step(d, nest, buf, x)
        if got is None or got[2] is None or nest.tags.search(buf, x).start() != got[1]:
            return False  # (not an opener, or one that pairs at the empty stack too)
        s = t.pattern.match(buf, end)
        stop = end if s is None else s.end()
        if stop < x:
            s = t.pattern.match(buf, x)
            stop = x if s is None else s.end()
        if stop < got[1]:
            return False
        after = got[3]
    walk = d.nest_walk
    if walk is not None and walk[0] is buf:
        # (_openers_ahead's first answer, where the walk it keeps holds _DEPTH openers
        # from `after` on, each before the end of the text: asked at each value of a call
        # of parameters whose closes were left out, the walk read ahead in batches.)
        i = walk[1].get(after)
        if i is not None and i >= walk[5] and len(walk[3]) - i >= _DEPTH and walk[2][i + _DEPTH - 1] < len(buf):
            walk[6] = 0
            return True
    return len(_openers_ahead(d, nest, buf, after, _DEPTH, len(buf))) == _DEPTH


def opener_run(d: Any, t: Any, buf: str, pos: int, end: int) -> bool:
    """Whether through_nest's reading of the value token t at pos, whose pattern stopped
    at `end` before a tag that is no close tag, in a whole text, ends it at its stop by
    its first answer: the tag is an opener of the nest, and _deep_run tells the run of
    _DEPTH openers after it (Driver._plain_value). Where the walk _openers_ahead keeps
    (d.nest_walk) holds that tag and _DEPTH openers after it, told from the walk, as
    _deep_run tells it, without matching the tag again (its entry: an opener whose
    closer is the value's own, that does not close itself, ending where the walk's next
    step begins); else as through_nest asks, which reads the walk on. A call of a
    thousand parameters whose closes were left out asked it at each value."""
    nest = d.c.nest
    walk = d.nest_walk
    if walk is not None and walk[0] is buf:
        starts, mets = walk[2], walk[3]
        j = bisect_left(starts, end, walk[5])
        if j < len(starts) and starts[j] == end:
            need, after = mets[j]
            i = walk[1].get(after)
            if i == j + 1 and need in nest.own and len(mets) - i >= _DEPTH and starts[i + _DEPTH - 1] < len(buf):
                memo = d.nest_memo.get(t.name)
                if memo is None or memo[0] != (pos, end):
                    walk[6] = 0
                    return True
    m = nest.tags.match(buf, end)
    return m is not None and nest.closer_of[m.group()] is not None and _deep_run(d, t, nest, buf, pos, end, m.end())


def _openers_ahead(d: Any, nest: Any, buf: str, x: int, k: int, bound: int) -> list:
    """The declared tags from x on, up to k of them, while each is an opener that does
    not close itself and begins before `bound`: for each, (the closer it needs, where
    it ends), as through_nest's reading, its stack not empty, meets them (it pushes
    each, and past _DEPTH ends the value at its stop). An opener its closer pairs with
    at once is passed over (_step: pushed and popped, where the reading is below _DEPTH;
    at _DEPTH, the next opener's count ends the value at its stop as well). Each step is
    found once per text, kept with the text that tells it (_step): one the text so far
    does not tell ends the list.
    The openers found one after another are kept in order too (d.nest_walk): the next
    value's reading, which starts one tag further on, takes its list as a slice of
    that, its text compared at once, not tag by tag (a thousand parameters whose closes
    were left out asked the same dozen tags again at each value: half of their cost).
    The walk is the text's too, shared by the drivers of one text (Scanner.nest_walks,
    kept in place): a storm of calls each cut in its value, each call a driver, read the
    dozen openers after each value again, and its walk on by four dozen more."""
    walk = d.nest_walk
    met: list = []
    i = walk[1].get(x) if walk is not None else None
    if i is not None and i >= walk[5]:
        ref, _, starts, mets, tolds, _, _ = walk
        j = min(len(mets), i + k)
        if ref is buf or buf.startswith(ref[x : tolds[j - 1]], x):
            walk[6] = 0
            cut = bisect_left(starts, bound, i, j)
            met = mets[i:cut]
            if cut < j or j - i >= k:
                return met
            # (The walk ends before k of them: read on from its end, as below.)
            if ref is not buf:
                walk[0], walk[5] = buf, i  # (its entries before i were not compared with this text)
            x = mets[-1][1]
            i = -1
    if i is None and walk is not None and walk[3] and walk[3][-1][1] < x:
        # A reading that begins at the tag the walk's next step finds (a stream's, read
        # on from where its look stopped, at that tag's `<`): no tag between the walk's
        # end and x, the step from either finds the same one, so the walk goes on from
        # its end, as a reading that met its end does (below). Each delta of a thousand
        # parameters whose closes were left out began no walk there (the misses), and
        # the reading begun at the next value stepped a dozen tags again.
        ref, _, _, mets, tolds, first, _ = walk
        frontier = mets[-1][1]
        got = _step(d, nest, buf, frontier)
        if got is not None and got[1] == x:
            if ref is not buf:
                # (The walk's last _DEPTH entries, compared with this text, stay of use to
                # the readings that begin behind this one; those before them no more.)
                v = max(first, len(mets) - _DEPTH, 1)
                if not buf.startswith(ref[mets[v - 1][1] : tolds[-1]], mets[v - 1][1]):
                    v = len(mets)
                walk[0], walk[5] = buf, v
            walk[6] = 0
            x = frontier
            i = -1
    if i != -1:
        got = _step(d, nest, buf, x)
        if got is None or got[2] is None or got[1] >= bound:
            return met  # (no opener there: no walk begun, and none missed)
        # A new walk from x. Where readings begin elsewhere than where the last one's
        # openers end (a stream's, read on from where its look stopped), the walks
        # begun after the last that served one are fewer and fewer: 1, 2, 4, … misses.
        missed = 1 if walk is None else walk[6] + 1
        if missed & (missed - 1):
            walk[6] = missed
            walk = None
        else:
            if walk is None:
                walk = d.nest_walk = [buf, {}, [], [], [], 0, missed]
            else:
                walk[:] = buf, {}, [], [], [], 0, missed  # (in place: shared by the drivers of one text)
    if walk is not None:
        index, starts, mets, tolds = walk[1], walk[2], walk[3], walk[4]
    while len(met) < k:
        got = _step(d, nest, buf, x)
        if got is None:
            break
        if got[2] is None or got[1] >= bound:
            break
        if walk is not None and (not mets or mets[-1][1] == x):  # (the walk goes on from its last opener)
            index[x] = len(mets)
            starts.append(got[1])
            mets.append((got[2], got[3]))
            told = x + len(got[0])
            tolds.append(told if not tolds or told > tolds[-1] else tolds[-1])
        x = got[3]
        met.append((got[2], x))
    if walk is not None and len(met) == k and mets and mets[-1][1] == x:
        # The walk read on by as many openers again, times _WALK_ON, for the readings to
        # come (each value of a call of parameters whose closes were left out begins one
        # tag further on: a walk one opener ahead was read on at each, a walk k ahead at
        # one in k, and the reading that found it short asked this again). The steps as
        # the loop above takes them, kept as it keeps them; no reading's answer is told
        # by them but the walk's (see above). The commonest step, an opener of the
        # value's own close right after the last (no pair passed over), found by one
        # search that goes on from the last tag's end (_walk_on); any other by _step.
        x = _walk_on(d, nest, buf, x, k * _WALK_ON, index, starts, mets, tolds)
    return met


# (How many times k openers _openers_ahead reads the walk on by, once it reaches its end.)
_WALK_ON = 4


def _walk_on(d: Any, nest: Any, buf: str, x: int, count: int, index: dict, starts: list, mets: list, tolds: list) -> int:
    """Read the walk on from x (where its last opener ends) by up to `count` steps, each as
    _step takes it, kept in the walk and in d.nest_chain as _step keeps it; where the walk
    stops. The tags from one search that goes on from the last (_tags_shut), each told as
    _step tells it: an opener whose closer is the value's own ends a step; one whose closer
    is not is passed over where that closer is the next tag (GLM's `<arg_key>q</arg_key>`),
    else it ends the step. A tag whose look runs past the look is _step's."""
    chain = d.nest_chain
    n = len(buf)
    own = nest.own
    closer_of = nest.closer_of
    found = _TAGS_SHUT.get(nest.tags) or _tags_shut(nest.tags)
    left = count
    while left > 0:
        tags = found.finditer(buf, x)
        far = x
        paired = False
        for m in tags:
            e = m.end()
            shut = m.start(1)
            if shut < 0:
                break  # (no `<`, `>` or newline within the look: _step's)
            told = shut + 1
            if told >= n:
                return x  # (what tells the tag may still come: _step's None)
            if told > far:
                far = told
            need = closer_of[m.group()]
            if need is None or (buf[shut] == ">" and shut > e and buf[shut - 1] == "/"):
                return x  # (a closer, or an opener that closes itself: no opener, the walk stops)
            if need not in own:
                after = next(tags, None)
                if after is None or after.end() >= n:
                    return x  # (whether its closer follows at once, the text does not tell yet)
                at = after.end()
                if at + 1 > far:
                    far = at + 1
                if after.group() == need:
                    continue  # (pushed and popped at once: passed over, the step goes on)
                paired = True  # (the tag after it is read again, by the next step)
            chain[x] = (buf[x:far], m.start(), need, e)
            index[x] = len(mets)
            starts.append(m.start())
            mets.append((need, e))
            tolds.append(far if far > tolds[-1] else tolds[-1])
            x = e
            left -= 1
            if not left:
                return x
            if paired:
                break
            far = x
        else:
            return x  # (no tag after x: _step's None)
        if paired:
            continue
        # (A tag whose look runs past the look: _step's step, kept the same way.)
        got = _step(d, nest, buf, x)
        if got is None or got[2] is None:
            return x
        index[x] = len(mets)
        starts.append(got[1])
        mets.append((got[2], got[3]))
        told = x + len(got[0])
        tolds.append(told if told > tolds[-1] else tolds[-1])
        x = got[3]
        left -= 1
    return x


# Per nest (its tags' pattern): that pattern, then, in group 1, the first `<`, `>` or
# newline after the tag within _SELF_CLOSING_READ - 1 characters (_SHUT's search there).
# An opener closes itself (_SELF_CLOSING matches after it) exactly where that character
# is a `>` after a `/` after the tag; where none comes within the look, the pattern is
# asked. One search per tag: _step searched three times at each (a tag, what tells it,
# whether it closes itself), at each tag of a call of a thousand open parameters.
# (Kept per tags pattern, up to _TAGS_SHUT_KEPT of them: user grammars come and go.)
_TAGS_SHUT: dict = {}
_TAGS_SHUT_KEPT = 256


def _tags_shut(tags: Any) -> Any:
    got = _TAGS_SHUT.get(tags)
    if got is None:
        if len(_TAGS_SHUT) >= _TAGS_SHUT_KEPT:
            _TAGS_SHUT.clear()
        got = _TAGS_SHUT[tags] = regex.compile(r"(?:%s)(?=[^<>\n]{0,%d}([<>\n]))?" % (tags.pattern, _SELF_CLOSING_READ - 2), tags.flags)
    return got


def _step(d: Any, nest: Any, buf: str, x: int) -> Any:
    """The next tag from x on that through_nest's reading, its stack not empty, does
    more at than push and pop: (the text that tells it, from x, its start, the closer
    it needs, None where it is a closer or closes itself, its end), or None where the
    text does not tell (no tag; the end of a stream's text may still change it). An
    opener whose closer is the next tag (`<arg_key>q</arg_key>`), neither closing itself
    nor the value's own, is pushed and popped at once: passed over (a call of GLM
    parameters whose closes were left out pairs one between each value's opener). Kept
    per text with the text that tells it (d.nest_chain, the drivers' of one text: Scanner.
    nest_walks): another value's reading, or another call's driver's, finds
    it again where that text is the same, whatever came after it (a stream's later text).
    The pairs passed over lead every start after one of them to the same answer: each
    such start is kept with it too, and a None with the very text that told it (`buf`,
    the same object: a stream's next delta is another, which may tell more). Asked at
    each value of a run of pairs that never ends in a tag that tells (GLM's `name\n<arg_
    key> path </arg_key>\n` repeated, with tools: each value walked every pair after it
    to the end of the text, 830 ms at 32 KB), the walk is made once."""
    chain = d.nest_chain
    got = chain.get(x)
    if got is not None:
        if got[0] is None:
            if got[1] is buf:
                return None
        elif buf.startswith(got[0], x):
            return got
    n = len(buf)
    tags = nest.tags
    found = _TAGS_SHUT.get(tags) or _tags_shut(tags)
    at = far = x
    passed = [x]  # (x, and where the search went on after each pair passed over)
    while True:
        m = found.search(buf, at)
        if m is None:
            return _told_none(chain, passed, buf)
        e = m.end()
        shut = m.start(1)  # (_SHUT's: the first `<`, `>` or newline from e on within the look; -1: none)
        told = (e + _SELF_CLOSING_READ - 1 if shut < 0 else shut) + 1
        if told >= n:
            return _told_none(chain, passed, buf)  # (what tells the tag, or that it closes itself, may still come)
        if told > far:
            far = told
        need = nest.closer_of[m.group()]
        if need is not None and (buf[shut] == ">" and shut > e and buf[shut - 1] == "/" if shut >= 0 else _SELF_CLOSING.match(buf, e, e + _SELF_CLOSING_READ) is not None):
            need = None  # (it closes itself, _SELF_CLOSING: text, opening nothing)
        if need is None or need in nest.own:
            break
        after = tags.search(buf, e)
        if after is None or after.end() >= n:
            return _told_none(chain, passed, buf)  # (whether its closer follows at once, the text does not tell yet)
        at = after.end()
        if at + 1 > far:
            far = at + 1
        if after.group() != need:
            break
        passed.append(at)
    start = m.start()
    for p in passed:
        # (The text from p to far tells it: what the search from p reads, and for p after
        # x no less, since far only grows.)
        chain[p] = (buf[p:far], start, need, e)
    return chain[x]


def _told_none(chain: dict, passed: list, buf: str) -> None:
    """_step's None, kept for each start that led to it, with the text that told it."""
    told = (None, buf)
    for p in passed:
        chain[p] = told
    return None


def _quoted_then_text(buf: str, end: int, paired: int, p: int) -> bool:
    """Whether, in a value whose pattern stopped at an opener at `end` (its close left
    out there, or the opener its text), the tags from there paired up by `paired` (a
    block quoted whole: a call of the format, or of another, `<tool_calls>…</tool_calls>`
    or `<function_calls>…</function_calls>`) and text that is no blank comes between that
    and a closer of what holds the value at p (`… > /tmp/out.txt\n</function>`). Read
    so, the value ends at that closer, its own close left out, and the structure closes;
    read with the value ended at the opener, the block is a call the value only showed,
    run, and the text after it, closers and all, is left in the prose (QA13 F5)."""
    return paired > end and _TEXT.search(buf, paired, p) is not None


_LINE_END = lazy(regex.compile, r"[ \t]{0,32}(?:\r?\n|\Z)")


def _line_end(buf: str, pos: int) -> bool:
    """Whether a closer ending at pos ends its line (or the reply), as a template writes
    the close of a call that prose follows."""
    return _LINE_END.match(buf, pos) is not None


def _inline_past(m: Any, p: int, stack: list, bottom: int) -> Any:
    """through_nest's reading at p past its look, where it began at a run of closers then
    text on their line (_inline_run_then_text): _READ_ON only inside a quoted block begun
    within the look and no longer than it; else None, the value ends at its stop. Unlike
    _past_declared's reading (a file that holds the tag on a line of its own), no own
    close past the look makes such a run text: a call closed on one line, then prose,
    is told closed a bounded look after its close (issue 21), however long the prose."""
    if m is not None and stack and p - bottom <= _HORIZON:
        return _READ_ON
    return None


# A code fence's line, by the one rule (_grammar/fence.py), first on its line.
_FENCE = lazy(regex.compile, "^" + FENCE_HEAD, regex.MULTILINE)


def _in_fence(buf: str, pos: int, run: int, p: int) -> bool:
    """Whether the value's own close at p, where a reading from a run of closers then
    prose (ending at `run`) met it, lies inside a code fence opened in that prose (`The
    format:\n```xml\n</parameter>\n</function>\n```` after a call closed on one line):
    it is shown there, not the value's close (QA11 D8). Fences between the run and p are
    counted (p is within the look of the run: a bounded count); only where that count is
    odd are those of the value before the run counted too (a value that is a fenced block
    holding the run: its fence's close then comes first)."""
    if sum(1 for _ in _FENCE.finditer(buf, run, p)) % 2 == 0:
        return False
    return sum(1 for _ in _FENCE.finditer(buf, pos, run)) % 2 == 0


def _in_open_fence(buf: str, pos: int, end: int) -> bool:
    """Whether the value's text from pos to its stop at `end` opened a code fence that is
    still open there (```` ```xml ```` then, on the next line, the tag it stopped at): what
    follows is a block the value shows, not a call of the model's. Asked where the end of
    the reply comes inside the reading from that stop (the block, and the value, cut
    short: the value runs to the end, cut_value), so once a region."""
    fences = sum(1 for _ in _FENCE.finditer(buf, pos, end))
    if pos > 0 and buf[pos - 1] != "\n" and _FENCE_AT.match(buf, pos, end) is not None:
        fences += 1  # (the value's first line, after its tag's `>`: `^` does not match there)
    return fences % 2 == 1


_FENCE_AT = lazy(regex.compile, FENCE_HEAD)


def _past_declared(d: Any, nest: Any, buf: str, end: int, p: int, m: Any, stop: int, stack: list, bottom: int, paired: int) -> Any:
    """through_nest's reading at p past its look (_HORIZON after a close tag read as text):
    _READ_ON inside a quoted block no longer than the look (begun at `bottom`), or at the
    opener of one more quoted block in another spelling than the value's (`<function=rm>`
    examples in a MiniMax value) that starts no call of the format; the value's own close
    where the value's pattern stops, nothing open, a tag following it: its position (a
    file that holds the tag on a line of its own, then more than the look of text); else
    None, the value ends at its stop. So a reading never runs on over the format's own
    calls or parts past the look (a reply of calls closed on one line, then prose, each
    run read as text: each reading looks one look on, and through quoted blocks)."""
    if m is None or p <= end:
        return None
    tag = m.group()
    if stack:
        if p - bottom <= _HORIZON:
            return _READ_ON
        # (Past the look, a closer that closes a tag of a block begun by a tag in
        # another format's spelling: Qwen's `</parameter>` after a long argument, in a
        # Qwen call quoted in a MiniMax value; MiniCPM5's `</function>` in a Qwen value.
        # An opener there ends the reading.)
        return _READ_ON if stack[-1] == tag and _spelled_otherwise(d, nest, buf, bottom) else None
    if p == stop and tag in nest.own:
        return p if _closes_after(nest, buf, m.end(), paired > end) else None
    need = nest.closer_of[tag]
    if need is None or need == _own_close(d, nest):
        return None
    if any(buf.startswith(s, p) for s in d.fmt.starts if s) and not _other_spelling(d, buf, m.end()):
        return None
    return _READ_ON


def _spelled_otherwise(d: Any, nest: Any, buf: str, p: int) -> bool:
    """Whether the declared opener at p begins a block in another format's spelling: a
    tag the grammar has no token for (`<function=rm>` in a MiniMax value), or one whose
    block goes on in another spelling (_other_spelling: MiniCPM5's `<function name="rm">`
    then `<param name=…>` in a Qwen or Seed-OSS value)."""
    if _no_token(d, buf, p):
        return True
    m = nest.tags.match(buf, p)
    return m is not None and _other_spelling(d, buf, m.end())


# How far after a start marker the tag that tells its spelling is looked for (within
# the text a stream has settled past a place it reads at: _SELF_CLOSING_READ + 16).
_SPELLING_READ = 160


def _other_spelling(d: Any, buf: str, x: int) -> bool:
    """Whether the call a start marker of the format opens (its tag ending at x) is
    written in another format's spelling: the next tag, on the opener's line within
    _SPELLING_READ, is one the grammar has no token for (`<function name="rm"><param
    name="path">`, MiniCPM5's call, in a Qwen value: Qwen starts a call with `<function
    name=` too, then `<parameter`). Such a block is quoted, not a call of the format."""
    q = buf.find("<", x, x + _SPELLING_READ)
    return q >= 0 and "\n" not in buf[x:q] and _no_token(d, buf, q)


def _tag_at(nest: Any, buf: str, p: int) -> tuple | None:
    """The tag at p as _loose pairs it: (the declared tag or None, whether it opens, the
    closer it needs or is, where it ends); None where no tag starts."""
    m = nest.tags.match(buf, p)
    if m is not None:
        tag = m.group()
        need = nest.closer_of[tag]
        return tag, need is not None, need or tag, m.end()
    g = _SPECIAL_PAIR.match(buf, p)
    if g is not None:
        # (A special token of a begin/end pair, `<｜tool_calls_begin｜>` … `<｜tool_calls_end｜>`
        # of a Step-3 or DeepSeek block quoted in a value: paired by its name.)
        closer = "<" + g.group(1) + g.group(2) + g.group(3) + "end" + g.group(1) + ">"
        return None, g.group(4) == "begin", closer, g.end()
    g = _TAG.match(buf, p)
    if g is None:
        return None
    return None, not g.group(1), "</" + g.group(2).replace(" ", "") + ">", g.end()


def _own_token(nest: Any, buf: str, p: int) -> bool:
    """Whether a special token at p begins a tag the header declares but is not one,
    nor another marker (`<|close|>` written in a Kimi K3 value, not `<|close|>argument<|sep|>`
    nor `<|close|>think<|sep|>`): the format's own markup is all such tokens, so,
    though it is no element (_TAG), the value's text reads on past it to the value's
    own close, as before 6ea4b55 (where the value ended there, the call was lost)."""
    m = _TOKEN.match(buf, p)
    if m is None or m.group("marker"):
        return False
    return any(tag.startswith(m.group("token")) for tag in nest.closer_of)


def _declared_close(nest: Any, buf: str, p: int) -> bool:
    """Whether the tag at p is a close tag the header declares."""
    m = nest.tags.match(buf, p)
    return m is not None and nest.closer_of[m.group()] is None


def _opened(nest: Any, buf: str, lo: int, hi: int) -> tuple:
    """The tags written in buf[lo:hi] (a value's text) left open there, as _loose pairs
    them: the closers they need, innermost last."""
    stack: list = []
    for _, opens, key, _ in _tags_in(nest, buf, lo, hi):
        if opens:
            if len(stack) < _DEPTH:
                stack.append(key)
        elif key in stack:
            _close(stack, key)
    return tuple(stack)


def _tags_in(nest: Any, buf: str, lo: int, hi: int) -> Iterator[tuple]:
    """The tags written whole in buf[lo:hi], as _loose pairs them (_tag_at): (where, whether
    it opens, the closer it needs or is, where it ends); a self-closing opener is none."""
    p = buf.find("<", lo, hi)
    while p >= 0:
        found = _tag_at(nest, buf, p)
        if found is not None and found[3] <= hi:
            _, opens, key, after = found
            if not opens or _SELF_CLOSING.match(buf, after, min(hi, after + _SELF_CLOSING_READ)) is None:
                yield p, opens, key, after
        p = buf.find("<", p + 1, hi)


def _part_left_open(nest: Any, stack: list, key: str) -> bool:
    """Whether the declared closer `key`, closing a tag on `stack`, would leave open a
    value's opener of the format written where structure goes (not _Quoted) inside it:
    Step-3's `<｜tool_call_end｜>` after `<steptml:parameter name="c">use `, a call whose
    part's close was left out. That is the format's next call (a value's closes left
    out before it, QA10 P4), and this closer its end, not text the value quotes: read
    as text, the value swallowed that call, silently."""
    i = len(stack) - 1 - stack[::-1].index(key)
    return any(type(k) is not _Quoted and k in nest.own for k in stack[i + 1 :])


def _close(stack: list, key: str) -> None:
    """Close the innermost tag on `stack` that `key` closes, and those opened inside it."""
    del stack[len(stack) - 1 - stack[::-1].index(key) :]


# What an opener written about, not written as structure, follows (docs/formats.md,
# "Markers inside values": after a space, a quote or a bracket).
_ABOUT = " \t\"'`(["


class _Quoted(str):
    """The closer an opener needs, on _loose's stack, where the value's pattern read that
    opener as text after a space, a quote or a bracket (`then <parameter name="path">`):
    a closer of the format's own read as text may close it (the quoted tag written
    whole), where it may not close an opener written where structure goes (the next
    call's part, its closes left out; GLM's `<arg_value>` glued to `</arg_key>`)."""

    __slots__ = ()


def _written_about(d: Any, buf: str, lo: int, p: int) -> bool:
    """Whether the opener at p, which the value's pattern read as text, is written about
    rather than where structure goes: after a space, a quote or a bracket, or a tag the
    grammar has no token for (`<parameter=path>` in a MiniMax value: Qwen's spelling).
    GLM's `<arg_value>` glued to `</arg_key>` is neither: the grammar's own tag."""
    return p > lo and buf[p - 1] in _ABOUT or _no_token(d, buf, p)


def _no_token(d: Any, buf: str, p: int) -> bool:
    """Whether the grammar has no token for the tag at p (other than a raw value's): a
    tag in another format's spelling (`<function=rm>` in a MiniMax value)."""
    return not any(
        buf.startswith(u.literal, p) if u.literal is not None
        else u.name not in d.c.nest.terminals and u.name not in ("JSON", "PYVALUE")
        and (m := u.pattern.match(buf, p)) is not None and m.end() - p > 1
        for u in d.c.terminals.values() if u.literal is None or len(u.literal) > 1
    )  # fmt: skip


def _closes_quoted(stack: list, key: str) -> bool:
    """Whether the innermost tag on `stack` that `key` closes was read as text (_Quoted)."""
    return type(stack[len(stack) - 1 - stack[::-1].index(key)]) is _Quoted


def _text_tags(d: Any, nest: Any, buf: str, lo: int, hi: int, stack: list, bottom: int, paired: int, end: int, closed: bool) -> tuple:
    """_loose's reading over buf[lo:hi], text that the value's pattern read on through
    (no stop in it): its tags, paired as _opened pairs them, on `stack` (changed in
    place). Returns where the last quoted block began (bottom), where the stack last
    emptied (paired), and whether the format's next call came right after the closers
    from a declared close the reading began at (`closed`: _ends_at_call)."""
    for p, opens, key, after in _tags_in(nest, buf, lo, hi):
        if opens and _ends_at_call(d, buf, end, p, closed):
            return bottom, paired, True
        if opens:
            if paired <= end and _starts_call(d, buf, p):
                pass  # (the format's next call, the value's closes left out: no quoted block)
            elif len(stack) < _DEPTH:
                if not stack:
                    bottom = p
                stack.append(_Quoted(key) if _written_about(d, buf, lo, p) else key)
        elif key in stack and (key not in nest.own and key not in nest.holders or _closes_quoted(stack, key)):
            # (A closer of the format's own that the pattern read as text,
            # `print("</parameter>")` or `close with </function> here`, pairs with no
            # opener the value stopped at: else it closed the next call's part or call,
            # and that part's own close read as this value's close, the next call
            # swallowed. It closes an opener read as text too: `then <parameter
            # name="path">/</parameter> then`, a tag quoted whole.)
            _close(stack, key)
            if not stack:
                paired = after
    return bottom, paired, False


def _ends_at_call(d: Any, buf: str, end: int, p: int, closed: bool) -> bool:
    """Whether the opener at p, in a reading that began at a declared close at `end`
    (`closed`), starts the format's next call right after a run of closers from there
    (`</parameter>\n</function>\n</tool_call>\n<tool_call>`): those were the value's
    own closes, though they paired with openers the value mentions (`The model writes
    <tool_call>, then <function=NAME> and <parameter=KEY>`), and this is its next call
    (malformed: its parameter tag left out or misspelt), not text of the value. The
    value ends at that close, as before 6ea4b55 (a reading on took the next call's
    close for the value's, the next call swallowed)."""
    return closed and _starts_call(d, buf, p) and _closers_to(d.c.nest, buf, end, p)


def _closers_to(nest: Any, buf: str, x: int, p: int) -> bool:
    """Whether buf[x:p] is a run of close tags (at most _RUN, blanks between)."""
    for _ in range(_RUN + 1):
        x = _RUN_BLANKS.match(buf, x, p).end()
        if x >= p:
            return True
        found = _tag_at(nest, buf, x)
        if found is None or found[1] or found[3] > p:
            return False
        x = found[3]
    return False


def _quoted_to_end(d: Any, buf: str, end: int, paired: int) -> int | None:
    """At the end of the reply, a reading from the tag at `end` whose tags all paired up
    by `paired`: where the value ends. With text after them, the value quoted them and
    the token limit cut it (`Not this:\n<tool_call>…</tool_call>\nIt would clear every`):
    it runs to the end, cut short (len(buf)). But where that reading began at a call of
    the value's own format glued to the value's last word (`celsius<tool_call>`: no
    quote is written so), and the text is prose on the lines after them that ends as a
    turn does, a sentence's end (`…</tool_call>\nDone, both are sent.`), the reply was
    not cut there: the value's closes were left out, the calls are the model's, the text
    its prose (None: the value ends at `end`). A call on a line of its own is the quote
    (`Docs: a call looks like this:\n<tool_call>…</tool_call>\nThat is the whole
    format.`, cut by the token limit at a sentence's end): run as a call it would do what
    the value only showed (QA12 N2), and the value, cut short, lets `truncated="error"`
    refuse it. With no text after them, as before: calls whose closes were left out."""
    text = _TEXT.search(buf, paired)
    if text is None:
        return None
    if (
        end > 0 and _GLUED.match(buf, end - 1) is not None
        and _starts_call(d, buf, end) and "\n" in buf[paired : text.start()]
        and _TURN_END.search(buf, max(text.start(), len(buf) - _TURN_END_READ)) is not None
    ):  # fmt: skip
        return None
    return len(buf)


def _starts_call(d: Any, buf: str, p: int) -> bool:
    """Whether the tag at p opens a call of the value's own format (its start marker) where
    a model that left the value's closes out writes it: first on its line or glued to the
    text before it (docs/formats.md, "Markers inside values")."""
    if not any(buf.startswith(s, p) for s in d.fmt.starts if s):
        return False
    return p == 0 or buf[p - 1] not in " \t" or _first_on_line(buf, 0, p)


def _call_open(d: Any, quoted: tuple) -> bool:
    """Whether `quoted` (the openers a value's text left open) holds a call of the value's
    own format opened there: a closer its start markers' tags need."""
    if not quoted:
        return False
    closers = _START_CLOSERS.get(id(d.c))
    if closers is None or closers[0] is not d.c:
        nest = d.c.nest
        found = (nest.tags.match(s) for s in d.fmt.starts if s)
        closers = _START_CLOSERS[id(d.c)] = (d.c, frozenset(nest.closer_of[m.group()] for m in found if m is not None) - {None})
    return any(c in closers[1] for c in quoted)


# Per compiled format (kept with it, so an id is never another's): its start markers'
# closers (see _call_open).
_START_CLOSERS: dict = {}


def _foreign_opener(d: Any, buf: str, end: int) -> bool:
    """Whether the tag at `end` is an opener the header does not declare and that the
    grammar reads as a tag of its own (another spelling of the shared invoke grammar's:
    `<invoke name=…>` in a MiniCPM5 or DSML value), where the value stopped."""
    found = _tag_at(d.c.nest, buf, end)
    if found is None or found[0] is not None or not found[1]:
        return False
    raw = d.c.nest.terminals
    return any(
        u.literal is None and u.name not in raw and u.name not in ("JSON", "PYVALUE")
        and (m := u.pattern.match(buf, end)) is not None and m.end() - end > 1
        for u in d.c.terminals.values()
    )  # fmt: skip


def _past_look(d: Any, nest: Any, buf: str, end: int, p: int, stack: list, paired: int, bottom: int, before: list) -> Any:
    """_loose's reading at a stop p past its look (_HORIZON after the tag the value stopped
    at): _READ_ON while it is inside a quoted block (begun at `bottom`: any tag within the
    look of its start, past that a tag the header does not declare), or at the opener of
    one more quoted block, a tag the header does not
    declare that starts no call of the format (ten examples of another format's call,
    one a line); else the value's own close there, where the structure
    goes on after it (the reading in which the structure closes properly), ends the
    value (its position); anything else ends it at the tag, as before (None). So the
    reading goes on through whole quoted blocks however many, each block looked through
    once, and a block that never closes stops it at the format's next tag; the format's
    own calls and parts end it (each reading costs at most the quoted blocks after its value and two
    looks: no reading runs on over the rest of the reply)."""
    found = _tag_at(nest, buf, p)
    if found is None or p <= end:
        return _READ_ON if p > end and _own_token(nest, buf, p) else None
    tag, opens, _, after = found
    if stack:
        if tag is not None and tag in nest.own and found[2] not in stack and _closes_on(nest, buf, after):
            return p  # (openers of the value's text never closed, as within the look)
        # (Inside a quoted block: any tag within the look of its start; past that, only
        # another format's tags, a quoted call whose own argument is long, and in a block
        # that another format's tag opened, the format's own closers that close a tag of
        # it (Qwen's `</parameter>` after a long argument, in a Seed-OSS block quoted in a
        # Qwen value): the format's own opener there ends the reading, so no reading runs
        # on over the format's calls.)
        if p - bottom <= _HORIZON or tag is None:
            return _READ_ON
        return _READ_ON if not opens and found[2] in stack and stack[0] not in nest.closer_of else None
    if tag is not None and tag in nest.own:
        if paired > end and _foreign_opener(d, buf, end):
            # (Another format's call quoted whole, `<invoke name="x">…</invoke>` in a
            # MiniCPM5 value, then text: its own close where the value next stops.)
            return p
        return p if _closes_after(nest, buf, after, paired > end) else None
    if not opens and tag is None and found[2] in before:
        return _READ_ON  # (it closes a tag of the value's text before its first stop)
    if not opens or tag is not None or any(buf.startswith(s, p) for s in d.fmt.starts if s):
        return None  # (the format's own tag, or a call of it: no quoted block)
    return _READ_ON


def _match_on(pattern: Any, buf: str, x: int, resume: tuple | None) -> Any:
    """The value's pattern matched from x, as from `resume` when a stream's wait kept one
    for x (_resume_at)."""
    if resume is not None and resume[0] == x:
        return (resume[2] or pattern).match(buf, resume[1])
    return pattern.match(buf, x)


def _resume_at(t: Any, buf: str, x: int, stop: int) -> tuple | None:
    """Where a stream's next reading of t's pattern from x may go on from, as the
    driver's long tokens do (growth._loop_wait): (x, that place, the pattern to match
    there), or None. Without it each delta matched the value from x again, the square of
    a long value whose openers never settle (`<param ` 2,000 times in a Step-3 value:
    QA11 D9). `stop`: where the match from x stopped (the end of the text so far, or a
    stop not yet settled): the place is one the match passed through, before it. (Taken
    up to the end of the text, a place past an unsettled stop made the next reading go
    on from there, past a close the value's pattern stops at: fuzz seed 7 #7209.)"""
    wait = _loop_wait(t, buf, x, stop) if t.loop is not None else None
    if wait is None or wait.resume is None:
        return None
    return (x, *wait.resume)


def _loose(d: Any, t, buf: str, pos: int, end: int, final: bool) -> Any:
    """Where the reading above fails at the tag at `end` (another format's marker, which
    the header does not declare, or an opener whose closer never comes: `<tool_call> is
    the tag.`): whether the value's own close tag comes later, within _HORIZON, and
    closes there; then the tag and what follows it are the value's text. Only the places
    where the value's pattern stops are looked at, their tags paired by name (a closer
    that pairs with an opener written in the value is the value's text; nesting counted),
    and the own close must pair with none: where an opener of the next part stands
    between (`1\\n<parameter=b>\\n2\\n</parameter>`, a close tag left out), the value's own
    close never comes. A closer of what holds the value, where the value's pattern stops
    at it, ends the reading: the value ends at `end`, as before. The return is as
    through_nest's."""
    nest = d.c.nest
    n = len(buf)
    horizon = end + _HORIZON
    memo = d.nest_loose.get(t.name)
    if memo is not None and memo[0] == (pos, end) and memo[1] is None:
        return None  # (told already: the value's text, read once, does not open the closer)
    if memo is None or memo[0] != (pos, end):
        # The tag the value stopped at: an opener, or the value ends there as before;
        # or a closer that closes an opener written in the value's text: one the header
        # does not declare (Hermes's `</tool_call>` in a Seed-OSS value), or a declared
        # one that through_nest read so before it met another format's tag (a quoted
        # Seed-OSS call's `</parameter>` in a MiniMax value, then a Step-3 invoke;
        # `<root><tool_call id="7">log</tool_call></root>`; a Qwen call quoted in a
        # MiniCPM5 value, its `</parameter>` after a long argument): read on, those
        # openers counted first (as declared ones are: _open_in_value). Where it is an
        # opener, the tags the value's text left open before it (a quoted Step-3 block's
        # `<｜tool_call_begin｜>`) are kept apart: their closers, where no tag of the
        # format closes, are text past the look too.
        first = _tag_at(nest, buf, end)
        if first is None and not final and _token_cut(buf, end):
            return WAIT, None  # (a special token, or a marker it begins, the text cut)
        if first is None and not _own_token(nest, buf, end):
            return None
        opened: tuple = ()
        before: tuple = ()
        if first is not None and not first[1]:
            opened = _opened(nest, buf, pos, end)
            if first[2] not in opened:
                d.nest_loose[t.name] = ((pos, end), None)
                return None
        else:
            before = _opened(nest, buf, pos, end)
        memo = d.nest_loose[t.name] = ((pos, end), end, opened, end, end, before, None)
    _, x, stack, paired, bottom, before, resume = memo
    # (Stopped at a declared close that closes an opener of the value's text: _ends_at_call.)
    closed_text = _declared_close(nest, buf, end)
    stack = list(stack)
    before = list(before)
    limit = n if final else None
    pattern = t.pattern
    while True:
        if x == end:
            p = end  # (the first stop is the tag the value stopped at)
        else:
            s = _match_on(pattern, buf, x, resume)
            p = x if s is None else s.end()
            if p >= n and not final:
                # (The pattern read on to the end of the text so far: no stop to read
                # yet, wherever the settled text ends; not asked, each delta asked it.)
                resume = _resume_at(t, buf, x, n)
                d.nest_loose[t.name] = ((pos, end), x, tuple(stack), paired, bottom, tuple(before), resume)
                return WAIT, None
        if limit is None:
            limit = _settled(d, t, buf, final, x)
        if x != end:
            if p < limit or final:
                # The tags the value's pattern read as text up to that stop (a quoted
                # call's `<tool_call>` after the first, its `</tool_call>` before the
                # next): paired as those before the first stop are (_opened).
                bottom, paired, call = _text_tags(d, nest, buf, x, p, stack, bottom, paired, end, closed_text)
                if call:
                    return None
        if p >= horizon and (final or p < limit):
            decided = _past_look(d, nest, buf, end, p, stack, paired, bottom, before)
            if decided is not _READ_ON:
                return decided
        if p >= limit:
            if final:
                # The end of the reply inside the reading: as for declared tags above
                # (a value showing markup when the reply was cut runs to the end, cut
                # short; one that the next part's or the next call's tags follow ends
                # at the tag).
                if _in_open_fence(buf, pos, end):
                    return n
                if not stack:
                    return _quoted_to_end(d, buf, end, paired)
                return n if not _taken_after(d, t, buf, end) else None
            resume = _resume_at(t, buf, x, p) if x > end else None
            d.nest_loose[t.name] = ((pos, end), x, tuple(stack), paired, bottom, tuple(before), resume)
            return WAIT, _unsettled(d, t, limit) if limit < n else None
        found = _tag_at(nest, buf, p)
        if found is None:
            if _own_token(nest, buf, p):
                x = p + 1  # (the format's own special token written in the value: text)
                continue
            return None  # (no tag: cannot tell)
        tag, opens, key, after = found
        if opens and _ends_at_call(d, buf, end, p, closed_text):
            return None  # (the value's next call: it ends at its own close)
        if opens:
            if _SELF_CLOSING.match(buf, after, after + _SELF_CLOSING_READ) is None:
                if len(stack) >= _DEPTH:
                    return None
                if not stack:
                    bottom = p  # (a quoted block begins)
                stack.append(key)
        elif key in stack:
            if tag is not None and _part_left_open(nest, stack, key):
                return None  # (the format's next call, a part's close left out: not text)
            # It closes an opener of the value's text (the openers written after that
            # one, never closed, are text too).
            _close(stack, key)
            if not stack:
                paired = after
        elif tag is not None and tag in nest.own and p > end:
            return p  # the value's own close, where it closes
        elif tag is None and key in before:
            _close(before, key)  # (it closes an opener of the value's text before the stop)
        elif tag is None and p > end:
            # A closer in another format's spelling (`</invoke>` in a MiniCPM5 or DSML
            # value, after a quoted `<parameter name="k">v</parameter>`), which the
            # shared grammar would take as closing what holds the value: the value's
            # text, like the opener before it, when the value's own close comes on
            # (read as closing, the quoted parameter is an argument the model did not
            # pass to this call).
            pass
        elif not stack and not opens and _quoted_then_text(buf, end, paired, p) and (_line_end(buf, after) or _goes_on(nest, buf, after, True)):
            return p  # (a closer of what holds the value after a block quoted whole, then text)
        elif p > end and _first_on_line(buf, end, p) and not _goes_on(nest, buf, after, True):
            # A closer of what holds the value that no tag follows (a quoted call's
            # `</function>`, then `"""`): the structure does not go on after it, so it is
            # the value's text when the value's own close comes on (as in through_nest).
            pass
        else:
            return None  # a closer of what holds the value: it ends there, as before
        x = p + 1


cut_tag = _cut_tag  # (the driver asks it where a value's pattern matched nothing: see Driver._lex)
