"""The values parse() returns: ToolCall and ParseResult."""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True)
class ToolCall:
    """One call the model made.

    `span` is the (start, end) slice of the raw reply that the call was read from,
    markers included; `repairs` names, in order, every repair the call needed.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    kind: str = "tool"  # "tool", "agent" or "memory" (MFCS blocks)
    format: str = ""
    span: tuple[int, int] = (0, 0)
    repairs: tuple[str, ...] = ()
    # MFCS <instructions>: informative, so not part of equality.
    instructions: str | None = field(default=None, compare=False, repr=False)

    def to_openai(self) -> dict[str, Any]:
        """This call as an OpenAI `tool_calls` entry: `{"id", "type": "function",
        "function": {"name", "arguments": <JSON text>}}`. Without a model-written id, the id
        is derived from name, kind and where the span starts, so the same reply gives the same
        ids (and a stream can give it before the arguments have arrived)."""
        from .openai import call_to_openai

        return call_to_openai(self)


class Segment(NamedTuple):
    """A slice of the raw reply and where it went: "text", "reasoning", "call" (a region
    that gave a call), "error" (a call refused, or markup no format could read) or
    "markup" (a format's markers that hold no call: a message's header, a list of none,
    the opener, end marker and inner markup of a call that could not be read, whose
    payload stays prose and whose error is in `errors`, with no "error" segment of its
    own).
    (A named tuple: a reply of many calls has twice as many segments, and a tuple is
    made in a fifth of a frozen dataclass's time; see make_segment.)"""

    kind: str
    start: int
    end: int


def make_segment(kind: str, start: int, end: int, _new=tuple.__new__) -> Segment:
    """Segment(kind, start, end) without the generated __new__'s extra call."""
    return _new(Segment, (kind, start, end))


@dataclass
class ParseResult:
    """What parse() read out of a reply."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    reasoning: str = ""
    # Every character of the raw reply lies in exactly one segment (the audit trail).
    segments: list[Segment] = field(default_factory=list, compare=False, repr=False)

    def to_openai_message(self) -> dict[str, Any]:
        """The reply as an OpenAI assistant message: `{"role": "assistant", "content": text
        or None, "tool_calls": [...] (when any), "reasoning_content": ... (when any)}`."""
        from .openai import result_to_openai_message

        return result_to_openai_message(self)


class CallRun(tuple):
    """A run of calls the fast path read one after another, each after the prose
    before it (maybe none), standing in a list of segments for the segments it
    makes: ("call", start, end, calls). Its text segments are the gaps between
    `start` and the calls' spans; its call segments, the spans. Made whole only when
    `ParseResult.segments` is first read (most callers never read it: a reply of
    ten calls made twenty tuples for it, a tenth of parse()'s time). Its [0] and [2]
    are what a segment's are where the Assembler looks at the last one (a "call"
    ending where the last call ends): nothing is ever joined to it."""

    __slots__ = ()


def expand_segments(parts: list, _new=tuple.__new__) -> list[Segment]:
    """The segments a list holding CallRuns stands for."""
    out: list[Segment] = []
    add = out.append
    for part in parts:
        if type(part) is not CallRun:
            add(part)
            continue
        _, pos, _, calls = part
        for call in calls:
            start, end = span = call.span
            if pos < start:
                add(_new(Segment, ("text", pos, start)))
            add(_new(Segment, ("call", *span)))
            pos = end
    return out


class _LazySegments:
    """ParseResult.segments where the result was made with CallRuns in its segments
    (lazy_result): expanded when first read, then an attribute like any other (it
    replaces this in the instance's __dict__, as functools.cached_property does).
    A result made by ParseResult(...) has its list in its __dict__ from the start."""

    def __get__(self, result: Any, owner: Any = None) -> Any:
        if result is None:
            return self
        own = result.__dict__
        parts = own.get("_segment_parts")
        # (Set before the parts are dropped, and the first list set kept: a thread that
        # reads it meanwhile makes the same list, or finds this one.)
        segments = own.setdefault("segments", [] if parts is None else expand_segments(parts))
        own.pop("_segment_parts", None)
        return segments


ParseResult.segments = _LazySegments()  # type: ignore[assignment]  # (after the dataclass is made: see above)


def lazy_result(
    text: str, calls: list, errors: list, reasoning: str, parts: list, _new=object.__new__, _set=object.__setattr__
) -> ParseResult:
    """ParseResult(text, calls, errors, reasoning, segments), its segments given as
    `parts`, which may hold CallRuns: expanded when first read (see _LazySegments)."""
    result = _new(ParseResult)
    _set(result, "__dict__", {"text": text, "calls": calls, "errors": errors, "reasoning": reasoning, "_segment_parts": parts})
    return result


def make_call(
    name: str,
    arguments: dict[str, Any],
    id: str | None,
    kind: str,
    format: str,
    span: tuple[int, int],
    repairs: tuple[str, ...],
    instructions: str | None,
    _new=object.__new__,
    _set=object.__setattr__,
) -> ToolCall:
    """ToolCall(...) without the frozen dataclass's __init__, which sets each field
    through object.__setattr__: the instance is given its __dict__ whole, in a third
    of the time (the fast path makes one per call it reads). Takes every field, so
    it cannot drift from the class (tests/test_public_api.py)."""
    call = _new(ToolCall)
    _set(call, "__dict__", {
        "name": name, "arguments": arguments, "id": id, "kind": kind, "format": format, "span": span,
        "repairs": repairs, "instructions": instructions,
    })  # fmt: skip
    return call


def moved_call(call: ToolCall, span: tuple[int, int], _new=object.__new__, _set=object.__setattr__) -> ToolCall:
    """dataclasses.replace(call, span=span) without its round through the frozen
    __init__ (each field set through object.__setattr__, after a look at every field):
    a stream moves each call the fast path reads to where it is in the reply."""
    moved = _new(ToolCall)
    _set(moved, "__dict__", {**call.__dict__, "span": span})
    return moved


class TextOf:
    """A reply, or a piece of one, given as something other than a str: None is "",
    bytes are UTF-8 (a byte that is not becomes U+FFFD), anything else is its str().
    Pieces of bytes are decoded as one text: a character split between two pieces
    comes whole with the second (rest(): what the last piece left undecoded)."""

    def __init__(self) -> None:
        self._decoder: Any = None

    def __call__(self, value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, (bytes, bytearray, memoryview)):
            if self._decoder is None:
                self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
            return self._decoder.decode(bytes(value))
        return str(value)

    def rest(self) -> str:
        return "" if self._decoder is None else self._decoder.decode(b"", final=True)
