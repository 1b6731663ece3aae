"""A driver's state at one point of its reading, for a new driver of the same region
to take up there instead of reading the region again from its start: after a plain
Python list read by _scan/pyframe.py, and after the calls the driver reads itself
(Driver.spots), which a salvage's replay starts from (_scan/salvage.py)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from .tree import Tree

# What a driver has read that a Checkpoint keeps, besides its parse stack and values
# (the caches of where a token's scan got to are left behind: each is keyed by where
# its token starts, and a driver without one scans again).
_KEPT = ("pos", "taken", "last_end", "last_start", "last_term", "calls", "may_close", "may_end", "stray", "deep",
         "closed_at", "prose_at", "shut", "line_end", "ended")  # fmt: skip
_KEEP = attrgetter(*_KEPT)  # (a driver's _KEPT, read at once: a checkpoint a pyframe list hands over)


class Checkpoint:
    """A driver as it stood right after a token was fed: the state a new driver of the
    same region takes up (resume) to read the text after it, where it would otherwise
    read the region again from its start. Where the tokens before are the same either
    way (a plain list's, see pyframe.Part; or the same text read the same way, as a
    salvage's replay reads it), the parse table is in the same state there. A salvage
    reads the region again up to where it may be closed, and replays it for those
    points (_scan/salvage.py): from the region's start, a list of two thousand plain
    calls whose last one is broken was read three times by the driver's own lexer."""

    __slots__ = ("stack", "values", "kept", "repairs", "listed_ends", "paren_ends", "lexed")

    def __init__(self, drv: Any) -> None:
        self.stack = list(drv.stack)
        # (A reduce takes the list of an inlined rule's tree, `_list`'s, left-recursive,
        # and extends it in place, as Lark's tree builder does: each tree is kept with
        # the length of its children then, which later reduces only add to.)
        self.values = [(v, len(v.children)) if type(v) is Tree else (v, -1) for v in drv.values]
        self.kept = _KEEP(drv)
        self.repairs = list(drv.repairs)
        # (The lists closed before their call's `)` so far (Driver._close_list): each such
        # call's closed_tag, which the region's decode gives it, as a reading from the
        # start would have noted them. The driver's list, which it only appends to, and
        # its length then: a copy at each of a thousand lists was the square of them.)
        ends = getattr(drv, "listed_ends", None)
        self.listed_ends = (ends, len(ends)) if ends else None
        ends = getattr(drv, "paren_ends", None)  # (of those, the `]`s written for a call's `)`)
        self.paren_ends = (ends, len(ends)) if ends else None
        # (The tokens it read (Driver.lexed), which it only appends to, and their count.)
        lexed = getattr(drv, "lexed", None)
        self.lexed = (lexed, len(lexed)) if lexed else None

    @property
    def pos(self) -> int:
        return self.kept[0]

    @property
    def between(self) -> bool:
        """Whether it stands right after a call's `)`, between calls (a pyframe list's)."""
        return self.kept[4] == "RPAR"

    def resume(self, drv: Any) -> None:
        """Put drv, a new driver of the same region, where this one stood."""
        drv.stack = list(self.stack)
        drv.values = [v if n < 0 else Tree(v.data, v.children[:n], v._meta) for v, n in self.values]
        for name, value in zip(_KEPT, self.kept):
            setattr(drv, name, value)
        drv.repairs = list(self.repairs)
        if self.listed_ends is not None:
            ends, n = self.listed_ends
            drv.listed_ends = ends[:n]
        if self.paren_ends is not None:
            ends, n = self.paren_ends
            drv.paren_ends = ends[:n]
        if self.lexed is not None:
            lexed, n = self.lexed
            drv.lexed = lexed[:n]
