"""What the scanner reports: Piece (prose, reasoning, markup), Region (a read
call region, its drafts) and Failure (a region no format could read). The fast
path (fastpath.py) makes Regions too; both import them from here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass
class Region:
    start: int
    end: int
    fmt: str
    items: list  # Draft | Prose
    repairs: list[str] = field(default_factory=list)


class Piece(NamedTuple):
    """A slice of the reply: kind "text", "reasoning", "markup" (tags removed) or
    "turn_end" (an end-of-turn token that ends the reply, removed),
    `value` the text it contributes (a slice of the reply unless given). (A tuple:
    one is made per run of prose, and a tuple is made fastest; see _piece.)"""

    kind: str
    start: int
    end: int
    value: str


def _piece(kind: str, start: int, end: int, value: str, _new=tuple.__new__) -> Piece:
    return _new(Piece, (kind, start, end, value))


@dataclass
class Failure:
    """A region that could not be read: its text stays prose, `message` says why.
    `prose=False`: its text is markup and no prose (an "error" segment): a call's
    opener that the end of the reply cut off (see mention.cut_opener)."""

    start: int
    end: int
    message: str
    prose: bool = True
