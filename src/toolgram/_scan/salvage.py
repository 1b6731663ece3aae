"""Salvage: no candidate read the region, but the calls one of them finished
before a broken or cut-off call are kept (the policy of _scan/region.py's
RegionReader: salvaged, salvage, salvage_one take the reader, r), closed where
salvage_points finds the driver's frame may be closed."""

from __future__ import annotations

import re
from typing import Any

import regex

from . import gemframe, pyframe
from .mention import FailedTokens, cut_opener, failed_prose, mention, settle_failure
from .._build.builder import LIST_CLOSED_EARLY, Draft
from .._lalr.close import CUT_ROOM, last_closes
from .._lalr.driver import _MARK_STACK, Driver
from .._lalr.extent import BracketIndex
from .._lalr.looks import of as looks_of
from .._lalr.table import _left_open, _reduces_call, closing_plan, ends_something, goes_on, takes
from .._lalr.tokens import DONE, FAIL, PAUSE, WAIT
from .items import Failure, Region, listed_closed as _listed_closed
from .._grammar.words import lazy

_NONBLANK = lazy(re.compile, r"\S")
_FAILED = "Couldn't read a tool call: "  # (what str.strip() keeps)
_OWN_LEXERS = pyframe.FORMATS | gemframe.FORMATS  # (formats whose tokens a frame may feed)
_POSITIONAL = "positional arguments for "  # (Builder's reason for a call with unnamed arguments)


def salvaged(r: Any, out: list, final: bool) -> bool | None:
    """Put out what salvage keeps, as RegionReader.run does (True; False: wait for the
    tail's failure to settle); None: nothing is kept."""
    sc = r.sc
    if r.salvaged is None:
        got = salvage(r, final)
        if got is WAIT:
            return False  # (asked again once the text has grown: RegionReader.salvage_wait)
        r.salvage_wait = None
        r.salvaged = got or _spaced_first(r, final)
    if not r.salvaged:
        return None
    if r.spaced is not None:
        # (Prose after the calls kept may be a call whose name has a space in it, before
        # the block's end marker: see spaced_call. Told by bounded text; until then, wait.)
        whole = spaced_call(r, final)
        if whole is WAIT:
            return False
        r.spaced = None
        if whole is not None:
            r.salvaged = (whole, None, False)
        elif r.salvaged[0] is None:
            r.salvaged = False  # (the block's first call: no call kept, the failure is told)
            return None
    region, tail, settle = r.salvaged
    if region is not None:  # (None: no call before a broken one; see salvage)
        sc._prose(out, sc.pos, region.start)
        if settle:
            # (A tail no end marker closes is still a broken call: the section held
            # calls. It runs to where the grammar stopped.)
            tail = settle_failure(r, final) or r.first_failure
            if tail is WAIT:
                return False
        out.append(region)
        sc.pos = region.end
        for fmt in r.candidates:
            if fmt.name == region.fmt:
                sc.after_call(region.end, fmt, region, start=region.start)  # (its closer may come again)
                break
        open_lists = r.marker_len and "closed_tag" in region.repairs and _lists_open(sc.buf, region.end)
    if tail is not None and _NONBLANK.search(sc.buf, max(sc.pos, tail.start), tail.end) is None:
        # What broke the frame begins after the blanks that end the calls kept (the next
        # call in another format's shape, `<function=get_time>{}</function>` after a
        # Qwen3-Coder call): it is read from there as any text is, a call or a failure of
        # its own, never an error for a call that is then read.
        tail = None
    if tail is not None and tail.end == len(sc.buf) and cut_opener(r, max(sc.pos, tail.start), final):
        # (The next call's opener, and the end of the reply: no prose; see cut_opener.)
        tail.start, tail.prose = max(sc.pos, tail.start), False
        sc._prose(out, sc.pos, tail.start)
        out.append(tail)
        sc.pos = tail.end
    elif tail is not None:  # (its text stays prose, as any failure's, but markup's: see salvage)
        if tail.prose:
            failed_prose(r, out, sc.pos, tail.end, tail)  # (its opener and end marker no prose)
        else:
            sc._prose(out, sc.pos, tail.start)
        out.append(tail)
        sc.pos = tail.end
    elif region is not None and open_lists and any(f.name == region.fmt and f.stream_python for f in r.candidates):
        # A marker's list of Python calls, its end marker left out, its line ended at the
        # list's `]`, and nothing told after it: the region is not closed, and a list on
        # the next line is its calls, as lists in a row are after a list that opened the
        # reply (Scanner.relist), not prose (`<|tool_call_start|>[g()]\n[h(b=2)`: `[h(b=2)`
        # was silent prose with no tools, and h a call with them; issue 19).
        sc.relist, sc.relist_tail, sc.relist_open, sc.relist_quote = True, "]", 0, ""
    sc._end_region()
    return True

def salvage(r: Any, final: bool, quiet: bool = False):
    """No candidate read the region, but one (the first that can, in order) may
    still be closed where its calls so far end (see salvage_points): the calls
    finished before a broken or cut-off one are kept. (Region, tail, settle):
    the region read up to there; the failure of what follows it, or None; settle:
    that failure is decided as any broken frame's (settle_failure). False: none.
    A quiet format's (or, `quiet`, an anchored region's) tail gives no failure, it
    stays prose, where no call is kept or prose follows the calls kept; after calls,
    what broke is a call (settle)."""
    buf = r.sc.buf
    unbroken, listed_drv = 0, None  # (the last value went on past the list's `]`, the end of that: see list_closed)
    broken: list = []  # (where a whole call read before the failure ends, and why it cannot be built)
    told: list = []  # (the same, of a quiet format's or an anchored region's: its text stays prose)
    held = None  # (a candidate whose region failed with a call held back: RegionReader.held)
    for drv in r.drivers:  # (the candidates in order: the first that keeps calls)
        buf = _read_text(r, drv, final)
        if drv.fmt.anchor == "whole":
            if drv.stray and drv.status == DONE and _cut_at_end(drv, buf, final) and _offered_call(r.sc.tools, buf, drv.start, drv.end):
                # Bare calls that are the whole reply, a stray quote in a value running it
                # on to the end (`f(a="x"y"); g(b=2)`), and an offered tool called there:
                # the model's calls, which that value broke. Told, as in a list (below),
                # its text prose; with no tools, or no offered name called, they stay
                # prose as anything bare the reply holds that cannot be read (issue 19:
                # it was silent prose, with f offered).
                # (Only where a value is what cannot be read: a call the end of the reply
                # cut, `get_weather(ci`, is no stray quote's, and stays prose.)
                # (The error ends with its first line where more text follows: the lines
                # after it are read as any text is, a list of calls on one read as at main,
                # `f(a="x"y")\n[f(a=1)]`, not hidden in the error.)
                why = r.sc._decode(drv)
                if isinstance(why, str) and r.value_broke(drv):
                    end = buf.find("\n", r.region_start)
                    if end < 0 or not buf[end:].strip():
                        end = len(buf)
                    return None, Failure(r.region_start, end, f"Couldn't read a tool call: {why}."), False
            continue  # (its region is the whole reply or nothing)
        if drv.fmt.parser == "earley":
            continue  # (its region is parsed whole, once: there are no points to replay to)
        if held is None and r.held is not None and r.held[0] is drv and drv.status == DONE and _cut_at_end(drv, buf, final):
            held = r.held
        closed = list_closed(r, drv, buf, final)
        if closed is not None:
            if type(closed) is not int:
                return closed, None, False
            if not unbroken:
                unbroken, listed_drv = closed, drv
        if drv.stray and drv.status == DONE and _cut_at_end(drv, buf, final):
            # A call its arguments broke (a stray quote, a key given twice), read whole up
            # to where the end of the reply cut it: it fails whatever the point it is
            # closed at (below), and every call before it in the region broke too (the
            # region decodes to no call: Builder.build), so no point keeps one. A replay
            # to each point, a fresh read to the last and two decodes more would only say
            # so again: five readings of a long call with a keyword repeated.
            why = r.sc._decode(drv)
            if not why or not isinstance(why, str):
                why = "a value holds a stray quote"
            return None, Failure(r.region_start, len(buf), f"Couldn't read a tool call: {why}."), False
        got = salvage_one(r, drv, final, told if quiet or drv.fmt.quiet else broken, buf)
        if got is WAIT:
            return WAIT  # (whether this candidate keeps calls is not told yet)
        if got:
            break
    else:
        if unbroken:
            # (No call before it is kept: the region up to the list's `]` is the error.)
            why = _listed_why(r, listed_drv)
            return None, Failure(r.region_start, unbroken, f"Couldn't read a tool call: {why}."), False
        if broken:
            # No call is kept, but the grammar read a whole call before the failure that
            # cannot be built (a bare `<invoke>` whose parameter has no name, then the
            # next invoke): an error, its text markup, not a call dropped as prose.
            end, why = broken[0]
            return None, Failure(r.region_start, end, f"Couldn't read a tool call: {why}.", False), False
        # (Not a call of positional arguments alone: `[len(x) for x in rows]` in prose is
        # Python, no call the model meant; a quiet format's such call is told only where
        # its tool is offered, as Builder says.)
        told = [t for t in told if not t[1].startswith(_POSITIONAL)]
        if not told and held is not None:
            # (Not so a call read whole that gives a whole positional value after a keyword
            # one, before the call the end of the reply cut, which breaks too, and which no
            # shorter reading keeps: every call of the region is broken, and it is told, its
            # text prose, as with its own end read, alone on its line (Unreadable.held;
            # issue 19: `[f(a="x", g(b=1), h() x]` written twice was silent prose). One
            # error for the region, as for `[f(a="x", 3)]` then `[f(a="y", 4)]`.)
            return None, Failure(r.region_start, len(buf), f"Couldn't read a tool call: {held[1]}."), False
        if told:
            # (A quiet format's, or an anchored region's, the same: a whole call that
            # cannot be built, then what broke the frame (`[y(t=1, t="x") )]`). Its text
            # stays prose, as any failure of such a region, but the model is told: it was
            # silent prose, the call dropped (issue 19).)
            end, why = told[0]
            return None, Failure(r.region_start, end, f"Couldn't read a tool call: {why}."), False
        return False
    region, drafts, end, opened, truncated = got
    begun = _value_begun(drv, buf, end) if opened and not (drv.stray or unbroken) else None
    if opened and (drv.stray or unbroken or begun):
        # What ran on to the end is a value with a stray quote (`city="Par"is")]`,
        # _repair.quoted_end): the call is broken, not cut short, and is no call
        # without that argument. It fails, named, and its text stays prose; the
        # calls before it are kept (with none, nor is the region: None).
        last = drafts[-1]
        if unbroken:
            why = _listed_why(r, drv)
        else:
            why = drv.reason if drv.status == FAIL else r.sc._decode(drv)
            if begun and not (why and isinstance(why, str) and f"{begun!r}" in why):
                why = f"cannot read the value of {begun!r}"
            if not why or not isinstance(why, str):
                why = "a value holds a stray quote"
        at = region.items.index(last)
        start = last.span[0] if at else region.start  # (the region's own markers too)
        del region.items[at:]
        region.end = start
        # (Past the list's `]` the text is read as any text is: see list_closed.)
        return (region if at else None), Failure(start, unbroken or len(buf), f"Couldn't read a tool call: {why}."), False
    if opened:
        # The reply ended inside its last call: it takes the rest of the reply, and
        # what was begun after the point (a parameter's name) is dropped; the
        # beginning of a close marker is only that call's closed_tag.
        last = drafts[-1]
        last.span = (last.span[0], len(buf))
        dropped = buf[end:].strip()  # (the last call takes the rest: this is the last region)
        if dropped and not any(t.literal and t.literal.startswith(dropped) for t in drv.c.terminals.values()):
            # (Something begun that the end cut: cut_value, whatever the point ended.)
            last.repairs = [r for r in last.repairs if r != "cut_value"]
            last.repairs += ["dropped_partial_argument", "cut_value"]
    if opened or _NONBLANK.search(buf, end) is None:
        # (Nothing but blanks follows: told by a search, not a copy of all the rest of
        # the text stripped, for each region salvaged.)
        return region, None, False
    if drv.prose_at >= end and not buf[end : drv.prose_at].strip():
        # Prose right after the last call, where the section's (or the call's)
        # close was left out: the region ends there, and the prose is prose, not a
        # broken call (nothing to report, and nothing to wait for) -- unless it is a
        # call whose name has a space in it, which the block's end marker then closes
        # (see spaced_call: salvaged asks it, on each look, until the text tells).
        if _spaced_at(buf, drv.prose_at, True) is not None and not (quiet or drv.fmt.quiet):
            r.spaced = (drv, drv.prose_at, 0)
        return region, None, False
    if (quiet or drv.fmt.quiet) and "closed_tag" not in region.repairs:
        # (A quiet format's failure after a list closed, `[f(a=1)]\n[1] Source`: prose.)
        return region, None, False
    # A quiet format's failure (or an anchored region's) is told too, where calls were
    # kept before it in the same frame, left open there, and it is no prose after them:
    # the model was writing the list of calls (`[f(a=1), g(b=)]`), and a call of it is
    # broken, not a mention of markup.
    why = drv.reason if drv.status == FAIL else r.sc._decode(drv)
    if not why or not isinstance(why, str):
        why = "the reply ended inside the call"
    message = f"Couldn't read a tool call: {why}."
    if truncated:
        return region, Failure(end, len(buf), message), False
    fail_end = max(drv.end, drv.pos, end)
    r.first_failure = Failure(end, fail_end, message)
    # (Its markup, as note_failure keeps a failure's: the tokens the same reading took
    # from the calls kept on, and the format's markers past its break, for failed_prose.)
    r.failure_tokens = (r.first_failure, FailedTokens.of(drv, end, fail_end))
    r.failed_frame = drv
    r.fail_scan = fail_end
    return region, None, True

def _read_text(r: Any, drv: Driver, final: bool) -> str:
    """The text drv read (RegionReader._read): in a whole text, without an end-of-turn
    token of its format that ends the reply (region._before_turn_end). The salvage
    looks at that text, so the token is the end of the reply for it as for the driver
    (`f(text='x"]'s all.<|im_end|>` is salvaged, and told, as the same reply without the
    token is: not silent prose where that one is an error)."""
    return r.text_of(drv, final)


def _spaced_first(r: Any, final: bool):
    """Where no call is kept, the block's first call may be one whose name has a space
    in it (`<function_calls>\nget time(timezone="Europe/Paris")\nf(a=1)\n…`): spaced_call
    tells, as after calls kept (r.spaced; the region None until it does). False: not so."""
    drv = r.drivers[0] if r.drivers and r.marker_len else None
    if drv is None or drv.fmt.quiet or drv.fmt.parser == "earley":
        return False
    at = r.region_start + r.marker_len
    if _spaced_at(r.sc.buf, at, not final) is None:
        return False
    r.spaced = (drv, at, 0)
    return None, None, False


# A call whose name has a space in it, first on its line: the name's first word, up to
# seven more apart by spaces or tabs (each at most 64 characters), then `(`.
_SPACED = lazy(regex.compile, r"[ \t]*+(?:\r?\n[ \t]*+)?([A-Za-z_][\w.\-]{0,63})((?:[ \t]++[A-Za-z_][\w.\-]{0,63}){1,7})[ \t]*+\(")

# What any reading of _SPACED from a place may look at: blanks, a line break, blanks, then
# name characters and blanks (and the one character after them, which ends it).
_SPACED_REACH = lazy(regex.compile, r"[ \t]*+(?:\r?\n)?[ \t\w.\-]*+")


def _spaced_at(buf: str, at: int, partial: bool) -> Any:
    """_SPACED.match(buf, at, partial=partial), its text cut where no reading of it can
    go. The same answer: the `regex` engine looks for the `(` the pattern needs from
    `at` to the end of the text before it matches, at each region a storm fails in
    (25 µs at 32 KB, the square of the reply), and with partial=True costs more still."""
    stop = _SPACED_REACH.match(buf, at).end() + 1
    if stop >= len(buf):
        return _SPACED.match(buf, at, partial=partial)
    return _SPACED.match(buf, at, stop, partial=partial)


#: How far from the start of such a call the block's end marker must come (after the
#: call, blanks and separators between) for the call to be taken for one: a stream
#: holds at most this much text back to tell.
SPACED_HORIZON = 320


def spaced_call(r: Any, final: bool):
    """Where prose follows the calls kept by salvage (r.spaced: the driver and where
    the prose starts), the case of a call whose name has a space in it (OLMo 3's
    `get time(timezone="Europe/Paris")` after a call, before `</function_calls>`): read
    with the names' later words as blanks (this line's and those of the spaced lines
    after it), it is one call that the block's end marker closes (calls between too),
    within SPACED_HORIZON characters. Then the model meant a call, with a name the
    format cannot hold: the block is read again whole, each such call an error for the
    model naming it (the Region returned), the calls before it kept as read. None: the
    prose is prose; WAIT: a stream's text cannot tell yet (it holds the text back)."""
    drv, at, again = r.spaced
    buf = r.sc.buf
    if not final and len(buf) < again:
        return WAIT  # (a reading that waited is tried again once the text has grown: below)
    m = _spaced_at(buf, at, not final)
    if m is None:
        return None
    lim = m.start(1) + SPACED_HORIZON
    if m.partial:
        return WAIT if len(buf) < lim else None
    # Only the call and what follows it, after the block's own opener: bounded, however
    # long the block before it (a stream asks on each delta).
    opener = buf[r.region_start : r.region_start + r.marker_len]
    shut = _paren_left_open(drv.fmt, buf, m, lim)
    if shut is not None:
        return _left_open_call(r, drv, m, shut, final)
    spaced = _spaced_lines(drv.fmt, buf, m, lim)
    ended = final or len(buf) >= lim
    text = opener + "\n" + _masked(buf, spaced, m.start(1), lim)
    mini = Driver(drv.fmt, 0, None, None, drv.lines)
    mini.quotes = False
    status = mini.run(text, ended, r.sc.at_marker)
    if status != DONE or "closed_tag" in mini.repairs or mini.end != _first_end(drv.fmt, text, len(opener)):
        # (Read so, it is not closed by the block's first end marker after it. A stream's
        # text short of the horizon may yet read otherwise, as parse()'s whole text does
        # (a marker inside a string stops a reading that is not final): it waits, and
        # is read again once the text has grown by a quarter, or reaches the horizon
        # (each reading costs the text from the name on: one at each delta was the
        # square of it).
        if ended and status != WAIT:
            return None
        r.spaced = (drv, at, min(lim, len(buf) + max(16, (len(buf) - m.start(1)) // 4)))
        return WAIT
    # The whole block, read again with those words as blanks (once: the text told).
    masked = buf[: m.start(1)] + _masked(buf, spaced, m.start(1), len(buf))
    whole = Driver(drv.fmt, r.region_start, None, None, drv.lines)
    whole.quotes = False
    status = whole.run(masked, final, r.sc.at_marker)
    if status == WAIT:
        return WAIT
    if status != DONE:
        return None  # (not so when read from the block's start: the prose stays prose)
    region = r.decode(whole, masked)
    if not isinstance(region, Region):
        return None
    told = False
    for start, _, words_end in spaced:
        name = buf[start:words_end]
        message = f'Couldn\'t read a tool call: the name "{name}" cannot be written in this format; call the tool by its exact name.'
        for k, item in enumerate(region.items):
            if isinstance(item, Draft) and item.span and item.span[0] <= start < item.span[1]:
                region.items[k] = Draft(name="", span=item.span, error=message, opened=item.opened)
                told = True
                break
    return region if told else None


def _paren_left_open(fmt: Any, buf: str, m: Any, lim: int) -> int | None:
    """Where the block's end marker begins, when the spaced call m left its `(` open: no
    `)` on the rest of its line, and the block's end marker first on the next line,
    whole within `lim` (`get time(timezone="Europe/Paris"` then `</function_calls>`).
    None: not so (or not yet: a stream's text short of it). Only the text up to that
    marker tells, so a stream and parse() tell alike; no reading runs past it (a `)`
    supplied at the line's end read a string left open on into the next blocks)."""
    brk = buf.find("\n", m.end(), lim)
    if brk < 0 or _paren_closes(buf, m.end(), brk):
        return None
    after = brk + 1
    stop = min(lim, len(buf))
    while after < stop and buf[after] in " \t\r":
        after += 1
    for e in fmt.ends:
        if e and after + len(e) <= lim and buf.startswith(e, after):
            return after
    return None


def _paren_closes(buf: str, at: int, stop: int) -> bool:
    """Whether a `)` in buf[at:stop] closes the `(` just before `at`: one outside the
    strings of the arguments (`tz=")"` holds one only in a string; `note="a)` leaves
    its string open, and its `)` with it). A quote opens a string only where a value
    begins (after `(`, `=`, `,`, `[`, `{` or `:`), so an apostrophe in a bare word
    (`don't)`) opens none."""
    depth = 1
    quote = ""
    prev = "("  # (not extent.outside_strings: here a quote opens a string only where a value begins)
    i = at
    while i < stop:
        ch = buf[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'" and prev in "(=,[{:":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return True
        if not ch.isspace():
            prev = ch
        i += 1
    return False


def _left_open_call(r: Any, drv: Any, m: Any, shut: int, final: bool):
    """The block, its spaced call left open (_paren_left_open) an error naming it: the block
    read again with that call's text as blanks, so the calls before it are closed by
    the end marker as written; None where it does not read so, WAIT."""
    buf = r.sc.buf
    start = m.start(1)
    end = start + len(buf[start:shut].rstrip())
    masked = buf[:start] + _BLANKED.sub(" ", buf[start:shut]) + buf[shut:]
    whole = Driver(drv.fmt, r.region_start, None, None, drv.lines)
    whole.quotes = False
    status = whole.run(masked, final, r.sc.at_marker)
    if status == WAIT:
        return WAIT
    if status != DONE or whole.end < shut:
        return None
    region = r.decode(whole, masked)
    if not isinstance(region, Region) or "closed_tag" in region.repairs:
        return None
    name = " ".join(buf[start : m.end(2)].split())
    message = f'Couldn\'t read a tool call: the name "{name}" cannot be written in this format; call the tool by its exact name.'
    at = sum(1 for item in region.items if getattr(item, "span", None) and item.span[0] < start)
    region.items.insert(at, Draft(name="", span=(start, end), error=message))
    return region


_BLANKED = lazy(regex.compile, r"[^\n]")  # (a character of a line, made a blank)


# A later line that is a call whose name has a space in it, as _SPACED reads one.
_SPACED_LINE = lazy(regex.compile, r"(?m)^[ \t]*+([A-Za-z_][\w.\-]{0,63})((?:[ \t]++[A-Za-z_][\w.\-]{0,63}){1,7})[ \t]*+\(")


def _spaced_lines(fmt: Any, buf: str, m: Any, lim: int) -> list:
    """The spaced names from m's on, before the block's end marker and within `lim`:
    (name start, later words' start, end)."""
    found = [(m.start(1), m.start(2), m.end(2))]
    ends = [i for i in (buf.find(e, m.end(), lim) for e in fmt.ends if e) if i >= 0]
    for line in _SPACED_LINE.finditer(buf, m.end(), min(ends, default=lim)):
        found.append((line.start(1), line.start(2), line.end(2)))
    return found


def _first_end(fmt: Any, text: str, at: int) -> int:
    """Where the first of fmt's end markers in text from `at` on ends (-1: none). A
    call's `(` left open reads on past it (the next block's calls closing it): that is
    no call the block's end marker closes."""
    found = [(i, len(e)) for i, e in ((text.find(e, at), e) for e in fmt.ends if e) if i >= 0]
    return sum(min(found)) if found else -1


def _masked(buf: str, spaced: list, lo: int, hi: int) -> str:
    """buf[lo:hi] with the spaced names' later words as blanks."""
    parts = []
    at = lo
    for _, words, words_end in spaced:
        if words_end > hi:
            break
        parts += [buf[at:words], " " * (words_end - words)]
        at = words_end
    parts.append(buf[at:hi])
    return "".join(parts)


def list_closed(r: Any, drv: Driver, buf: str, final: bool) -> Any:
    """A list of Python calls whose last call's `)` was left out before the list's `]`,
    prose after it (`[get_weather(city="Paris"] Let me check.`): the value's extent
    (which ends only at a `,` or `)`) ran on over the `]` and the prose to the end of
    the reply, and the frame was closed there (closed_tag), as if the end had cut the
    value. It did not: the reply went on. The region is read again up to that `]` (the
    first at the value's depth 0, outside strings), as a reply that ends there reads it
    (`[get_weather(city="Paris"]`: the call, closed_tag and extra_bracket), and the text
    after it is prose. None: not so; an int, the end of that `]`: so, but that reading
    is no call whose values were read whole (`city=Paris]`, a word that ran to its end:
    cut_value), and the value is broken, not cut (an error that names it, up to the `]`,
    as for a stray quote: never an empty call, dropped_partial_argument; the text after
    the `]` is read as any text is). Told at the end of the text only, where
    the value ran to it: a stream waits there too (its value never closed)."""
    if drv.listed is not None and drv.listed > 0:
        if not drv.listed_ends or drv.listed not in drv.listed_ends or drv.last_end <= drv.listed:
            return drv.listed
        # (That list was closed at its `]` and the region read on past it (Driver.
        # _close_list), tokens after it: what failed there is no value that ran on over
        # it, and is told as after a list written whole (QA26 R2: `[f(a="x"] [g(b=1)] [g`,
        # whose calls were all lost to one error up to the first `]`).)
    if not final or drv.status != DONE or drv.last_term != "PYVALUE" or not _cut_at_end(drv, buf, final):
        return None
    brackets = drv.brackets if drv.brackets is not None else r.sc.brackets
    if brackets is None:
        return None
    close = brackets.list_close(buf, drv.last_start)
    if close is None or _NONBLANK.search(buf, close + 1) is None:
        return None  # (nothing after the `]`: the reading of the region as it stands)
    end = close + 1
    fresh = _again(drv, r.region_start, None, end, buf)
    fresh.quotes = False
    region = listed(r, fresh, fresh.run(buf[:end], True, r.sc.at_marker), final)
    if region is None:
        # (Why that reading is no call is the region's error, not what failed after the
        # `]`, which is read as any text is: _listed_why.)
        r.listed_why = (drv, fresh.reason if fresh.status == FAIL else r.sc._decode(fresh))
        return end
    return region


def _value_begun(drv: Driver, buf: str, end: int) -> str | None:
    """The name of the Python argument whose value was begun after `end`, the last point
    the region can be closed at before the end of the reply (salvage_one's `opened`), or
    None. Read to that point, the call drops it (dropped_partial_argument): right where a
    name alone was cut (`n=`), or a value the end of the reply cut that a shorter reading
    never mends. But a value that runs on to the end of the reply and that a reading cut
    there cannot read either (`b='x"] ok`: the lenient pass closes `'x"`, then `] ok`) is
    broken, not cut: a cut one reads, its text so far kept (`b='x"`: cut_value). So it is
    named in an error, never an empty or partial call whose value was dropped."""
    if "PYVALUE" not in drv.c.terminals:
        return None
    m = _BEGUN.match(buf, end)
    return m.group(1) if m is not None else None


_BEGUN = lazy(regex.compile, r"[\s,]*+([A-Za-z_]\w*+)[ \t]*+=[ \t]*+(?=\S)")


def _listed_why(r: Any, drv: Driver) -> str:
    """Why the call whose value ran on over the list's `]` cannot be read (list_closed):
    as the region read up to that `]` tells it, where it tells one, as that reading
    alone on its line does (issue 19: after LFM2's marker, `[f(a="x", g(b=1), h() x]`
    then a line more gave `unexpected '\n…'`, what failed past the `]`, not the
    positional error the line alone gives); else as the whole reading tells it."""
    known = r.listed_why
    why = known[1] if known is not None and known[0] is drv else None
    if why is None and drv.status == FAIL and drv.listed is not None and drv.listed > 0 and "PYVALUE" in drv.c.terminals:
        # (The driver closed that list itself (Driver.listed) and failed past it: the
        # region up to the `]` read again, once, on this failure's path only.)
        buf = r.sc.buf
        fresh = _again(drv, r.region_start, None, drv.listed, buf)
        fresh.quotes = False
        status = fresh.run(buf[: drv.listed], True, r.sc.at_marker)
        why = fresh.reason if status == FAIL else r.sc._decode(fresh) if status == DONE else None
        if isinstance(why, Region) and not any(isinstance(i, Draft) and i.error for i in why.items):
            why = None  # (it reads as calls: what failed after it is why, as before)
    if not (why and isinstance(why, (str, Region))):
        why = drv.reason if drv.status == FAIL else r.sc._decode(drv)
    if isinstance(why, Region):
        # (Its calls before are read, one of them not offered: the broken one's own
        # error, `cannot read the value of 'city'`, is why.)
        told = next((i.error for i in reversed(why.items) if isinstance(i, Draft) and i.error), None)
        why = told[len(_FAILED) : -1] if told and told.startswith(_FAILED) and told.endswith(".") else None
    return why if why and isinstance(why, str) else LIST_CLOSED_EARLY


def _with_cut_end(region: Region, buf: str, fmt: Any, final: bool) -> Region:
    """The region read up to a list's `]` (list_closed, listed), taking the piece of the
    format's own end marker that the end of the reply cut right after it, if that is all
    that follows (`<|tool_call_start|>[f(a="x"]<|tool_c`): that piece is the region's
    markup, as after a call read whole, not prose (QA24c R3)."""
    if final:
        rest = buf[region.end :].strip()
        if rest and buf.endswith(rest) and any(e.startswith(rest) and e != rest for e in fmt.ends if e):
            region.end = len(buf)
    return region


def listed(r: Any, drv: Driver, status: str, final: bool = False) -> Region | None:
    """The region drv read as a reply that ends at a list's `]` its last value ran on
    over (Driver.listed: list_closed's reading, read once), where that reading is calls
    whose values were read whole; None where it is not (see list_closed)."""
    if status != DONE:
        return None
    if drv.text[0] < len(r.sc.buf):
        drv.ended = -1  # (the reply went on past this point: its values are whole)
    region = r.sc._decode(drv)
    if not isinstance(region, Region):
        return None
    drafts = [i for i in region.items if isinstance(i, Draft)]
    if not drafts or any("cut_value" in d.repairs or "dropped_partial_argument" in d.repairs for d in drafts):
        return None
    return _with_cut_end(region, r.sc.buf, drv.fmt, final)


_CALL_HEAD = lazy(regex.compile, r"(?<![\w.\-])([A-Za-z_][\w.\-]*+)\s*\(")


def _offered_call(tools: Any, buf: str, start: int, end: int) -> bool:
    """Whether an offered tool's name is written as a call's head (`name(`) in buf[start:end]."""
    if tools is None:
        return False
    return any(m.group(1) in tools for m in _CALL_HEAD.finditer(buf, start, end))


def _cut_at_end(drv: Driver, buf: str, final: bool) -> bool:
    """Whether what drv read whole runs to the end of the reply, which cut it (its
    missing close supplied): salvage_points' `truncated` for a frame read (DONE)."""
    p, n = drv.end, len(buf)
    while p < n and buf[p].isspace():
        p += 1
    return final and p >= n and "closed_tag" in drv.repairs


def salvage_one(r: Any, drv: Driver, final: bool, broken: list | None = None, buf: str | None = None):
    """(region, its drafts, end, opened, truncated) for one candidate's driver
    (see salvage), or None. `broken` is told each point between calls whose calls
    were read whole and cannot be built: (the point, why). `buf`: the text drv read
    (_read_text), the scanner's by default."""
    sc = r.sc
    if buf is None:
        buf = sc.buf
    points, truncated = salvage_points(drv, buf, final, sc.at_marker)
    if points is WAIT:
        r.salvage_wait = truncated  # (the replay that waits: see salvage_points)
        return WAIT
    points = list(points)
    while points:
        end, opened = points.pop(0)
        # Read again up to there as a reply that ends there (the missing markers
        # are supplied): the table cannot be rolled back, its tree callbacks share lists.
        fresh = _again(drv, r.region_start, None, end, buf)
        fresh.quotes = False
        if drv.listed is not None and drv.listed_ends:
            # (drv closed a list at its `]`, its call's `)` left out (Driver._close_list),
            # and read on past it: the replay up to a point after that `]` reads it so too,
            # or the value runs on over it and the calls after it are lost (QA26 R2:
            # `[f(a="x"] [g(b=1)] [g`). Its own index: the text read is cut at the point.)
            fresh.listed, fresh.brackets = -1, BracketIndex()
        if fresh.run(buf[:end], True, sc.at_marker) != DONE:
            continue
        if not opened and mention(r, fresh, True) is True:
            continue  # (a name alone, prose after it, is a mention here too: `the <marker> tag to…`)
        if opened:
            fresh.end = len(buf)
            fresh.goes_on = True
            rest = buf[end:].strip()
            # (Asked first without the terminals taken there: where no close marker begins
            # with the rest, none of those taken does, and the probe, a reading of the
            # region up to the point, is not made: a cofl call cut inside an attribute.)
            if _closing(drv, rest) and _closing(drv, rest, *_accepts(r, drv, end)):
                fresh.ended = -1  # (the reply ended inside a close marker: the values before it are whole)
        else:
            fresh.ended = -1  # (between calls: the reply went on past this point)
        region = sc._decode(fresh)
        if not opened and drv.listed_ends and end in drv.listed_ends and isinstance(region, Region) and "closed_tag" in region.repairs and not (drv.paren_ends and end in drv.paren_ends):
            # (The point is a list's `]` that drv closed, its last call's `)` left out
            # (Driver._close_list): that call's closed_tag, as in drv's own reading, not
            # the region's, whose list is whole there: what fails after it is told as
            # after a list written whole. Not a `]` that stood for the call's `)`, the
            # list going on after it (paren_ends): a call after it that breaks is a call
            # of that list, told as in `[g(q='x'), h(b=)]`, not prose after a list
            # (`[g(q='x'], h(b=)]` was silent: issue 19).)
            region.repairs.remove("closed_tag")
            _listed_closed(region.items, [end])
        if opened and fresh.deep:
            # The call the end cut holds an argument nested too deeply: no shorter
            # reading mends it, and that is its failure (not what its cut text broke).
            r.first_failure = Failure(r.region_start, len(buf), f"Couldn't read a tool call: {region}.")
            r.failed_frame = None
            return None
        drafts = [i for i in region.items if isinstance(i, Draft)] if isinstance(region, Region) else None
        if not opened and broken is not None and region and isinstance(region, str):
            broken.append((end, region))
        if drafts and not opened and _opener_only(drv, buf, drafts[-1], end):
            # A call that is its opener alone, prose after it: no call, as alone it is
            # none (an error, below); the calls before it are kept, closed before it.
            before = _before_openers(r, drv, buf, drafts, end)
            if len(drafts) > 1 and before < end:
                points.insert(0, (before, False))
            continue
        if drafts:
            return region, drafts, end, opened, truncated
    return None


def _before_openers(r: Any, drv: Driver, buf: str, drafts: list, end: int) -> int:
    """The point to read the region again up to, its last call (drafts[-1], up to `end`)
    an opener alone: before that call, or before the run of such calls it ends. Read
    again before one of them, the region's last call is the one before it, read as it
    was here (its close tag left out: the next opener closed it, where now the end
    does), so it too is an opener alone, and the salvage would read again before it,
    and so on: a value of a thousand openers one a line was read a thousand times
    (the square of the text). The calls before them are the same either way: the
    replay goes straight to the point after the last call that is more than an opener
    (or before the second call: the first is an opener too, and alone it is none)."""
    k = len(drafts) - 1
    stop = end
    while True:
        before = _trimmed(r, buf, drafts[k].span[0])
        if k <= 1 or not _opener_only(drv, buf, drafts[k - 1], before) or not before < stop:
            return before
        stop = before
        k -= 1


def _trimmed(r: Any, buf: str, at: int) -> int:
    """at, back over the blanks before it (not before the region's start)."""
    while at > r.region_start and buf[at - 1].isspace():
        at -= 1
    return at


def _opener_only(drv: Driver, buf: str, last: Draft, end: int) -> bool:
    """Whether the last call read up to a point is its opener alone, closed there by the
    replay (`<invoke name="rm">` then prose, in an XML-ish block after a whole call): it
    holds no argument, and no close tag ends its text. The model did not write a call
    there; alone in its block the same text is an error, not an argument-less call."""
    nest = drv.c.nest
    if nest is None or last.arguments or last.params or last.error or "closed_tag" not in last.repairs:
        return False
    closers = drv.c.derived.get("closers")
    if closers is None:  # (asked of each call of a run of openers: see _before_openers)
        closers = drv.c.derived["closers"] = tuple(tag for tag, need in nest.closer_of.items() if need is None)
    return not buf[last.span[0] : end].rstrip().endswith(closers)


def _closing(drv: Driver, text: str, accepts: Any = None, going_on: Any = ()) -> bool:
    """Whether `text` is the beginning of a literal of drv's grammar that closes
    something (`</param`, `<|tool_call_e`: see Builder._closer); with `accepts`, one
    of the terminals named there (those the grammar takes at the point), and of none
    of them that closes nothing and goes on with the call open there (`going_on`, a
    subset of `accepts`: table.goes_on): Kimi K2's
    `functions.f:0 <|t` may begin the call's end or the marker that opens its arguments
    (`<|tool_call_argument_begin|>`), an XML call's `<` its close or a parameter's tag.
    Then the end may have cut what was to be written (QA15 F4: `f {}` with no
    cut_value, so truncated="error" let it through). A marker taken only after a
    reduction (the next call's opener) begins nothing of what the values before were."""
    if not text:
        return False
    ends = drv.fmt.ends
    closes = False
    for name, t in drv.c.terminals.items():
        if accepts is not None and name not in accepts:
            continue
        if t.literal:
            if not t.literal.startswith(text):
                continue
            if ends_something(t, t.literal, ends):
                closes = True
                continue
            if t.literal in drv.fmt.starts:
                continue  # (the next call's opener: the call before it is whole either way)
        elif accepts is None or not _begins(t, text):
            continue
        if accepts is not None and name in going_on:
            return False  # (it may begin what goes on with the call and closes nothing)
    return closes


def _begins(terminal: Any, text: str) -> bool:
    """Whether `text` may begin a token of a pattern terminal (it matches it whole, or
    a part of it reaching the text's end)."""
    m = terminal.pattern.match(text, partial=True)
    return m is not None and (m.partial or m.end() == len(text))


def _accepts(r: Any, drv: Driver, end: int) -> tuple[frozenset, frozenset]:
    """The terminals drv's grammar takes next after the region's text up to `end`, and
    those of them that go on with the call open there (table.goes_on). A
    close marker begun there closed what was written only where one may come next:
    after Kimi K3's `<|open|>argument key="a"` a `<|` begins the `<|sep|>` that opens the
    value (cut before it began), not the argument's close. (Replayed only for a reply
    cut inside its last call with text after the point: rare.)"""
    probe = _again(drv, r.region_start, None, end)
    probe.quotes = False
    probe.run(r.sc.buf[:end], False, r.sc.at_marker)
    if not probe.stack:
        return frozenset(), frozenset()
    names = frozenset(probe.expected())
    if last_closes(probe, r.sc.buf):
        return names, frozenset()  # (the call read is whole: what follows begins no more of it)
    return names, frozenset(n for n in names if goes_on(probe.c, probe.stack, n))


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
    inner: list = []  # (see below: the first call's inner spots to replay from, latest first)
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
        if not truncated and not failed.calls:
            plan = closing_plan(c, stack, ends)
            if plan is None:
                return [], False
            if not failed.may_close or (not failed.may_end and _read_alike(failed, buf, final)):
                # No call read, and no token left the frame where it could end as it
                # stands (only there could a point before the last close it): only the
                # last point, after the last token read, may be one, and the stack there is
                # the failed run's own. Told without a replay (a region of one call cut
                # inside its argument, repeated, was read twice each). may_close alone says
                # little in cofl, whose value close has $END among its merged lookaheads:
                # may_end, of the stacks themselves, tells where the replay would read this
                # very text (_read_alike), as _points asks of each point inside the call (a
                # list nested 880 levels deep, one opener broken, was replayed whole: 60 ms
                # of 220 at 32 KB, for no point).
                end = failed.last_end
                return ([] if _opened(failed, buf, end, stack, plan, False, end) else [(end, False)]), False
        if (
            truncated
            and not failed.calls
            and not failed.may_end
            and not failed.spots
            and not failed.checkpoints
            and not c.terminals[failed.last_term].looks_past
            and _read_alike(failed, buf, final)
        ):
            # The end cut the frame's first call, and no token left a stack the frame
            # may end at as it stands (may_end): where the last point, the failed run's
            # last token's with its stack, has a plan to close the frame, a replay's
            # points before it are all inside that call and passed by (_points). Told
            # without a replay (a cofl call of many values, each followed by stray text,
            # cut after the last: the call was read again only to find that point).
            # Without a plan there, the points before it are looked into: the replay,
            # from the latest of the first run's spots inside that call (Driver.inner)
            # after which a point is found, as the replay from the start would find it
            # first: the points before it are inside the call, and none takes $END as it
            # stands (may_end), so _points passes them by. (A cofl call cut inside an
            # attribute was replayed whole to find the value's close a few tokens back.)
            plan = closing_plan(c, stack, ends)
            if plan is not None:
                end = failed.last_end
                return [(end, _opened(failed, buf, end, stack, plan, False, end))], truncated
            if len(stack) <= _MARK_STACK:
                # (Where the failure is deep inside a value, its points keep no stack and the
                # replay from a spot finds none: it reads from the start, as before.)
                inner = failed.inner[::-1]
    else:  # (read, but what it read is no call: only the end's cut is looked into)
        truncated = final and p >= n and "closed_tag" in failed.repairs
        if not truncated or failed.deep:
            # (An argument nested too deeply stays so in any shorter reading, where
            # replaying to each point would copy a stack as deep at each token: the
            # square of the reply, in time and memory.)
            return [], False
    # The replay, from where the first run last took up its own reading (a checkpoint:
    # the tokens before are the same), or where it did after a call (the point there
    # is one between calls), or from the region's start: where no point between calls
    # comes after the place it starts from, the points before it count.
    same = _read_alike(failed, buf, final)
    if same:
        # (The first run read this very text so: its spots, after its last calls, are
        # where this replay would stand. A value of a thousand call openers one a line
        # was replayed whole, to find the point before the last of them.)
        later = inner or failed.spots[::-1]
    else:
        later = failed.checkpoints[-1:]
        if later and not later[0].between:
            later += [p for p in failed.checkpoints[::-1] if p.between][:1]
        if not inner and len(failed.checkpoints) > 1 and failed.checkpoints[-2] not in later:
            # (And the one before the last, latest first: a replay from the last finds no
            # point between calls where the end cut the list after it, before its `]`
            # (pyframe's checkpoint after that list's last call), and one from the point
            # between lists before it finds the one the replay from the region's start
            # finds: the last such point, the marks after a checkpoint the same either
            # way. A thousand plain lists, the last cut, were replayed whole for it.)
            later = sorted([*later, failed.checkpoints[-2]], key=lambda p: p.pos, reverse=True)
    for point in [*later, None]:
        drv = Driver(failed.fmt, failed.start, failed.brackets, failed.cutter, failed.lines)
        if failed.listed is not None:
            drv.listed = -1  # (it reads a list closed before its call's `)` as failed did)
        drv.marks = []
        if point is not None:
            point.resume(drv)
            drv.marks.append([drv.pos, list(drv.stack), False])
        drv.quotes = failed.quotes
        if same:
            drv.halt = failed.relevant
        status = drv.run(buf, final, at_marker)
        if status == WAIT:
            # A stream's text cannot tell the replay yet where the first run, fed by a
            # frame's tokens, went on (a value whose cut waits on the text after it:
            # `s=[.5,])][…`): no point is missing, the reading is not over. Wait, on
            # what the replay waits on (RegionReader.salvage_wait), as parse() reads on.
            return WAIT, drv
        if status == PAUSE:  # (else it stops where the first run did)
            _skip_to_failure(failed, drv)
        else:
            drv.settle_mark()
        points, between = _points(failed, drv, buf, truncated)
        if between or point is None or (inner and points):
            return points, truncated
    return [], truncated  # (not reached: the region's start ends the loop)


def _read_alike(failed: Driver, buf: str, final: bool) -> bool:
    """Whether a replay of failed's region reads what its own reading did, token for
    token, and that reading's record (Driver.spots, relevant) may stand for the
    replay's: it read this text whole (not one cut before an end-of-turn token), as
    final, by its own lexer alone (pyframe.py and gemframe.py feed tokens of their
    own), and failed with no token supplied after its last one (its stack is the
    last point's)."""
    return (
        failed.status == FAIL
        and failed.text == (len(buf), final)
        and failed.supplied < failed.taken
        and failed.fmt.name not in _OWN_LEXERS
        and failed.marks is None
    )


def _skip_to_failure(failed: Driver, drv: Driver) -> None:
    """drv, a replay that stopped past failed.relevant (Driver.halt), as if it had read
    on to where failed failed. The points it did not mark keep no copy of the stack (each
    is deep inside a call, and no call ends at it: see Driver._keep_mark), so _points
    passes them by; the last one is failed's last token's, with its stack (the same:
    no token was supplied after it). Nested thousands of levels deep, a value left
    open was read twice, to mark points that only the first few levels hold."""
    marks = drv.marks
    while marks and marks[-1][0] > failed.relevant:
        marks.pop()
    marks.append([failed.last_end, list(failed.stack), False])
    drv.status, drv.end, drv.pos = failed.status, failed.end, failed.pos


def _points(failed: Driver, drv: Driver, buf: str, truncated: bool) -> tuple[list, bool]:
    """salvage_points' points from drv's replay (its marks), and whether the last of
    them is between calls (the points before it do not count)."""
    c, ends = failed.c, failed.fmt.ends
    points: list = []
    last = drv.marks[-1][0] if drv.marks else -1
    for end, stack, ended in reversed(drv.marks):
        if end >= drv.end and drv.status == DONE:
            continue  # (that is what was read already)
        if stack is None:
            continue  # (deep inside a call, which does not end there: see Driver._keep_mark)
        inside = not ended and end != last and (points or not truncated)
        if inside and (len(stack) > _MARK_STACK or not takes(c, stack, "$END")):
            # (Inside a call, no point to close the frame at, and the first point inside
            # the last one is found: its plan, as long as its stack, would only say so.
            # Only a point where the frame is whole as it stands, no plan to supply, may
            # still be one between calls (below): the others' plans were worked out at
            # each token of each cut call, the cost of a replay ten times over.)
            continue
        plan = closing_plan(c, stack, ends)
        if plan is None:
            continue
        if _opened(failed, buf, end, stack, plan, ended, last):
            if truncated and not points:
                points.append((end, True))
            continue
        points.append((end, False))
        return points, True
    return points, False


def _again(drv: Driver, start: int, brackets: Any, upto: int, buf: str | None = None) -> Driver:
    """A new driver of drv's region, to read it again up to `upto`: from drv's
    checkpoint where one was taken before that (pyframe.Checkpoint), else, reading
    `buf` cut at `upto` as a whole reply, from the last of drv's spots that such a
    reading reads as drv did (_taken_up), else from start."""
    fresh = Driver(drv.fmt, start, brackets, drv.cutter, drv.lines)
    if start == drv.start:
        point = next((p for p in reversed(drv.checkpoints) if p.pos <= upto), None)
        if point is None and buf is not None:
            point = _taken_up(drv, buf, upto, fresh)
            if point is False:  # (fresh was used to tell, and told no: a new one reads from the start)
                return Driver(drv.fmt, start, brackets, drv.cutter, drv.lines)
        if point is not None:
            point.resume(fresh)
    return fresh


def _taken_up(drv: Driver, buf: str, upto: int, fresh: Driver) -> Any:
    """The last of drv's spots kept in `back` (Driver._spot) that the text cut at `upto`,
    read as a whole reply, reaches as drv reached it: every try of the lexer before it
    looked at the text before `upto` only (and before the end of drv's own text), as
    the format's Looks tell; then the same tokens were read the same way (the engine
    given the same characters takes the same path), and the parse stands there as drv's
    did. A value of a thousand call openers one a line was read again from the region's
    start up to the last of them. None: there is none; False: there is none, and
    `fresh` (a new driver of the region, which lexes the tokens drv kept in `checks`
    again) was used to tell."""
    if not drv.back or drv.fmt.name in _OWN_LEXERS or drv.marks is not None:
        return None
    looks = looks_of(drv.c, CUT_ROOM + drv.c.longest_literal)
    if looks is None:
        return None
    end = min(upto, drv.text[0])
    for point in reversed(drv.back):
        if point.pos + looks.margin <= end:
            break
    else:
        return None
    if not looks.clear(buf, point.pos, end):
        return None
    text = None
    for at, tok, pos, before in drv.checks:
        if at >= point.pos:
            break
        # (A token whose reading looked on who knows how far: lexed again alone, as the
        # cut text's reading would lex it, from the driver as it stood before it.)
        if text is None:
            text = buf[:upto]
        before.resume(fresh)
        fresh.pos = at
        if fresh._lex(text, True, drv.c.allowed[fresh.stack[-1]]) != tok or fresh.pos != pos:
            return False
    if text is not None:
        _forget(fresh)
    return point


def _forget(drv: Driver) -> None:
    """Drop what drv's lexer kept of the tokens _taken_up lexed again (each keyed by where
    its token starts, which the reading taken up after them never meets: all the same)."""
    drv.extents, drv.quote_memo, drv.nest_memo, drv.nest_open, drv.nest_loose = {}, None, {}, None, {}
    drv.quote_passed = []
    drv.check = drv.far = False
    drv.checks = []


def _opened(failed: Driver, buf: str, end: int, stack: list, plan: list, ended: bool, last: int) -> bool:
    """Whether closing the frame at the point `end` (its state stack and closing plan;
    `ended`: the next token read finishes a call; `last`: the last point) completes a
    call left open, rather than closing it between calls."""
    c = failed.c
    # Between calls: the next token read finishes a call; or, after the last token
    # read, the missing markers leave no call open (only the section around them).
    opened = not ended and (end != last or _left_open(c, stack, plan))
    if opened and not plan and not _reduces_call(c, stack, "$END"):
        # (The frame is whole here, nothing to supply, and no call open: the tokens
        # since the last call closed it, a list's `]`. A line after it that opens no
        # list of calls, `[1] Source`, does not make that `]` a bracket left open.)
        opened = False
    if opened and end == last and _closed_by_prose(failed, buf, end, plan):
        opened = False
    return opened


def _closed_by_prose(failed: Driver, buf: str, end: int, plan: list) -> bool:
    """Whether the last call read is left open only for want of its end marker
    (`</tool_call>` of GLM's `<tool_call>NAME<arg_key>…</arg_value>`, whose call rule
    holds both markers), with prose on the next line: the model left the marker out
    and wrote on. Closed there, it is a call, like one whose section end was left out."""
    at = failed.prose_at
    if at < end or buf[end:at].strip():
        return False
    if "\n" not in buf[end:at] and not _never_text(failed, buf, end):
        # (On a line of its own only: text right after a close tag, `print("</parameter>")`
        # or `use </arg_value> to close`, is the rest of a value that held the tag. Not
        # where no value of the grammar holds that tag: MFCS's `</parameters>`.)
        return False
    ends = failed.fmt.ends
    terminals = failed.c.terminals
    return bool(plan) and all(getattr(terminals.get(t), "literal", None) in ends for t in plan)


def _never_text(failed: Driver, buf: str, end: int) -> bool:
    """Whether the tag that ends at `end` (a literal token of the grammar) is one that
    none of its text terminals reads on through (MFCS's field text stops at every
    MFCS tag; GLM's value reads `</arg_value>` followed by text as its own text): a
    value cannot have held it. Worked out once per format and tag."""
    c = failed.c
    tag = max((t.literal for t in c.terminals.values() if t.literal and buf.endswith(t.literal, 0, end)), key=len, default=None)
    if tag is None:
        return False
    memo = failed.fmt.compiled.derived.setdefault("never_text", {})
    found = memo.get(tag)
    if found is None:
        probe = "x" + tag + " x"
        found = memo[tag] = not any(
            (m := t.pattern.match(probe)) is not None and m.end() > 1
            for t in c.terminals.values()
            if t.literal is None and t.name not in ("JSON", "PYVALUE")
        )
    return found


def _may_begin(t: Any, buf: str, pos: int) -> bool:
    """Whether the rest of the text, from pos, could be the beginning of a t token:
    of a literal, a part of it cut short (the whole of it was read as such, and found
    unexpected: no more text would change that)."""
    if t.literal is not None:
        return len(buf) - pos < len(t.literal) and t.literal.startswith(buf[pos:])
    if t.name in ("JSON", "PYVALUE"):
        return False  # (these run to the end of the text: they would have been read)
    if t.name.rpartition("__")[2] == "INLINE_VALUE":
        # (A value whose close is written twice, which the shared XML-ish grammars read
        # before VALUE: the end of the reply right after a close is no second close cut
        # short; VALUE, which reads the same text, tells whether the end cut a value.)
        return False
    m = t.pattern.match(buf, pos, partial=True)
    return m is not None and (m.partial or m.end() >= len(buf))


_LINE_ENDS = regex.compile(r"[ \t]*\r?\n")


def _lists_open(buf: str, end: int) -> bool:
    """Whether a list of Python calls read up to `end` (a region whose end marker was left
    out: salvaged) ends at the list's `]` and its line there (blanks at most), more text
    after it (a next line, which may hold more lists of the region)."""
    m = _LINE_ENDS.match(buf, end)
    return end > 0 and buf[end - 1] == "]" and m is not None and m.end() < len(buf)
