"""toolgram: read tool calls out of a language model's raw text.

Each format is a Lark grammar file; parse() finds call regions, frames them with
the grammar, decodes payloads with json.loads, repairs what models commonly
break (once, and says so) and never raises.

The core is listed in __all__; the stream's events, tools and prompts are the
public modules toolgram.events, toolgram.tools and toolgram.prompts. Their names
are importable from toolgram itself too, as they always were. toolgram.openai gives
a reply in the OpenAI chat-completions shape, whole or streamed (its names only there).

Importing toolgram loads what parse() needs and nothing more: the other names
(the stream, prompts, constrain, the OpenAI shapes, the catalogue) are imported on
first use (a command-line run, a serverless function or a test process pays for
what it reads, not for the whole library).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Not in __all__: the warning a questionable grammar gives when it is loaded, to filter
# (warnings.simplefilter("error", toolgram.GrammarWarning)); see grammars/README.md.
from ._grammar.header import GrammarWarning  # noqa: F401
from ._grammar.registry import Format, GrammarError
from ._pipeline import parse
from ._result.model import ParseResult, Segment, ToolCall

if TYPE_CHECKING:  # (what _LAZY gives, for type checkers and editors)
    from . import events, openai, prompts, tools
    from ._constrain.grammar import constrain
    from ._catalog import formats_table  # noqa: F401
    from ._stream.mfcs import MfcsSession
    from ._stream.parser import StreamParser
    from ._stream.prose_filter import ProseFilter
    from .events import (  # noqa: F401
        ArgumentsDelta,
        CallCancelled,
        CallDone,
        CallStart,
        Error,
        Event,
        Reasoning,
        Text,
    )
    from .prompts import (  # noqa: F401
        PROMPT_FORMATS,
        example_call,
        register_prompt,
        render_call,
        render_prompt,
        render_results,
    )
    from .tools import Tool, ToolSet, normalize_tools, validate  # noqa: F401

# name -> the module that defines it (a module itself when the name is one of ours),
# imported when the name is first asked for (PEP 562), then kept in globals().
_LAZY = {
    "constrain": "._constrain.grammar",
    "formats_table": "._catalog",
    "MfcsSession": "._stream.mfcs",
    "StreamParser": "._stream.parser",
    "ProseFilter": "._stream.prose_filter",
    **dict.fromkeys(("events", "openai", "prompts", "tools"), ""),
    **dict.fromkeys(("ArgumentsDelta", "CallCancelled", "CallDone", "CallStart", "Error", "Event", "Reasoning", "Text"), ".events"),
    **dict.fromkeys(
        ("PROMPT_FORMATS", "example_call", "register_prompt", "render_call", "render_prompt", "render_results"), ".prompts"
    ),
    **dict.fromkeys(("Tool", "ToolSet", "normalize_tools", "validate"), ".tools"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = import_module(f".{name}" if where == "" else where, __name__)
    if where != "":
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Format",
    "GrammarError",
    "MfcsSession",
    "ParseResult",
    "ProseFilter",
    "Segment",
    "StreamParser",
    "ToolCall",
    "constrain",
    "events",
    "openai",
    "parse",
    "prompts",
    "tools",
]

__version__ = "0.1.0"
