"""What the driver and its recovery moves share: the token and the statuses."""

from __future__ import annotations

WAIT, DONE, FAIL = "wait", "done", "fail"
WAIT_MORE = "more"  # internal: a repair made room, read on
PAUSE = "pause"  # run() stopped after the terminal Driver.pause names (see there)


class Tok:
    """A token: lighter than lark.Token, which the tree callbacks don't need."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int) -> None:
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r})"


_SNIPPET = 20  # characters of the text a failure quotes


def _snippet(buf: str, pos: int) -> str:
    if pos >= len(buf):
        return "end of reply"
    piece = buf[pos : pos + _SNIPPET]
    return repr(piece + ("…" if len(buf) > pos + _SNIPPET else ""))


class Unbounded(Exception):
    """A driver's reading of the text up to a list's `]` (Driver.stop, run's LISTED) met a
    step that reads no bound but the text's end: caught by Driver._run, which reads on
    from that step in the text cut there (a copy), as it did in every step before."""
