"""StepEcho: what the echoes that read a call's arguments one state at a time share
(XmlParamEcho's XML-ish parameters, LooseEcho's Gemma-style objects, AttrEcho's BFCL
attributes).

Such an echo is fed the call's text as it comes and gives back the JSON text its final
arguments start with, as far as it is certain. Each state is a method `_<state>(s, out)`
that reads from the text not read yet, puts what is certain in `out`, and returns the
rest (the next state reads it) or None, having kept what it cannot tell yet (`_hold`):
the next feed begins with it. What is held is bounded: past `most` characters the echo
stops for good (`stopped`) and the rest comes with the call's end, where the caller checks
that the final text starts with what was sent.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HOLD", "StepEcho"]

HOLD = 200  # what a state may hold back by default (a key, an attribute, a closers' run)


class _Steps(dict):
    """A class's state methods by state name, looked up once each (feed runs one or two
    states a delta: `getattr(self, "_" + state)` there cost a stream 4-7% a delta)."""

    def __init__(self, cls: type) -> None:
        super().__init__()
        self.cls = cls

    def __missing__(self, state: str) -> Any:
        step = self[state] = getattr(self.cls, "_" + state)
        return step


class StepEcho:
    state: str
    stopped = False
    held = ""
    _steps: _Steps

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._steps = _Steps(cls)

    def feed(self, text: str) -> str:
        """The arguments' JSON text that `text` (after what was fed before) makes certain;
        "" when none, or once stopped."""
        if self.stopped:
            return ""
        out: list[str] = []
        s: str | None = self.held + text
        self.held = ""
        while s is not None and not self.stopped:
            s = self._steps[self.state](self, s, out)
        if self.stopped:
            self.held = ""
        return "".join(out)

    def _stop(self) -> None:
        self.stopped = True

    def _hold(self, s: str, most: int = HOLD) -> None:
        """Wait with s for the next feed; past `most` characters, stop."""
        self.held = s
        if len(s) > most:
            self.stopped = True
