"""toolgram: read tool calls out of a language model's raw text.

Each format is a Lark grammar file; parse() finds call regions, frames them with
the grammar, decodes payloads with json.loads, repairs what models commonly
break (once, and says so) and never raises.
"""

from .events import ArgumentsDelta, CallCancelled, CallDone, CallStart, Error, Event, Reasoning, Text
from ._stream.mfcs import MfcsSession
from ._result.model import ParseResult, Segment, ToolCall
from ._pipeline import parse
from ._tools.prompts import PROMPT_FORMATS, example_call, register_prompt, render_prompt, render_results
from ._stream.prose_filter import ProseFilter
from ._grammar.registry import Format, GrammarError
from ._stream.parser import StreamParser
from ._tools.tools import Tool, ToolSet, normalize_tools
from ._tools.validate import validate

__all__ = [
    "PROMPT_FORMATS",
    "ArgumentsDelta",
    "CallCancelled",
    "CallDone",
    "CallStart",
    "Error",
    "Event",
    "Format",
    "GrammarError",
    "MfcsSession",
    "ParseResult",
    "ProseFilter",
    "Reasoning",
    "Segment",
    "StreamParser",
    "Text",
    "Tool",
    "ToolCall",
    "ToolSet",
    "example_call",
    "formats_table",
    "normalize_tools",
    "parse",
    "register_prompt",
    "render_prompt",
    "render_results",
    "validate",
]

__version__ = "0.1.0"


def formats_table(formats: list[Format] | None = None) -> str:
    """The built-in formats as a Markdown table (docs/formats.md's; see toolgram._audit.catalog)."""
    from ._audit.catalog import formats_table as table  # imported late: `python -m toolgram._audit.catalog` runs it

    return table(formats)
