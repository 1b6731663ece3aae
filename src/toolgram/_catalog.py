"""The formats tables as toolgram.formats_table and the README give them: _stream/catalog.py's,
with the "call done at" column measured (call_done_at): where StreamParser completes a call
(its CallDone) when the reply goes on after it. It renders calls (render_call), so it sits
above _stream and _constrain."""

from __future__ import annotations

from ._constrain.canonical import render_call
from ._grammar import catalog as _tables
from ._grammar.registry import Format
from ._stream.catalog import streams_arguments
from ._stream.parser import StreamParser
from .events import CallDone

__all__ = ["call_done_at", "formats_table", "short_table"]

AT_END, AT_NEXT_TEXT, AT_REPLY_END = _tables.AT_END, _tables.AT_NEXT_TEXT, _tables.AT_REPLY_END
# What follows the call in call_done_at's reply: a sentence on the next line.
AFTER = "\nThen I will tell you what it says."


def call_done_at(fmt: Format) -> str:
    """Where StreamParser completes a call of `fmt` when the reply goes on after it:
    with the delta that brings the call's last character (AT_END: its end marker, or
    the bracket that closes its list), at the text after it (AT_NEXT_TEXT: a format whose
    call may go on or be followed by one more, as llama3_json's bare object, Mistral's
    NAME[ARGS]{…} or a Python list, is over only once text that cannot continue it comes;
    a reply that ends right after such a call completes it at flush()), or at flush()
    whatever follows (AT_REPLY_END: a region that is the whole reply).
    A format with a canonical form is measured: one call as its chat template writes it
    (render_call) and a sentence after it, streamed a character at a time. Any other
    is told by its header (_grammar/catalog._done_by_header). tests/test_call_done_at.py
    checks the column against the stream on each format's corpus cases."""
    if fmt.anchor == "whole" or "canonical" not in fmt.canonical:
        return _tables._done_by_header(fmt)
    at = _done_at(fmt)
    if at is None:
        return AT_REPLY_END
    return AT_END if at <= _measured_end(fmt) else AT_NEXT_TEXT


_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def _measured_call(fmt: Format) -> str:
    return render_call({"name": "get_weather", "arguments": {"city": "Paris"}}, fmt)


def _measured_end(fmt: Format) -> int:
    return len(_measured_call(fmt))


def _done_at(fmt: Format) -> int | None:
    """The number of characters of the measured reply fed when its call's CallDone came;
    None: at flush()."""
    reply = _measured_call(fmt) + AFTER
    stream = StreamParser(_TOOLS, formats=[fmt])
    for i, char in enumerate(reply):
        if any(isinstance(event, CallDone) for event in stream.feed(char)):
            return i + 1
    return None


def formats_table(formats: list[Format] | None = None) -> str:
    """docs/formats.md's table (see _grammar/catalog.formats_table)."""
    return _tables.formats_table(formats, streams_arguments, call_done_at)


def short_table(formats: list[Format] | None = None) -> str:
    """The README's table (see _grammar/catalog.short_table)."""
    return _tables.short_table(formats, streams_arguments, call_done_at)
