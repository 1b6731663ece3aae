"""The formats tables (_grammar/catalog.py) with their "streams arguments" column: what
StreamParser(announce="name") (CompletionStream(arguments="as_written"), toolgram serve
--stream-arguments) sends of a format's calls before their end. It is this layer's to say:
a JSON call object streams when the format's fast frame reads it (_scan/fastpath.py), XML-ish
parameters when the header declares their tags. And its "call done at" column: where
StreamParser completes a call (CallDone) when the reply goes on after it (call_done_at)."""

from __future__ import annotations

from .._grammar import catalog as _tables
from .._grammar.registry import Format
from .._scan import fastpath
from ..events import CallDone

__all__ = ["call_done_at", "formats_table", "short_table", "streams_arguments"]

AT_END, AT_NEXT_TEXT, AT_REPLY_END = _tables.AT_END, _tables.AT_NEXT_TEXT, _tables.AT_REPLY_END
# What follows the call in call_done_at's reply: a sentence on the next line.
AFTER = "\nThen I will tell you what it says."


def streams_arguments(fmt: Format) -> str:
    """"yes": a JSON call object whose name comes first, or that follows the opener its
    header declares (`stream_json:`), as it is written (JsonEcho), or the keyword arguments
    of a list of Python-style calls (`stream_python:`, PyEcho); "per parameter": the
    parameters of the tags its header declares (XmlParamEcho); ""."""
    declared = _tables._declared(fmt)
    if declared:
        return declared
    return "yes" if type(fastpath.frame_of(fmt)) is fastpath.Frame else ""


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
    from .._constrain.canonical import render_call  # (the stream does not need it)

    return render_call({"name": "get_weather", "arguments": {"city": "Paris"}}, fmt)


def _measured_end(fmt: Format) -> int:
    return len(_measured_call(fmt))


def _done_at(fmt: Format) -> int | None:
    """The number of characters of the measured reply fed when its call's CallDone came;
    None: at flush()."""
    from .parser import StreamParser  # (parser imports this package's modules)

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
