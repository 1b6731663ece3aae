"""Salvage: no candidate read the region, but the calls one of them finished
before a broken or cut-off call are kept (the policy of _scan/region.py's
RegionReader; each function takes the reader, r)."""

from __future__ import annotations

from typing import Any

from .mention import mention, settle_failure
from .._build.builder import Draft
from .._lalr.driver import DONE, FAIL, WAIT, Driver, salvage_points
from .._scan.items import Failure, Region


def salvaged(r: Any, out: list, final: bool) -> bool | None:
    """Put out what salvage keeps, as RegionReader.run does (True; False: wait for the
    tail's failure to settle); None: nothing is kept."""
    sc = r.sc
    if r.salvaged is None:
        r.salvaged = salvage(r, final)
    if not r.salvaged:
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
    if tail is not None:  # (its text stays prose, as any failure's)
        sc._prose(out, sc.pos, tail.end)
        out.append(tail)
        sc.pos = tail.end
    sc._end_region()
    return True

def salvage(r: Any, final: bool, quiet: bool = False):
    """No candidate read the region, but one (the first that can, in order) may
    still be closed where its calls so far end (see salvage_points): the calls
    finished before a broken or cut-off one are kept. (Region, tail, settle):
    the region read up to there; the failure of what follows it, or None; settle:
    that failure is decided as any broken frame's (settle_failure). False: none.
    A quiet format's (or, `quiet`, an anchored region's) tail gives no failure:
    it stays prose."""
    buf = r.sc.buf
    for drv in r.drivers:  # (the candidates in order: the first that keeps calls)
        if drv.fmt.anchor == "whole":
            continue  # (its region is the whole reply or nothing)
        got = salvage_one(r, drv, final)
        if got:
            break
    else:
        return False
    region, drafts, end, opened, truncated = got
    dropped = buf[end:].strip()
    if opened and drv.stray:
        # What ran on to the end is a value with a stray quote (`city="Par"is")]`,
        # _repair.quoted_end): the call is broken, not cut short, and is no call
        # without that argument. It fails, named, and its text stays prose; the
        # calls before it are kept (with none, nor is the region: None).
        last = drafts[-1]
        why = drv.reason if drv.status == FAIL else r.sc._decode(drv)
        if not why or not isinstance(why, str):
            why = "a value holds a stray quote"
        at = region.items.index(last)
        start = last.span[0] if at else region.start  # (the region's own markers too)
        del region.items[at:]
        region.end = start
        return (region if at else None), Failure(start, len(buf), f"Couldn't read a tool call: {why}."), False
    if opened:
        # The reply ended inside its last call: it takes the rest of the reply, and
        # what was begun after the point (a parameter's name) is dropped; the
        # beginning of a close marker is only that call's closed_tag.
        last = drafts[-1]
        last.span = (last.span[0], len(buf))
        if dropped and not any(t.literal and t.literal.startswith(dropped) for t in drv.c.terminals.values()):
            last.repairs.append("dropped_partial_argument")
    if opened or not dropped or quiet or drv.fmt.quiet:
        return region, None, False
    if drv.prose_at >= end and not buf[end : drv.prose_at].strip():
        # Prose right after the last call, where the section's (or the call's)
        # close was left out: the region ends there, and the prose is prose, not a
        # broken call (nothing to report, and nothing to wait for).
        return region, None, False
    why = drv.reason if drv.status == FAIL else r.sc._decode(drv)
    if not why or not isinstance(why, str):
        why = "the reply ended inside the call"
    message = f"Couldn't read a tool call: {why}."
    if truncated:
        return region, Failure(end, len(buf), message), False
    fail_end = max(drv.end, drv.pos, end)
    r.first_failure = Failure(end, fail_end, message)
    r.failed_frame = drv
    r.fail_scan = fail_end
    return region, None, True

def salvage_one(r: Any, drv: Driver, final: bool):
    """(region, its drafts, end, opened, truncated) for one candidate's driver
    (see salvage), or None."""
    sc = r.sc
    buf = sc.buf
    points, truncated = salvage_points(drv, buf, final, sc.at_marker)
    for end, opened in points:
        # Read again up to there as a reply that ends there (the missing markers
        # are supplied): the table cannot be rolled back, its tree callbacks share lists.
        fresh = Driver(drv.fmt, r.region_start, None, drv.cutter, drv.lines)
        fresh.quotes = False
        if fresh.run(buf[:end], True, sc.at_marker) != DONE:
            continue
        if not opened and mention(r, fresh, True) is True:
            continue  # (a name alone, prose after it, is a mention here too: `the <marker> tag to…`)
        if opened:
            fresh.end = len(buf)
        region = sc._decode(fresh)
        drafts = [i for i in region.items if isinstance(i, Draft)] if isinstance(region, Region) else None
        if drafts:
            return region, drafts, end, opened, truncated
    return None
