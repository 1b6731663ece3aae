"""The stream adapter's contract for announce="name" (docs/serve.md, "Streaming"; issue 21),
checked on one reply: nothing sent is taken back unless parse() of the whole reply lacks
that call; a call gets its index and id once; ids and indexes equal parse()'s. Used by
tests/test_announce_cuts.py and benchmarks/announce_cuts.py (which builds the replies)."""

from __future__ import annotations

import re

from toolgram import CallCancelled, CallDone, CallStart, StreamParser, parse
from toolgram._result.openai import id_for

KINDS = ("withdrawn_kept", "resent", "index", "withdrawn_ok")
CHUNKINGS = ("cut", "near")
_NEAR = 16  # (chunking "near": one delta a character from this far before the cut)
_AFTER = 64  # (and up to this far after it; the rest in one delta)


def deltas(reply: str, cut: int, chunking: str) -> list[str]:
    """The deltas of a chunking: "cut", the text up to the cut in one, then one a
    character; "near", one a character from _NEAR characters before the cut (both for
    _AFTER characters after it, the rest in one); "1", one a character throughout; a
    number n, n characters a delta."""
    if chunking == "1":
        return list(reply)
    if chunking.isdigit():
        n = int(chunking)
        return [reply[i : i + n] for i in range(0, len(reply), n)]
    begin = cut if chunking == "cut" else max(0, cut - _NEAR)
    end = min(len(reply), cut + _AFTER)
    return [p for p in (reply[:begin], *reply[begin:end], reply[end:]) if p]


def _options(case: dict) -> dict:
    return {"formats": case.get("formats"), "in_think": case.get("in_think", False), "truncated": case.get("truncated", "repair")}


def stream(case: dict, reply: str, cut: int, chunking: str) -> tuple[list, object]:
    """The call events of the reply's stream, and its close()."""
    sp = StreamParser(case.get("tools"), announce="name", **_options(case))
    events: list = []
    for piece in deltas(reply, cut, chunking):
        events.extend(sp.feed(piece))
    events.extend(sp.flush())
    return [e for e in events if type(e) in (CallStart, CallCancelled, CallDone)], sp.close()


def check(case: dict, reply: str, cut: int, chunking: str) -> list[str]:
    """The kinds of failure this reply's stream shows (KINDS; withdrawn_ok, a call
    withdrawn that parse() lacks, is allowed), and "close" where close() != parse():

      withdrawn_kept  a CallCancelled for a call parse() keeps (same name and id);
      resent          a CallCancelled, then a call of the same name sent that parse() keeps
                      at or after the withdrawn one's place (its id moved with its start: no
                      other call of that name written between, see _same_call);
      index           no call withdrawn, and a CallStart's index, id or name is not parse()'s
                      (its place in result.calls, result.to_openai_message()'s id); or, after
                      a withdrawal, the calls not withdrawn are not parse()'s (names, ids, order)."""
    result = parse(reply, case.get("tools"), **_options(case))
    ids = [c["id"] for c in result.to_openai_message().get("tool_calls", [])]
    kept = {(c.name, i) for c, i in zip(result.calls, ids)}
    events, closed = stream(case, reply, cut, chunking)
    starts = {e.index: e for e in events if type(e) is CallStart}
    out = [] if closed == result else ["close"]
    cancelled = False
    for n, e in enumerate(events):
        if type(e) is not CallCancelled:
            continue
        cancelled = True
        s = starts[e.index]
        if (s.name, s.id) in kept:
            out.append("withdrawn_kept")
        elif any(type(d) is CallDone and d.call.name == s.name for d in events[n:]):
            done_before = sum(1 for d in events[:n] if type(d) is CallDone)
            later = [c for c in result.calls[done_before:] if c.name == s.name]
            out.append("resent" if any(_same_call(reply, s, c) for c in later) else "withdrawn_ok")
        else:
            out.append("withdrawn_ok")
    if not cancelled:
        for e in events:
            if type(e) is CallStart and (e.index >= len(ids) or ids[e.index] != e.id or result.calls[e.index].name != e.name):
                out.append("index")
                break
    else:
        # (After a withdrawal indexes move on, but the calls sent and not withdrawn are
        # still parse()'s, in its order, with its ids.)
        gone = {e.index for e in events if type(e) is CallCancelled}
        sent = [(e.name, e.id) for e in events if type(e) is CallStart and e.index not in gone]
        if sent != [(c.name, i) for c, i in zip(result.calls, ids)]:
            out.append("index")
    return out


def _same_call(reply: str, start: CallStart, kept: object) -> bool:
    """Whether the withdrawn call `start` was announced for the call parse() keeps as
    `kept` (its id moved with its start), rather than for another call written before it
    that parse() lacks (a broken list's own call, `[f(a="y", 4)]\n[f(a="z")]`): the kept
    call starts after the place the withdrawn id was made from, and its name is not
    written between the two (a block's opener names no call: `<tool_call>\n<function=f>`).
    Where that place is not found (an id the model wrote), the same call."""
    name, span = kept.name, kept.span  # type: ignore[attr-defined]
    at = next((i for i in range(min(span[0], len(reply)) + 1) if id_for(name, i) == start.id), None)
    if at is None:
        return True
    return not re.search(r"(?<![\w.])" + re.escape(name) + r"(?!\w)", reply[at : span[0]])
