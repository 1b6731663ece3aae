"""The formats tables (_grammar/catalog.py) with their "streams arguments" column: what
StreamParser(announce="name") (CompletionStream's and toolgram serve's default,
arguments="as_written") sends of a format's calls before their end. It is this layer's to say:
a JSON call object streams when the format's fast frame reads it (_scan/fastpath.py), XML-ish
parameters when the header declares their tags. (Its "call done at" column as the header
tells it; toolgram/_catalog.py measures it, rendering calls with _constrain.)"""

from __future__ import annotations

from .._grammar import catalog as _tables
from .._grammar.registry import Format
from .._scan import fastpath

__all__ = ["formats_table", "short_table", "streams_arguments"]


def streams_arguments(fmt: Format) -> str:
    """"yes": a JSON call object whose name comes first, or that follows the opener its
    header declares (`stream_json:`), as it is written (JsonEcho), or the keyword arguments
    of a list of Python-style calls or of a lone one (`stream_python:`, `stream_pycall:`,
    PyEcho), or Gemma's loose object (`stream_loose:`, LooseEcho); "per parameter": the
    parameters of the tags its header declares (XmlParamEcho); ""."""
    declared = _tables._declared(fmt)
    if declared:
        return declared
    return "yes" if type(fastpath.frame_of(fmt)) is fastpath.Frame else ""


def formats_table(formats: list[Format] | None = None) -> str:
    """docs/formats.md's table (see _grammar/catalog.formats_table)."""
    return _tables.formats_table(formats, streams_arguments)


def short_table(formats: list[Format] | None = None) -> str:
    """The README's table (see _grammar/catalog.short_table)."""
    return _tables.short_table(formats, streams_arguments)
