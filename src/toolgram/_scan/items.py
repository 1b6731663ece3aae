"""What the scanner reports: Piece (prose, reasoning, markup), Region (a read
call region, its drafts) and Failure (a region no format could read). The fast
path (fastpath.py) makes Regions too; both import them from here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from .._build.builder import Draft, Prose
from .._result.model import ToolCall, moved_call


@dataclass
class Region:
    start: int
    end: int
    fmt: str
    items: list  # Draft | Prose
    repairs: list[str] = field(default_factory=list)
    # How many of its first calls take no closed_tag of `repairs`: lists in a row read as
    # one region, its close supplied where the end cut the last list; the calls of the
    # lists before, each closed by its own `]`, are whole (region._whole_lists).
    whole: int = 0


class Piece(NamedTuple):
    """A slice of the reply: kind "text", "reasoning", "markup" (tags removed),
    "turn_end" (an end-of-turn token that ends the reply, or a turn boundary between
    two calls, removed: Scanner._turn_between) or "closer" (a
    call's closer written again right after it, removed),
    `value` the text it contributes (a slice of the reply unless given). (A tuple:
    one is made per run of prose, and a tuple is made fastest; see _piece.)"""

    kind: str
    start: int
    end: int
    value: str


def _piece(kind: str, start: int, end: int, value: str, _new=tuple.__new__) -> Piece:
    return _new(Piece, (kind, start, end, value))


# What a reply may start with that shows nothing and is not str.isspace(): a byte order
# mark (a file saved with one, a server that kept it) and a zero-width space. Before the
# reply's first text they are blanks, as leading whitespace is: a call that must open the
# reply may follow them, and they are never the reply's only text.
INVISIBLE = "\ufeff\u200b"


def strip_leading(value: str) -> str:
    """value.lstrip(), the INVISIBLE characters stripped too."""
    body = value.lstrip()
    while body and body[0] in INVISIBLE:
        body = body[1:].lstrip()
    return body


@dataclass
class Failure:
    """A region that could not be read: its text stays prose, `message` says why.
    `prose=False`: its text is markup and no prose (an "error" segment): a call's
    opener that the end of the reply cut off (see mention.cut_opener)."""

    start: int
    end: int
    message: str
    prose: bool = True


def _rebase(out: list, base: int) -> None:
    """Positions in the scanner's buffer -> positions in the reply."""
    for k, item in enumerate(out):
        if type(item) is ToolCall:  # (the fast path's: frozen)
            start, end = item.span
            out[k] = moved_call(item, (start + base, end + base))
            continue
        if type(item) is Piece:
            out[k] = _piece(item.kind, item.start + base, item.end + base, item.value)
            continue
        item.start += base
        item.end += base
        if type(item) is Region:
            for part in item.items:
                if type(part) is Draft or (isinstance(part, Prose) and part.span is not None):
                    part.span = (part.span[0] + base, part.span[1] + base)
                    if type(part) is Draft and part.opened is not None:  # (a position too: Draft.opened)
                        part.opened += base


def listed_closed(items: list, ends: list) -> None:
    """The calls whose list a driver closed at its `]`, the call's `)` left out before it
    (Driver._close_list, at `ends`): each records closed_tag, first, as where the region
    ends there (its close supplied at the end of the text read). The region's other calls
    are whole, and so is the region: the repair is not the region's."""
    ends = set(ends)
    for item in items:
        if type(item) is Draft and item.span is not None and item.span[1] in ends and "closed_tag" not in item.repairs:
            item.repairs.insert(0, "closed_tag")


# (Scanner.outer_watch's third element where a Python call region was told broken at the next
# call's marker, RegionReader._watch_after: the closers after that call are the broken call's.)
OUTER_CUT = "cut"
