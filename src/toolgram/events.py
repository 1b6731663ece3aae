"""Events a StreamParser reports while a reply streams in.

    from toolgram.events import Text, Reasoning, CallStart, ArgumentsDelta, CallDone, CallCancelled, Error
"""

from __future__ import annotations

from dataclasses import dataclass

from ._result.model import ToolCall

__all__ = ["ArgumentsDelta", "CallCancelled", "CallDone", "CallStart", "Error", "Event", "Reasoning", "Text"]


@dataclass(frozen=True)
class Text:
    """Prose that is safe to show: it will not turn out to be part of a call."""

    text: str


@dataclass(frozen=True)
class Reasoning:
    """Text from inside <think>…</think>."""

    text: str


@dataclass(frozen=True)
class CallStart:
    """A call's name is known. `index` is its position in the final result.calls (with
    announce="name", once a call was withdrawn, one more per withdrawn call: an index
    is never given twice, see CallCancelled). `id` is the id result.to_openai_message()
    gives the call: the model's own (MFCS call_id, Mistral [CALL_ID]), otherwise one
    generated from its name, kind and where it starts (not from its arguments, so it is
    known with the name). The CallDone's `call.id` stays what parse() gives: the
    model's own or None."""

    index: int
    name: str
    id: str | None = None


@dataclass(frozen=True)
class ArgumentsDelta:
    """More of the call's arguments as JSON text; a call's deltas concatenated equal
    json.dumps(call.arguments, ensure_ascii=False) of its CallDone call."""

    index: int
    text: str


@dataclass(frozen=True)
class CallDone:
    index: int
    call: ToolCall


@dataclass(frozen=True)
class Error:
    message: str


@dataclass(frozen=True)
class CallCancelled:
    """StreamParser(announce="name") only: the call announced at `index` by its name
    did not turn out to be that call (its region could not be read, or read as
    something else). It gets no CallDone, and `index` is not given again: the next
    call announced (that region sent again whole, or the next) takes the next index.
    (A stream of OpenAI chunks cannot take anything back: a client given index 0 for
    the withdrawn call would glue the next call's name and arguments onto it.)"""

    index: int


Event = Text | Reasoning | CallStart | ArgumentsDelta | CallDone | Error | CallCancelled
