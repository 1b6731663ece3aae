"""Mention or broken call: what a region that a grammar read, or failed to read,
means (the policy of _scan/region.py's RegionReader).

 - mention: a bare tag in prose (`use <tool_call> to…`) is no call and no error;
 - note_failure / settle_failure: of the candidates that failed, which one's
   failure is told, and whether it was a call at all (its end marker follows).
"""

from __future__ import annotations

import ast as _ast
from typing import Any

from .._build.builder import _extent, _rule
from .._grammar import vocabulary
from .._grammar.words import lazy
import regex

from .._lalr import close as _close
from .._lalr.driver import DONE, FAIL, WAIT, Driver
from .._lalr.extent import string_open_at_end
from .._lalr.table import ends_something
from .._recover import repair as _repair
from .items import Failure, _piece


def mention(r: Any, drv: Driver, final: bool):
    """Whether a region the grammar read (r: the RegionReader) is only a mention of its tag in prose
    (True; False: a call; WAIT: the text after it decides). A region that holds
    a name and nothing more of a call (no arguments, JSON, parameter tags,
    brackets: only the rest of its tags) is a mention when
     - the name stands apart from its tag by a space (`write <tool_call> and
       </tool_call> around…`): a model writes a name flush against its tag;
     - or the model never closed it and prose follows (`use <function=get_weather>
       blocks`, `not call <tool_call> now.`).
    The same unclosed name with the next call right after it, or at the end of
    the reply, is a call whose close tag was left out (or cut off: a call with no
    arguments, `<tool_call>get_time`, is as long as a mention)."""
    if "closed_tag" in drv.repairs and only_prose(drv.tree):
        # A section of calls that holds only the reply's text, its close never written
        # (`use the <|tool_calls_section_begin|> token`): its opener was mentioned. (A
        # block that is prose, Cohere's response, takes its close as optional.)
        return True
    bare = bare_name(drv.tree)
    if bare is None:
        return False
    lo, hi, unclosed = bare
    sc = r.sc
    buf = sc.buf
    rest = buf[hi : drv.end]
    for e in drv.fmt.ends:
        rest = rest.replace(e, "")
    if rest.strip(_TAG_REST):
        return False
    if buf[lo - 1 : lo] in (" ", "\t"):
        return True
    if not unclosed and "closed_tag" not in drv.repairs:
        return False
    p, n = drv.end, len(buf)
    while p < n and buf[p].isspace():
        p += 1
    if p >= n:
        return False if final else WAIT
    hit = sc.at_marker(buf, p)
    if hit is None:
        return True if final else WAIT
    return not hit


def note_failure(r: Any, drv: Driver, reason: str) -> None:
    """Note a candidate's failure on the RegionReader r (Scanner._note_failure)."""
    # A marker the model never closed, with nothing readable after it, is a
    # mention of the tag ("use <tool_call> to…"), not a broken call. (A quiet
    # format's failure is not told, but a call's that a stray quote broke: that
    # was a call, `[get_weather(city="Par"is", unit="C")]`.)
    # An argument nested too deeply (drv.deep) is a call's failure, told like a stray
    # quote's, even where the end of the reply closed its tags.
    # So is a quiet format's payload read whole after its marker that opens as a list of
    # call objects (`functools[{"name": …`): markup only calls are, not prose about the
    # module.
    listed = (
        drv.fmt.quiet and r.marker_len > 0 and drv.status == DONE
        and _CALL_LIST.match(r.sc.buf, r.region_start + r.marker_len) is not None
    )  # fmt: skip
    told = drv.stray or drv.deep or listed or _cut_after_marker(r, drv, reason) or _next_line_call(r, drv)
    cut = bool(reason) and _broken_at_marker(r, drv)
    whole = bool(reason) and (cut or _whole_before_marker(r, drv))
    if reason and not whole and _whole_before_marker(r, drv, closed=True):
        # A Python value of brackets, no string left open, that the call marker after it
        # closed and that cannot be read so (a set, `{1, 2<tool_call>`; a dict keyed by
        # numbers, `{1: 2<tool_call>`; words, `[1, x y<tool_call>`): cut by that marker,
        # told, as the reply's end tells it there (issue 19: prose, and no error).
        whole = True
        key = _KEY_BEFORE.search(r.sc.buf, max(r.region_start, drv.last_start - 256), drv.last_start)
        mark = r.sc.call_re.match(r.sc.buf, _marker_after(r, drv))
        if key is not None and mark is not None:
            reason = _value_cut(key.group(1), mark.group())
    if cut and drv.last_term == "EQUAL":
        # (Named: the value the marker cut, as a stream cut it there.)
        key = _KEY_BEFORE.search(r.sc.buf, max(r.region_start, drv.last_start - 256), drv.last_end)
        mark = r.sc.call_re.match(r.sc.buf, _cut_marker(r, drv))
        if key is not None and mark is not None:
            reason = _value_cut(key.group(1), mark.group())
    told = told or whole
    if reason and not drv.fmt.quiet and "closed_tag" in drv.repairs and not drv.deep and not whole:
        # A call its close was left out of is not told (a mention before the call that
        # cut it), unless its value was cut at a call marker (_close.cut) that begins no
        # call, and no other reading of the region is told (RegionReader.begins_call).
        if r.cut_broken is None and _cut_at_marker(r, drv):
            r.cut_broken = Failure(r.region_start, drv.cut_at, f"Couldn't read a tool call: {reason}.")
        return
    if (drv.fmt.quiet and not told) or not reason or ("closed_tag" in drv.repairs and not drv.deep and not whole):
        return
    if r.mentioned:
        # A later format that read its frame whole, further than the mention, and could
        # not build its call (`<function name="run">` then params: a parameter given
        # twice) tells why: its call is broken, not mentioned (as for an earlier one:
        # RegionReader.run).
        if drv.status != DONE or drv.end <= r.mention_end:
            return
        r.mentioned = False
    # Of the formats that share the marker, the one whose grammar read the most
    # tokens says why (a broken Qwen3-XML block is not told about JSON); the
    # first of them, on a tie.
    if r.first_failure is None or drv.taken > r.failure_taken:
        r.failure_taken = drv.taken
        end = max(drv.end, drv.pos, r.region_start + r.marker_len)
        r.first_failure = Failure(r.region_start, end, f"Couldn't read a tool call: {reason}.")
        # (Its markup, for failed_prose: kept beside it, not on it, as the storm memo
        # copies a Failure's fields whole, item by item.)
        r.failure_tokens = (r.first_failure, FailedTokens.of(drv, r.region_start, end))
        r.failure_stray = drv.stray or whole  # (an anchored region's failure shown: see RegionReader.run)
        # (Broken at the next call's marker: where that marker begins, for the region's
        # end marker the model may write after that call: Scanner.outer_watch.)
        # (A value cut where an element of it began, `a=[1, <tool_call>`, at that element's
        # marker, past drv.pos: _cut_marker, as `a=<tool_call>` at drv.pos.)
        r.failure_marker = (_cut_marker(r, drv) if cut else _marker_after(r, drv)) if whole else -1
        r.failure_python = bool(drv.fmt.stream_python)
        # A broken frame counts as a call attempt only if the format's end
        # marker follows (before the next call); _settle_failure decides.
        # (Not one broken at the next call's marker: that call shows it was one.)
        r.failed_frame = drv if drv.status == FAIL and not whole else None
        r.fail_scan = end


def _whole_before_marker(r: Any, drv: Driver, closed: bool = False) -> bool:
    """Whether drv read its region whole up to the close of its last call (the last
    token it read ends something: a call's `)`, a list's `]`, an object's `}`), and only
    the region's own end was left out, supplied where another call marker begins
    (blanks between): `[y(t=1, t="x")<tool_call> )]`, `<|tool_call_start|>[f(a=1, a=2)]<tool_call>{…}`.
    Then a call that cannot be built (a key given twice) is a call the model wrote,
    broken, and told: not a mention before the marker, as a frame left open there may
    be, and not prose with its start marker in the text. So too where only the call's
    `)` was left out after a whole Python value (`[f(a=1, a=2<tool_call>{…}`): not a
    value cut at the marker (`'x"]|<|tool_call_start|>`, whose call the marker's region
    reads: prose, see RegionReader.begins_call). `closed`: instead, whether the last value
    read is a Python value of brackets, none of its strings left open, closed there (its
    brackets supplied before that marker): a value the model began and the marker cut."""
    if drv.status != DONE or "closed_tag" not in drv.repairs or drv.deep:
        return False
    sc = r.sc
    buf = sc.buf
    if sc.call_re is None or not drv.taken:
        return False
    term = drv.last_term
    if term is None:
        return False
    if closed:
        if term != "PYVALUE" or not _bracketed(buf[drv.last_start : drv.last_end]):
            return False
    elif not ends_something(drv.c.terminals.get(term), buf[drv.last_start : drv.last_end], drv.fmt.ends) and not (
        term == "PYVALUE"
        and (
            _whole_literal(buf[drv.last_start : drv.last_end], True)
            or not drv.fmt.quiet and _ends_before_marker(buf[drv.last_start : drv.last_end])
        )
    ) and not (term == "COMMA" and "PYVALUE" in drv.c.terminals):
        # (A Python call's `,` follows a whole argument, its value's brackets closed by
        # the scan that ended it there: `[f(a=1, a=2, <tool_call>{…}`, QA27b S1.)
        return False
    if buf[drv.last_end : drv.end].strip():
        return False
    if sc.call_re.search(buf, r.region_start + r.marker_len, drv.end) is not None:
        # (A call marker inside what it read, a string's quote closed far off by a later
        # one: `[f(a='x)]<tool_call>{…}</tool_call>][f(a='+)<|tool_call_start|>`. Told
        # whole, that call of another format would be lost in its text; as a mention,
        # the scanner reads it.)
        return False
    at = drv.end
    n = len(buf)
    while at < n and buf[at].isspace():
        at += 1
    m = sc.call_re.match(buf, at)
    return m is not None and len(m.group()) >= 3


def marker_pending(r: Any, drv: Driver) -> bool:
    """Whether a stream's text so far ends inside what may be a call marker after what
    drv read whole (blanks between: `[f(a=1, a=2)]\n[TOOL_CAL`), the close of its
    region left out: whether that marker comes tells whether a call that cannot be
    built is told (_whole_before_marker), so the region waits for it, as parse() sees
    the whole marker (issue 19). At most the longest marker's characters are held.
    So too where a Python call's arguments broke (_break_pending)."""
    if drv.status == FAIL:
        return _break_pending(r, drv)
    if drv.status != DONE or "closed_tag" not in drv.repairs or drv.deep:
        return False
    sc = r.sc
    if sc.call_re is None:
        return False
    buf = sc.buf
    at = drv.end
    n = len(buf)
    while at < n and buf[at].isspace():
        at += 1
    if at >= n or n - at > sc.max_prefix:
        return False
    # (A whole marker that may yet grow into a longer one is waited on too, `` ``` `` of
    # `` ```tool_code ``: note_failure names the marker that cut the value, and parse()
    # names the longer one; the stream named `` ``` ``, fuzz seed 7 #108072031.)
    return buf[at:] in sc.prefixes


def _break_pending(r: Any, drv: Driver) -> bool:
    """Whether a stream's text so far ends inside what may be a call marker where drv's
    reading of a Python call's arguments broke (_broken_at_marker's place: `her(city=
    ]<]minimax[>[<tool_call`, the `>` to come): whether a whole marker begins there, and
    which (a whole one that may yet grow into a longer one, `<cofl:tool_call` of
    `<cofl:tool_calls>`), tells whether the call is told cut by it and the marker named
    (note_failure), so the region waits for it, as parse() sees the whole marker. The
    failure was noted at once, untold, and a stream gave no error where parse() told the
    value cut (fuzz seed 7 #99116701). At most the longest marker's characters are held."""
    if drv.deep or drv.last_term not in _PY_ARG_OPEN or "PYVALUE" not in drv.c.terminals:
        return False
    sc = r.sc
    if sc.call_re is None:
        return False
    buf = sc.buf
    n = len(buf)
    if buf[drv.last_end : drv.pos].strip():
        return False
    if n - drv.pos <= sc.max_prefix and buf[drv.pos :] in sc.prefixes:
        return True
    # (Or where an element of the value began, as _cut_marker looks: `a={"j" "k"```tool_cod`,
    # the `e` to come. The stream named `` ``` `` where parse() named `` ```tool_code ``,
    # fuzz seed 7 #108072031.)
    at = getattr(drv, "cut_at", -1)
    return (
        drv.pos < at and n - at <= sc.max_prefix and buf[at:] in sc.prefixes
        and _close.element_cut(drv, buf, drv.pos, at)
    )  # fmt: skip


def _marker_after(r: Any, drv: Driver) -> int:
    """Where the call marker begins that a region told broken before it (note_failure's
    `whole`) stops at: the first after what drv read, blanks before it; -1 where none."""
    buf = r.sc.buf
    at = max(drv.end, drv.pos)
    n = len(buf)
    while at < n and buf[at].isspace():
        at += 1
    m = r.sc.call_re.match(buf, at) if r.sc.call_re is not None else None
    return at if m is not None and len(m.group()) >= 3 else -1


def _broken_at_marker(r: Any, drv: Driver) -> bool:
    """Whether drv's reading of a Python call's arguments broke where another call's
    marker begins (blanks before it), none inside what it read: `[f(a=1, b=<tool_call>
    {…}`, a bare value that cannot begin with a marker (Driver: the value ends there,
    empty). The model wrote that call, and the next one cut it: told, as a call read
    whole before the marker (_whole_before_marker), not prose with its start marker in
    the text (QA27b S2)."""
    if drv.status != FAIL or drv.deep or drv.last_term not in _PY_ARG_OPEN or "PYVALUE" not in drv.c.terminals:
        return False
    return _cut_marker(r, drv) >= 0


def _cut_marker(r: Any, drv: Driver) -> int:
    """Where the call marker begins at which _broken_at_marker's value was cut: where the
    value began (`b=<tool_call>`), or where an element of it began (`b=[1, <tool_call>`:
    _close.element_cut, the driver's cut_at); -1 where none."""
    sc = r.sc
    buf = sc.buf
    if sc.call_re is None or buf[drv.last_end : drv.pos].strip():
        return -1
    at = drv.pos
    m = sc.call_re.match(buf, at)
    if m is None:
        at = getattr(drv, "cut_at", -1)  # (an Earley parse cuts nothing)
        if at <= drv.pos or not _close.element_cut(drv, buf, drv.pos, at):
            return -1
        m = sc.call_re.match(buf, at)
    if m is None or len(m.group()) < 3:
        return -1
    for inner in sc.call_re.finditer(buf, r.region_start + r.marker_len, drv.pos):
        # (None inside what it read; a bare list's `[`, a quiet format's marker with
        # tools, is that region's own list: `<function_calls>\n[f(a=<tool_call>{…}`.)
        if len(inner.group()) >= 3:
            return -1
    return at


def _bracketed(text: str) -> bool:
    """Whether a Python value's text opens with a bracket and leaves none of its strings
    open (_whole_before_marker's `closed`)."""
    text = text.strip()
    if not text or text[0] not in "[{(" or len(text) > 4096:
        return False
    return not string_open_at_end(text)


def _ends_before_marker(text: str) -> bool:
    """Whether `text`, a Python call's argument value read up to a call marker, was written
    whole before it: a bare name (`f(a="", b<tool_call>`: a positional word, or a keyword
    whose `=` never came), or a value that ends with the list's `]`, no string left open
    (`[f(a="x"], g(b=1)]<tool_call>`: the list closed before the call's `)`). No value the
    model began runs into the marker (`'x"]|<|tool_call_start|>`, `"x"]|`: cut there, a
    mention, see RegionReader.begins_call); the call is broken before it, and told, as
    after a whole literal. (Asked of a loud format's region only, opened by its own
    marker: a quiet format's bare list left open before another format's marker may be
    prose, `[f(a=None] ok <function=g>`.)"""
    text = text.strip()
    if text.isidentifier():
        return True
    if not text.endswith("]"):
        return False
    return not string_open_at_end(text)  # (that `]` outside every string)


def _whole_literal(text: str, listed: bool = False) -> bool:
    """Whether `text`, a Python call's argument value, is a whole Python literal (a number,
    a string closed by its own quote, a list whose brackets close): the model wrote it
    whole, and only the call's `)` (and what holds the call) was left out before the
    marker that follows; not a value cut there (`'x"]|`). `listed`: or such a literal
    then the list's `]` (the value's scan ran over it, the call's `)` left out before
    it: `[f(a=1, a=2]<tool_call>{…}`, QA27b S1)."""
    text = text.strip()
    if not text or len(text) > 4096:
        return False
    try:
        _ast.literal_eval(text)
    except Exception:  # noqa: BLE001 - whatever Python's reader says, the answer is no
        if listed and text.endswith("]"):
            return _whole_literal(text[:-1])
        return False
    return True


def _cut_at_marker(r: Any, drv: Driver) -> bool:
    """Whether the region drv read ends where a broken value of its call was cut, at a
    call marker of markup (blanks before it at most), `[f(a=1, b='"]|<tool_call>`, with
    no call marker between its own and that one: where there is one (Kimi K2's call
    marker after its section's), the scanner reads its region next, which tells the
    broken call (its text prose up to that marker, as now)."""
    at = getattr(drv, "cut_at", -1)  # (an Earley parse cuts nothing)
    if at < drv.end:
        return False
    sc = r.sc
    buf = sc.buf
    if buf[drv.end : at].strip() or sc.call_re is None:
        return False
    m = sc.call_re.match(buf, at)
    if m is None or len(m.group()) < 3:
        return False
    inner = sc.call_re.search(buf, r.region_start + r.marker_len, at)
    return inner is None


def _next_line_call(r: Any, drv: Driver) -> bool:
    """Whether a quiet format's region that a line_start literal opened (Llama 3's `{`,
    with tools), on the line right after a region of its calls, read its object as a
    call's (the grammar took it) and failed: the model's next call, broken, told as a
    call after `;` is (`{"name": "get_time", "parameters": {"tz": Europe}}`), not
    dropped as prose. A line of other JSON (`{"city": …}`) the grammar does not take."""
    sc = r.sc
    if not (drv.fmt.line_starts and r.marker_len and drv.taken and sc.line_call_end >= 0):
        return False
    at = sc.line_call_end - sc.base
    # (The breaks the grammar's look-behind after a call admits; a stream keeps them.)
    return 0 <= at <= r.region_start and sc.buf[at : r.region_start] in ("\n", "\r\n", "\n\n")


def _cut_after_marker(r: Any, drv: Driver, reason: str) -> bool:
    """Whether a quiet format's region, opened by a marker of markup (Functionary
    v3.2's `>>>`; not a fence, which may end a reply, nor a one-character literal), read
    a token after it and failed only because the reply ended (`>>>get_weather\n`): a
    call the end of the reply cut, told as a loud format's is (cut_inside decides, at
    the end of the reply), not prose: markup is never text."""
    if not (drv.fmt.quiet and r.marker_len >= 3 and drv.taken >= 2 and reason.startswith(_ENDED)):
        return False
    marker = r.sc.buf[r.region_start : r.region_start + r.marker_len]
    return not marker[0].isalnum() and not marker.startswith("```")


def cut_opener(r: Any, start: int, final: bool) -> bool:
    """Whether the reply ends, from `start` on, with a call's opener and nothing more
    (`Let me check.[TOOL_CALLS]`, `…</think>\n\n<tool_call>`, a section's begin and its
    call's begin): the model began a call and the end of the reply cut it. That is no
    mention (prose would follow one) and no prose: markup is never text. Only markers
    of markup (not a word such as `functools`), of a format that is not quiet (a fence
    may end a reply)."""
    if not final:
        return False
    sc = r.sc
    loud, markers = _loud(r)
    if not loud:
        return False
    if not _openers_to_end(sc, start, markers):
        return _opener_then_head(sc, start, markers, loud)
    # More than one opener: only those the region's drivers all read on through, waiting
    # for more, and that failed only because the reply ended there (a section's begin,
    # then its call's). Not where one stopped or failed before the end (`<tool_call>
    # <tool_call>`, `[TOOL_CALLS][TOOL_CALLS]`): a stream decides those there, before
    # the end of the reply, as a mention or a broken call.
    end = _reply_end(sc)
    if start + r.marker_len >= end:
        return True
    return all(d.pos >= end and d.status == FAIL and d.reason.startswith(_ENDED) for d in r.drivers)


def failed_prose(r: Any, out: list, start: int, end: int, failure: Any = None) -> None:
    """The text of a told failure, buf[start:end], out as prose, all but the markup of
    the call it was: the opener of a format that is not quiet that begins it (blanks
    before it at most), and an end marker of a format of that opener that ends it
    (blanks after it at most), each a Piece "opener" (a "markup" segment, no text:
    _pipeline._PIECE_SEGMENT).
    What was written between them stays prose, as any failure's text does, but markup
    is never prose (issue 19: `[TOOL_CALLS]{bad}`, `<tool_call>{bad json}</tool_call>`
    left their markers in the text). Only where the failure is told: a marker that is
    a mention (no error) is prose; and not in reasoning, which keeps them. The markers
    are cut_opener's (_loud): not a word's (`functools[`), nor a quiet format's.
    Between them, the markup the failure's grammar read there is no prose either
    (FailedTokens: Qwen3-Coder's `<parameter=a>`, harmony's header)."""
    sc = r.sc
    buf = sc.buf
    if sc.in_open_think:
        # (Reasoning keeps what the model wrote, markers and all, as a call written
        # inside a closed reasoning block does.)
        sc._prose(out, start, end)
        return
    loud, markers = _loud(r)
    i = start
    while i < end and buf[i].isspace():
        i += 1
    m = next((m for m in markers if buf.startswith(m, i)), None) if markers else None
    if m is None or i + len(m) > end or not _whole_token(m):
        if _begins_at_break(r, failure, start):
            # A failure that begins where its grammar broke (the calls before it kept, a
            # closer written once too often right after them): no opener of its own, but
            # its format's markers there are markup all the same (FailedTokens.rest_spans:
            # `</cofl:tool_call></cofl:tool_calls>` right at the break).
            _frame_prose(r, out, failure, start, end)
            return
        sc._prose(out, start, end)
        return
    sc._prose(out, start, i)
    out.append(_piece("opener", i, i + len(m), ""))
    i += len(m)
    j = end
    while j > i and buf[j - 1].isspace():
        j -= 1
    ends = sorted({e for f in loud if m in f.starts for e in f.ends if _whole_token(e)}, key=len, reverse=True)
    e = next((e for e in ends if buf.endswith(e, i, j)), None)
    if e is None:
        _frame_prose(r, out, failure, i, end)
        return
    _frame_prose(r, out, failure, i, j - len(e), True)
    out.append(_piece("opener", j - len(e), j, ""))
    sc._prose(out, j, end)


def _begins_at_break(r: Any, failure: Any, start: int) -> bool:
    """Whether the told failure's text, from `start` on, lies wholly past the point
    where its grammar broke (its own tokens known, none read in it): only the format's
    markers past the break can be markup there (FailedTokens.rest_spans)."""
    told = r.failure_tokens
    if told is None or failure is None or told[0] is not failure or told[1] is None or told[1].rest is None:
        return False
    return told[1].start + told[1].broke() <= start


def _frame_prose(r: Any, out: list, failure: Any, start: int, end: int, closed: bool = False) -> None:
    """buf[start:end], the inside of a told failure between its opener and its end
    marker, out as prose but the markup its grammar read there (the FailedTokens
    note_failure kept beside it, r.failure_tokens: each span a Piece "opener"); prose
    whole where none is known (a failure no driver told: salvage's)."""
    sc = r.sc
    told = r.failure_tokens
    lexed = told[1] if told is not None and failure is not None and told[0] is failure else None
    marks = lexed.spans(sc.buf) if lexed is not None else ()
    pos = start
    if marks:
        base = failure.start  # (the spans are from it)
        for k in range(0, len(marks), 2):
            # (A span that joined the opener's token, or the end marker's, is cut at it.)
            s, e = max(marks[k] + base, pos), min(marks[k + 1] + base, end)
            if s >= e:
                continue
            sc._prose(out, pos, s)
            out.append(_piece("opener", s, e, ""))
            pos = e
    if lexed is not None and lexed.rest is not None:
        # Past the point where the grammar broke no token was read, but the format's own
        # markers there are markup all the same (`</cofl:value> </cofl:tool_call>` after
        # one close too many): FailedTokens.rest_spans.
        joined = bool(marks) and pos > start  # (a markup token ends at pos: blanks after it join the next)
        for s, e in lexed.rest_spans(sc.buf, max(pos, lexed.broke() + failure.start), end, joined and pos, closed):
            sc._prose(out, pos, s)
            out.append(_piece("opener", s, e, ""))
            pos = e
    sc._prose(out, pos, end)


class FailedTokens:
    """The markup drv's grammar read in buf[start:end], the text of a call it could not
    read (note_failure): each token it read there (Driver.lexed: the reading that failed,
    no second one) of a terminal that is no payload's (payload_terminals: a value's, the
    arguments', prose's), as (start, end) pairs from `start`, flat. Markup is never prose
    (issue 19): Qwen3-Coder's `<function=f>`, `<parameter=a>`, `</parameter>`; harmony's
    header `commentary to=functions.f <|constrain|>json<|message|>`; DeepSeek's and Kimi's
    inner call tokens. Two such tokens with only blanks between them that no token read
    (the grammar's ignored spaces: `<cofl:value type="list">`, the newline between
    `</parameter>` and `<parameter=b>`) are one: the blanks are the markup's, not text
    (and a storm of tags is one segment, not one per tag). Where the grammar broke, the
    words it read last as a name or a key (no literal after them) are what no marker of
    its confirmed: `[TOOL_CALLS]book flight[ARGS]`, `<tool_call>Sure.`,
    `to=functions.get weather<|channel|>`: prose, as the rest after them. A stream's
    driver takes the tokens a whole reply's does (it waits on one the end of the text may
    change), so both tell the same markup. A format whose header declares no `payload:`
    has none (its failure's text is prose whole: Python call lists, whose frame is
    prose's own characters). Told when the failure's text is put out (spans), not when
    it is noted: most failures noted never are (another candidate's replaces one, or its
    text is an error's)."""

    __slots__ = ("lexed", "count", "payload", "trim", "start", "end", "found", "rest", "brk", "pairs")

    def __init__(
        self, lexed: list, count: int, payload: frozenset, trim: Any, start: int, end: int, rest: Any = None, pairs: Any = None,
    ) -> None:
        self.lexed, self.count, self.payload, self.trim = lexed, count, payload, trim
        self.start, self.end = start, end
        self.found: tuple | None = None
        self.rest = rest  # (rest_markers of the format: the markers looked for past the break)
        self.pairs = pairs  # (the format's nest pairs, opener -> its closer: rest_spans)
        self.brk: int | None = None  # (broke()'s, once asked)

    @classmethod
    def of(cls, drv: Any, start: int, end: int) -> FailedTokens | None:
        """The tokens drv read of the failure buf[start:end], as they stand now (drv's
        list only grows); None where no markup can be told."""
        lexed = getattr(drv, "lexed", None)
        if not lexed:
            return None
        payload = payload_terminals(drv.fmt)
        if payload is None:
            return None
        rest = rest_markers(drv.fmt) if drv.status != DONE else None
        pairs = drv.c.nest.closer_of if rest is not None and drv.c.nest is not None else None
        return cls(lexed, len(lexed), payload, drv.c.terminals if drv.status != DONE else None, start, end, rest, pairs)

    def spans(self, buf: str) -> tuple:
        """(start, end) pairs from self.start, flat."""
        if self.found is not None:
            return self.found
        lexed, payload, start, end = self.lexed, self.payload, self.start, self.end
        last = self.count  # (the tokens read up to the last markup kept: 3 items each)
        terminals = self.trim
        if terminals is not None:
            while last:
                term = lexed[last - 3]
                if term not in payload:
                    t = terminals.get(term)
                    if t is not None and t.literal:
                        break
                last -= 3
        out: list = []
        at = -1  # (where the last markup token ended, if the token before was one: blanks after it join the next)
        for term, s, e in zip(lexed[0:last:3], lexed[1:last:3], lexed[2:last:3]):
            if term in payload or s < start or e > end or s == e:
                at = -1
                continue
            if at == s or (at >= 0 and buf[at:s].isspace()):
                out[-1] = e - start
            else:
                out.append(s - start)
                out.append(e - start)
            at = e
        self.found = tuple(out)
        return self.found

    def broke(self) -> int:
        """Where the grammar broke, from self.start: where the last token it read inside
        the failure ends (the tokens are in the order of the text: the last that ends by
        `end`); 0 where it read none there."""
        if self.brk is None:
            lexed, k = self.lexed, self.count - 1
            while k > 0 and lexed[k] > self.end:
                k -= 3
            self.brk = max(lexed[k] - self.start, 0) if k > 0 else 0
        return self.brk

    def rest_spans(self, buf: str, start: int, end: int, joined: Any, closed: bool = False) -> list:
        """The markup in buf[start:end], past the break (start: where the last token the
        grammar read ends, or after): the format's own markers (rest_markers: whole
        tokens, and tags whose rest up to their `>` is markup, `<parameter=c>`, each such
        tag one marker) in runs on a line (blanks between them), each run kept where it begins right at the break
        (blanks before it at most; those blanks too where a markup token ends there:
        `joined`, its place) or fills its line (`</cofl:value>` then `</cofl:tool_call>`
        on lines of their own). A marker among words (`use </parameter> inline`) stays
        text: no token was read there, and it may be a value's text; but for the close
        the format pairs with a tag kept as markup where it is the next marker after that
        tag and ends its line (`<cofl:value name="path">a.txt</cofl:value>` then a line
        break: the value's text runs to it, as the grammar reads a value, and a close
        there ends it in every format's reading, so the tag's markup closes there; `Use
        </parameter> inline` is Qwen's value's text). Kept runs with only
        blanks between them are one (start, end), as are the last and the region's end
        where only blanks come between and the region's end marker follows (`closed`).
        One search of the markers; each character is looked at a bounded number of times."""
        found: list = []
        lead = _SPACES.match(buf, start, end).end()  # (a run that begins here begins at the break)
        rs = re_ = -1
        tagged = "tag" in self.rest.groupindex
        pairs = self.pairs
        want = None  # (the close of the tag that ends the run kept last)
        closes = None  # (the close the format pairs with the run's last marker, a tag)
        forced = False  # (whether the run is such a close: kept wherever it is)
        for m in self.rest.finditer(buf, start, end):
            s, e = m.span()
            if s < re_:
                continue  # (inside a tag kept whole before)
            tag = tagged and m.start("tag") >= 0
            if tag and not _whole_token(buf[s:e]):
                # (A tag's beginning: the tag is its markup up to its `>`, on its line,
                # rest_markers; with none there it is no whole token.)
                q = _TAG_TAIL.match(buf, e, end)
                if q is not None:
                    e = q.end()
            if not _whole_token(buf[s:e]):
                continue  # (a pattern's match that is no whole token)
            if rs >= 0 and _LINE_BLANKS.match(buf, re_, s).end() == s:
                re_ = e
                closes = _pair(pairs, m.group("tag")) if tag and pairs is not None else None
                continue
            if rs >= 0:
                want = closes if _keep_run(buf, start, end, rs, re_, lead, joined, found, forced) else None
            forced = want is not None and buf.startswith(want, s) and _line_ends(buf, s + len(want), end)
            closes = _pair(pairs, m.group("tag")) if tag and pairs is not None else None
            rs, re_ = s, e
        if rs >= 0:
            _keep_run(buf, start, end, rs, re_, lead, joined, found, forced)
        if closed and found and _SPACES.match(buf, found[-1][1], end).end() == end:
            found[-1] = (found[-1][0], end)
        return found


def _line_ends(buf: str, p: int, end: int) -> bool:
    """Whether only blanks come from p to its line's end (or to `end`)."""
    q = _LINE_BLANKS.match(buf, p, end).end()
    return q == end or buf[q] in "\r\n"


def _pair(pairs: dict, tag: str) -> str | None:
    """The close the format's nest pairs with a tag begun by `tag` (`<parameter=`, `<invoke `,
    `<cofl:value`: the pair's opener is the tag's name), or None."""
    return pairs.get(tag) or pairs.get(tag.rstrip("= \t"))


def _keep_run(buf: str, start: int, end: int, s: int, e: int, lead: int, joined: Any, found: list, forced: bool = False) -> bool:
    """Keep the run of markers buf[s:e] on a line (rest_spans) where it begins at the
    break (`lead`: blanks before it at most) or fills its line: blanks alone before it
    on its line and after it to its line's end (or the region's end), or is `forced`
    (the close of a tag kept); joined to the run kept before it where only blanks lie
    between. Whether it was kept."""
    if forced:
        pass
    elif s == lead:
        if s > start and joined == start:
            s = start  # (the blanks after the markup token that ends at the break)
    else:
        p = s
        while p > start and buf[p - 1] in " \t":
            p -= 1
        if p <= start or buf[p - 1] not in "\r\n":
            return False
        q = _LINE_BLANKS.match(buf, e, end).end()
        if q < end and buf[q] not in "\r\n":
            return False
    if found and _SPACES.match(buf, found[-1][1], s).end() == s:
        found[-1] = (found[-1][0], e)
    else:
        found.append((s, e))
    return True


_SPACES = lazy(regex.compile, r"\s*+")
_LINE_BLANKS = lazy(regex.compile, r"[ \t]*+")
_TAG_TAIL = lazy(regex.compile, r"[^<>\r\n]*+>")  # (a tag's rest on its line, up to its `>`: rest_markers)


def rest_markers(fmt: Any) -> Any:
    """The markers of fmt's grammar that rest_spans looks for past a told failure's break:
    its literal terminals that are no payload's and are a whole token of markup
    (_whole_token: `</cofl:value>`, `<|tool_call_end|>`, `[ARGS]`), and its patterns of
    such tokens (`</invoke>`, DeepSeek's `<｜tool▁sep｜>`: those that begin with `<`, `[` or
    `]`, each match kept only where it is a whole token), longest literal first; and,
    in the group `tag`, its patterns that begin a tag whose rest is markup
    (_tag_openers: `<parameter=`, `<cofl:value`, `<invoke`), each match kept with that
    rest up to the tag's `>` (`<parameter=c>`: a marker as `</parameter>` is, not a
    payload's). One search. None where there are none. Worked out once per format."""
    derived = fmt.compiled.derived
    if "rest_markers" in derived:
        return derived["rest_markers"]
    found = None
    payload = payload_terminals(fmt)
    if payload is not None:
        lits, pats, tags = set(), [], []
        openers = _tag_openers(fmt, payload)
        for name, t in fmt.compiled.terminals.items():
            if name in payload:
                continue
            if t.literal:
                if _whole_token(t.literal):
                    lits.add(t.literal)
            elif t.source.startswith(("<", "\\<", "\\[", "\\]", "(?:<", "(?:\\<")) and "\\Z" not in t.source and "$" not in t.source:
                # (Not one that looks at the reply's end: a stream's buffer ends elsewhere.)
                (tags if name in openers and t.source.startswith(("<", "\\<", "(?:<", "(?:\\<")) else pats).append(t.source)
        parts = [regex.escape(m) for m in sorted(lits, key=len, reverse=True)] + [f"(?:{p})" for p in pats]
        if tags:
            # (A tag's beginning, its rest the tag's own markup up to its `>`: one group,
            # which rest_spans extends over that rest, _TAG_TAIL.)
            parts.append("(?P<tag>" + "|".join(f"(?:{p})" for p in tags) + ")")
        if parts:
            found = regex.compile("|".join(parts))
    derived["rest_markers"] = found
    return found


def _tag_openers(fmt: Any, payload: frozenset) -> frozenset:
    """The pattern terminals of fmt's grammar that begin a tag whose rest, up to its
    `>`, is markup (Qwen3-Coder's `<parameter=` KEY `>`, cofl's `<cofl:value` and its
    attributes `>` or `/>`, MiniMax's `<invoke` ` name="f"` `>`): wherever the grammar
    has the terminal, what follows it up to a literal that ends with `>` reaches no
    payload terminal (no value's text is in the tag). Such a tag past a told failure's
    break is a marker as a whole-token terminal is (rest_spans). A terminal the grammar
    follows otherwise anywhere (`</invoke>`, whole by itself) is none."""
    terms = fmt.compiled.terminals
    rules = _rules(fmt)
    reach: dict = {}

    def reaches(sym: Any) -> set:
        if sym.name not in reach:
            reach[sym.name] = _terminals_under(rules, (sym,))
        return reach[sym.name]

    ok: dict = {}
    for expansions in rules.values():
        for expansion in expansions:
            for k, sym in enumerate(expansion):
                t = terms.get(sym.name) if sym.is_term else None
                if t is None or t.literal or sym.name in payload:
                    continue
                closed = False
                for x in expansion[k + 1 :]:
                    lit = terms[x.name].literal if x.is_term and x.name in terms else None
                    if lit and lit.endswith(">"):
                        closed = True
                        break
                    if (x.name in payload) if x.is_term else (reaches(x) & payload):
                        break
                ok[sym.name] = ok.get(sym.name, True) and closed
    return frozenset(name for name, yes in ok.items() if yes)


def payload_terminals(fmt: Any) -> frozenset | None:
    """The terminals of fmt's grammar that are payload: reached from a rule its header
    names in `payload:` (by its name or its alias, `after_calls: AFTER_TEXT -> prose`),
    through the rules under it. None where the header names none. Worked out once per
    format."""
    derived = fmt.compiled.derived
    if "payload_terminals" in derived:
        return derived["payload_terminals"]
    found: frozenset | None = None
    named = frozenset(fmt.payload)
    if named:
        # (Each symbol under such a rule, the rules under it followed down.)
        under = [
            sym
            for rule in fmt.compiled.callbacks
            if vocabulary.rule_name(rule.origin.name) in named or vocabulary.rule_name(rule.tree_name) in named
            for sym in rule.expansion
        ]
        found = frozenset(_terminals_under(_rules(fmt), under))
    derived["payload_terminals"] = found
    return found


def _rules(fmt: Any) -> dict:
    """fmt's grammar's rules by the name they expand: name -> their expansions."""
    rules: dict = {}
    for rule in fmt.compiled.callbacks:
        rules.setdefault(rule.origin.name, []).append(rule.expansion)
    return rules


def _terminals_under(rules: dict, symbols: Any) -> set:
    """The terminals among `symbols` and under the rules among them, those rules'
    expansions followed down (rules: _rules')."""
    todo = list(symbols)
    seen: set = set()
    terms: set = set()
    while todo:
        sym = todo.pop()
        if sym.name in seen:
            continue
        seen.add(sym.name)
        if sym.is_term:
            terms.add(sym.name)
            continue
        for expansion in rules.get(sym.name, ()):
            todo.extend(expansion)
    return terms


def _whole_token(marker: str) -> bool:
    """Whether a marker is a whole token of markup (`[TOOL_CALLS]`, `<tool_call>`,
    `<|python_tag|>`): not a word (`functools`), a bracket alone (`[`, `{`), nor a
    tag's beginning whose rest is the call's (`<function name=`, `<invoke name=`),
    which failed_prose would cut in two."""
    return len(marker) > 1 and marker[-1] in ">]" and not marker[0].isalnum()


def cut_may_come(r: Any, start: int) -> bool:
    """Before the end of the reply: whether the text so far, from `start` on, is what
    cut_opener would call a cut opener were the reply to end here (the opener and
    blanks, or the opener and one token's beginning, `<｜tool▁calls▁begin｜>\n{`).
    The region is not decided then: the end of the reply makes it an error, more text
    a mention or prose, and a stream that decided it on the text so far told prose
    where parse() tells the error. The wait is bounded: a space or tab after the
    opener, a second word, or a head longer than _HEAD ends it. Each character is
    looked at once (r.cut_look: where the look stopped, and the head's bounds)."""
    look = r.cut_look
    if look is False:
        return False
    buf = r.sc.buf
    if look is None:
        loud, markers = _loud(r)
        m = next((m for m in markers if buf.startswith(m, start)), None)
        if m is None or buf[start + len(m) : start + len(m) + 1] in (" ", "\t"):
            r.cut_look = False
            return False
        look = (start + len(m), -1, -1, markers, loud)
    i, lo, hi, markers, loud = look
    n = len(buf)
    while i < n:
        if buf[i].isspace():
            if lo >= 0 and hi < 0:
                hi = i
        elif lo < 0:
            lo = i
        elif hi >= 0 or i - lo >= _HEAD:
            r.cut_look = False  # (a second word, or a head too long: never cut_opener's)
            return False
        i += 1
    r.cut_look = (i, lo, hi, markers, loud)
    return lo < 0 or _is_head(buf[lo : hi if hi >= 0 else n], markers, loud)


def _loud(r: Any) -> tuple[list, tuple]:
    """The region's candidates that are not quiet, and their markers (_loud_markers):
    worked out once per list of candidates a reply's regions begin with (sc.loud), not at
    each region that asks (a storm of one marker asked it at each of its regions)."""
    given = r.given
    memo = r.sc.loud
    if memo is None:
        memo = r.sc.loud = {}
    kept = memo.get(id(given))
    if kept is None or kept[0] is not given:
        loud = [f for f in given if not f.quiet]
        kept = memo[id(given)] = (given, loud, _loud_markers(loud))
    return kept[1], kept[2]


def _loud_markers(loud: list) -> tuple:
    """The start markers of markup of the formats that are not quiet, longest first."""
    return tuple(sorted({m for f in loud for m in f.starts if m and not m[0].isalnum()}, key=len, reverse=True))


def _is_head(tail: str, markers: tuple, loud: list) -> bool:
    """Whether `tail` (no blanks in it) is one token's beginning after an opener (see
    _opener_then_head)."""
    if tail in ("[", "{", "(", "<"):
        return True
    return any(m.startswith(tail) for m in markers) or any(lit.startswith(tail) for f in loud for lit in _markup_literals(f))


def _opener_then_head(sc: Any, start: int, markers: tuple, loud: list) -> bool:
    """Whether the reply ends, from `start` on, with a call's opener and one token's
    beginning after it: an opening bracket (`<|tool_call_start|>[`, `<TOOLCALL>[`) or a
    part of a markup literal of the format's grammar or of a start marker
    (`<tool_call>\n<function`, `<minimax:tool_call>\n<invoke`, Kimi K2's section begin
    and `<`). The model began a
    call and the end cut it, as cut_opener's opener alone: no prose. Not where a space
    or a tab follows the opener (prose writes about the opener: `use <tool_call> [`),
    nor a word (`use <tool_call> to`), nor more than one token's text."""
    buf = sc.buf
    at = start
    m = next((m for m in markers if buf.startswith(m, at)), None)
    if m is None:
        return False
    at += len(m)
    if buf[at : at + 1] in (" ", "\t"):
        return False
    tail = buf[at : _reply_end(sc)].strip()
    if not tail or len(tail) > _HEAD or any(c.isspace() for c in tail):
        return False
    return _is_head(tail, markers, loud)


_HEAD = 24  # (the longest token's beginning looked at after an opener)


def _markup_literals(fmt: Any) -> tuple[str, ...]:
    """A format's literal terminals that are markup and open something: a character
    that is no letter or digit in them (`<function=`, `<|tool_call_begin|>`; not a word,
    nor a close: `<tool_call></tool_call>` is an empty call, not one cut). Worked out once."""
    derived = fmt.compiled.derived
    found = derived.get("markup_literals")
    if found is None:
        lits = {t.literal for t in fmt.compiled.terminals.values() if t.literal and not ends_something(t, t.literal, fmt.ends)}
        found = derived["markup_literals"] = tuple(sorted(m for m in lits if not m.isalnum() and not m.isspace()))
    return found


def _reply_end(sc: Any) -> int:
    """Where the reply's last character that is no blank ends: worked out once (only
    asked once the reply has ended), not for each region that asks."""
    if sc.reply_end < 0:
        sc.reply_end = len(sc.buf.rstrip())
    return sc.reply_end


def _openers_to_end(sc: Any, start: int, markers: tuple) -> bool:
    """Whether the reply from `start` on is one or more of `markers` (longest first at
    each place) and blanks, and nothing else. Each place is looked at once per reply
    and set of markers (sc.opener_runs): a run of openers to the end of the reply is
    a region each, and each asked this, which read the rest of it each time was the
    square of the run."""
    buf = sc.buf
    n = len(buf)
    memo = sc.opener_runs.setdefault(markers, {})
    seen = []
    i = start
    found = False
    while True:
        while i < n and buf[i].isspace():
            i += 1
        if i >= n:
            found = i > start and bool(seen)
            break
        known = memo.get(i)
        if known is not None:
            found = known
            break
        m = next((m for m in markers if buf.startswith(m, i)), None)
        if m is None:
            break
        seen.append(i)
        i += len(m)
    for place in seen:
        memo[place] = found
    return found


def cut_inside(r: Any, final: bool) -> bool:
    """Whether a broken frame that settle_failure took for a mention (no end marker
    after it) is a call the end of the reply cut before the grammar could close it:
    its driver read every token to the end of the reply and failed only there
    (`[TOOL_CALLS]get_weather`, whose `[ARGS]` never came; `<|tool_call>call:`, no
    name yet; Kimi K2's `functions.get_weather` before its `:0`). A mention has prose
    after it; this has nothing, and its markup is no prose (as cut_opener's). Not so
    where a space sets the opener apart from what follows (`I will not call
    [TOOL_CALLS] now`): a model writes a call flush against its opener, and prose
    writes about the opener (see mention)."""
    drv = r.failed_frame
    if not final or drv is None or r.first_failure is None or not drv.reason.startswith(_ENDED):
        return False
    buf = r.sc.buf
    if buf[r.region_start + r.marker_len : r.region_start + r.marker_len + 1] in (" ", "\t"):
        return False
    return drv.pos >= _reply_end(r.sc)


# A JSON list of call objects, as it opens: `[{"name":`.
_CALL_LIST = lazy(regex.compile, r"\s*+\[\s*+\{\s*+\"name\"\s*+:")

_ENDED = "the reply ended"  # (a driver's reason where the end of the reply failed it: close.py)
# (The tokens of a Python call after which an argument, or its value, comes: _broken_at_marker.)
_PY_ARG_OPEN = frozenset(("EQUAL", "COMMA", "LPAR"))
# A Python call's keyword and its `=`, at the end of what was read.
_KEY_BEFORE = lazy(regex.compile, r"((?:[A-Za-z_]|\\_)\w*+)\s*+=\s*+$")


def settle_failure(r: Any, final: bool):
    """For a broken frame: the failure, extended through the end marker that
    shows the model meant a call; None when it was only a mention; WAIT."""
    failure, drv = r.first_failure, r.failed_frame
    if failure is None or drv is None:
        return failure
    sc = r.sc
    buf = sc.buf
    held = _held_name(r, drv, final)
    if held is WAIT:
        return WAIT
    if held is not None:
        # A name with a space in it (`to=functions.get weather<|channel|>…`): the call
        # goes on after it as the grammar says, so the model meant a call, with a name
        # the format cannot hold. An error for the model, the call's text prose.
        end, name = held
        failure.end = max(failure.end, end)
        failure.message = f'Couldn\'t read a tool call: the name "{name}" cannot be written in this format; call the tool by its exact name.'
        return failure
    if not drv.fmt.ends and not _inner_markers(drv.fmt):
        # No marker of the format can come to tell (a Python list of calls with no
        # marker, `[f(a=1), g(b=)]`): whatever follows, the end of the reply would say
        # what is said now (no end marker, and _marked_end finds none), so a stream does
        # not hold the calls before it, and all the text after, to flush() (QA10 D2).
        return None
    hits = [(r.find(e, r.fail_scan), e) for e in drv.fmt.ends]
    hits = [(i, e) for i, e in hits if i >= 0]
    # (From where the last search stopped: a marker before that was found then.)
    start = max(failure.end, r.fail_scan)
    hint = r.call_hint
    if hint is not None and hint[0] == r.fail_scan:
        start = max(start, hint[1])
    maybe = len(buf)  # (where a call marker may still begin, the text going on)
    nxt = None
    if sc.call_re is not None:
        if final:
            nxt = sc.call_re.search(buf, start)
        else:
            # A match cut by the end of the text so far is partial: no marker begins
            # before it, and the next look begins there, not a marker's length back
            # (each delta searched that again: 30 µs a delta in a run of `[`).
            nxt = sc.call_re.search(buf, start, partial=True)
            if nxt is not None and nxt.partial:
                maybe = nxt.start()
                nxt = sc.call_re.search(buf, maybe)  # (a whole one from there on)
            if nxt is not None and len(buf) - nxt.start() <= sc.max_prefix and buf[nxt.start() :] in sc.prefixes:
                # (A whole marker whose text, to the end of the text so far, may yet grow
                # into a longer marker, `<cofl:tool_call` + `s` into `<cofl:tool_calls>`:
                # which marker it is is not known yet, and _flush_before_call names it. As
                # a partial one, waited on: the stream named `<cofl:tool_call` where parse()
                # named `<cofl:tool_calls>`, fuzz seed 7 #97045165.)
                maybe = nxt.start()
                nxt = None
                hits = [(i, e) for i, e in hits if i < maybe]
    if hits:
        i, e = min(hits)
        # (An end marker that also starts a region, Kimi K2's section end, is this
        # call's end first.)
        if nxt is None or i <= nxt.start():
            failure.end = i + len(e)
            return failure
    if nxt is not None and _flush_before_call(r, drv, failure, nxt.start()):
        return failure
    if nxt is not None or final:
        if not drv.fmt.ends:
            # No end marker can show that a call was meant; the format's other markers
            # can (Mistral's `[TOOL_CALLS]get weather[ARGS]{…}`: a name its pattern
            # rejects, then `[ARGS]`): a broken call, an error, not a mention in prose.
            end = _marked_end(r, drv.fmt, nxt.start() if nxt is not None else len(buf))
            if end is not None:
                failure.end = max(failure.end, end)
                return failure
        return None
    # Keep searching from here next time (an end marker may straddle deltas,
    # and may be longer than any start marker).
    longest = max((len(e) for e in drv.fmt.ends), default=1) - 1
    r.fail_scan = max(r.fail_scan, len(buf) - max(sc.max_prefix, longest))
    r.call_hint = (r.fail_scan, maybe)
    return WAIT


def _value_cut(key: str, mark: str) -> str:
    """The reason told for a Python call whose value of `key` a call marker cut (note_failure,
    _flush_before_call: one wording)."""
    return f'the value of "{key}" is cut off by the call marker {mark}'


def _flush_before_call(r: Any, drv: Driver, failure: Failure, at: int) -> bool:
    """Whether a loud format's region, flush against its own marker, that broke on a run
    of text with no blank in it right before the next call's marker at `at` (`<|tool_call_start|>
    b=<tool_call>{…}`: a bare value never begins with a call marker), is a call the model
    began there, cut by that call: told (the failure made to end at that marker, and
    worded so), not a mention with its marker in the text, as a Python call broken at that
    marker is (_broken_at_marker). Not after a blank (prose writes about the opener), nor
    where the broken text is long, holds a marker's first character (a reasoning close,
    `<|close|>think<|sep|>`, is markup of its own) or no token was read after the marker."""
    if drv.fmt.quiet or drv.deep or drv.taken < 2 or not r.marker_len:
        return False
    sc = r.sc
    buf = sc.buf
    lo = r.region_start + r.marker_len
    if buf[lo : lo + 1] in (" ", "\t") or not failure.end <= drv.pos < at or at - drv.pos > 64:
        return False
    gap = buf[drv.pos : at]
    if any(c.isspace() or c in sc.first_set for c in gap) or sc.call_re.search(buf, lo, at) is not None:
        return False  # (no blank, and no marker's first character: `<|close|>think<|sep|>` is markup)
    m = sc.call_re.match(buf, at)
    if m is None or len(m.group()) < 3:
        return False
    mark = m.group()
    key = _KEY_BEFORE.search(buf, max(lo, drv.last_start - 256), at) if gap.rstrip() == "=" else None
    if key is not None and key.start(1) == drv.last_start:
        failure.message = f"Couldn't read a tool call: {_value_cut(key.group(1), mark)}."
    else:
        failure.message = f"Couldn't read a tool call: unexpected {gap!r} right before the call marker {mark}."
    failure.end = at
    r.failure_marker = at
    return True


# Words after a name, on its line, apart by spaces or tabs: what a name with spaces in it
# leaves when its pattern took the first word only. (No markup, brackets or quotes.)
_MORE_WORDS = lazy(regex.compile, r"(?:[ \t]+[^\s<>\[\]{}()|\"'=,;:]{1,64}){1,8}")
# Whether the run of words goes on past that bound (then it is prose, not a name: the
# look stays bounded, as a stream makes it again on each delta).
_GOES_ON = lazy(regex.compile, r"[ \t]*([^\s<>\[\]{}()|\"'=,;:])?")


def _held_name(r: Any, drv: Driver, final: bool):
    """Where a broken frame ends, and its name, when it broke right after its name
    (the last token read is the whole of a `name` rule) on more words (`get weather`),
    and read with those words as blanks the frame goes on and closes: the model wrote a
    name the format's pattern cannot hold. None when not so; WAIT when a stream's text
    cannot tell yet."""
    if drv.last_term is None or drv.last_term not in _name_terminals(drv):
        return None
    buf = r.sc.buf
    lo = r.region_start + r.marker_len
    if buf[lo : lo + 1] in (" ", "\t"):
        return None  # (prose writes about the opener, a model writes a call flush against it: see cut_inside)
    m = _MORE_WORDS.match(buf, drv.last_end)
    if m is None:
        return None
    after = _GOES_ON.match(buf, m.end())
    if after.end() >= len(buf) and not final:
        return WAIT
    if after.group(1) is not None:
        return None  # (more than eight words, or a word of over 64 characters: prose)
    key = (drv, m.start(), m.end())
    held = r.held_read
    if held is not None and held[0] == key:
        # (A stream's reading of it: where it waited at the last delta, it reads on from
        # there, the masked text the same but longer; where it ended, that is settled (a
        # driver ends only where more text changes nothing), and run() says so at once.
        # A fresh driver read the whole region again at each delta: a call whose name ran
        # into `parameter name=` streamed at 70 µs a character, six times its budget:
        # fuzz seed 7 #94002338, issue 17.)
        fresh, seen = held[1], held[2]
        if not final and fresh.status == WAIT and fresh.hint and seen[0] <= len(buf):
            # (Nor is it handed a delta its wait absorbs: Driver.absorbs, asked of the text
            # since it last read, as the scanner asks it of each delta.)
            if fresh.absorbs(buf[seen[0] :], seen[0]):
                seen[0] = seen[1] = len(buf)
                return WAIT
    else:
        fresh = Driver(drv.fmt, r.region_start, None, drv.cutter, drv.lines)
        fresh.quotes = False
        seen = [0, -1]  # (the text's length when it last read; when it last answered WAIT)
        r.held_read = (key, fresh, seen)
    status = fresh.status
    if status == WAIT:
        masked = buf[: m.start()] + " " * (m.end() - m.start()) + buf[m.end() :]
        status = fresh.run(masked, final, r.sc.at_marker)
        seen[0] = len(buf)
    if status == WAIT:
        seen[1] = len(buf)  # (Scanner._settle waits on it: see held_wait)
        return WAIT
    if status != DONE or fresh.pos <= m.end() or "closed_tag" in fresh.repairs:
        return None
    return fresh.end, buf[drv.last_start : m.end()]


def held_wait(r: Any, n: int) -> Any:
    """The reading of _held_name that the region's broken frame waits on, where that is
    all a delta can change (Scanner._settle waits with its Driver.absorbs): its answer to
    the text so far (n characters) was WAIT, its driver waits with a hint, and nothing
    that the region's run asks before it can change (no salvage or spaced call pending, no
    cut opener looked for, no replay waiting). None otherwise."""
    held = r.held_read
    if held is None or held[0][0] is not r.failed_frame or held[2][1] != n:
        return None
    fresh = held[1]
    if fresh.status != WAIT or not fresh.hint:
        return None
    if r.salvaged is None or r.spaced is not None or r.cut_look is not False or r.cut_wait or r.salvage_wait is not None:
        return None
    return fresh


def _name_terminals(drv: Driver) -> frozenset:
    """The terminals that are the whole of a `name` rule of drv's grammar (once per format)."""
    derived = drv.fmt.compiled.derived
    found = derived.get("name_terminals")
    if found is None:
        found = derived["name_terminals"] = frozenset(
            rule.expansion[0].name
            for rule in drv.c.callbacks
            if vocabulary.rule_name(rule.tree_name) == "name" and len(rule.expansion) == 1
        )
    return found


def _inner_markers(fmt: Any) -> tuple[str, ...]:
    """A format's markers that are not its start markers: its grammar's literal
    terminals of three characters or more with a character that is no letter or
    digit in them (Mistral's `[ARGS]`, `[CALL_ID]`; not a `(` or a word). Worked out
    once per format."""
    derived = fmt.compiled.derived
    found = derived.get("inner_markers")
    if found is None:
        lits = {t.literal for t in fmt.compiled.terminals.values() if t.literal}
        found = derived["inner_markers"] = tuple(
            sorted(m for m in lits if len(m) >= 3 and not m.isalnum() and m not in fmt.starts)
        )
    return found


def _marked_end(r: Any, fmt: Any, stop: int) -> int | None:
    """Where a broken call of a format with no end marker ends, when one of its
    inner markers lies between its opener and `stop` (the next call, or the end of
    the reply): past the bracketed value that follows the marker (the arguments),
    or at `stop` (its trailing blanks left out) when none does or it runs on; None
    when no such marker is there, or a blank follows the opener (a mention)."""
    markers = _inner_markers(fmt)
    if not markers:
        return None
    buf = r.sc.buf
    lo = r.region_start + r.marker_len
    if buf[lo : lo + 1] in (" ", "\t"):
        return None  # (prose writes about the opener, a model writes a call flush against it: see cut_inside)
    hits = [i for i in (buf.find(m, lo, stop) for m in markers) if i >= 0]
    if not hits:
        return None
    at = min(hits)
    after = at + next(len(m) for m in markers if buf.startswith(m, at))
    # (The last marker of the call's run: `[CALL_ID]id[ARGS]{…}`.)
    while True:
        nxt = [i for i in (buf.find(m, after, stop) for m in markers) if i >= 0]
        if not nxt:
            break
        at = min(nxt)
        after = at + next(len(m) for m in markers if buf.startswith(m, at))
    pos = after
    while pos < stop and buf[pos] in " \t\r\n":
        pos += 1
    if pos < stop and buf[pos] in "{[":
        end = _repair.value_end(buf, pos)
        if end is not None and end <= stop:
            return end
    while stop > after and buf[stop - 1].isspace():
        stop -= 1
    return stop


# What may stand between a bare call's name and its region's end, besides the
# format's end markers: the rest of the open tag (`">`), whitespace.
_TAG_REST = " \t\r\n\"'>"


def only_prose(tree: Any) -> bool:
    """Whether a region's parse tree holds the reply's text as prose and no call."""
    if tree is None or not hasattr(tree, "iter_subtrees_topdown"):
        return False
    text = False
    for node in tree.iter_subtrees_topdown():  # (lazily: a call ends the walk at once)
        rule = _rule(node)
        if rule in vocabulary.CALL_KINDS or rule in vocabulary.NOT_BARE:
            return False
        if rule == "prose" and _extent(node) is not None:
            text = True
    return text


def bare_name(tree: Any) -> tuple[int, int, bool] | None:
    """Where the name of a region's one call is, and whether the grammar took a close
    tag as missing (an `unclosed` rule), when the region has one call, one name and
    no arguments (a parse tree's rules); None otherwise."""
    if tree is None or not hasattr(tree, "iter_subtrees_topdown"):
        return None
    calls = names = 0
    found = None
    unclosed = False
    for node in tree.iter_subtrees_topdown():  # (lazily: a second call ends the walk)
        rule = _rule(node)
        if rule in vocabulary.CALL_KINDS:
            calls += 1
            if calls > 1:
                return None
        elif rule == "name":
            names += 1
            if names > 1:
                return None
            found = node
        elif rule == "unclosed":
            unclosed = True
        elif rule in vocabulary.NOT_BARE:  # (it carries arguments or more calls)
            return None
    ext = _extent(found) if calls == 1 and names == 1 else None
    return None if ext is None else (*ext, unclosed)
