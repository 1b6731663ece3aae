"""toolgram: read tool calls out of a language model's raw text.

Each format is a Lark grammar file; parse() finds call regions, frames them with
the grammar, decodes payloads with json.loads, repairs what models commonly
break (once, and says so) and never raises.
"""

from ._model import ParseResult, Segment, ToolCall
from ._parse import parse
from ._registry import Format, GrammarError
from ._tools import Tool, ToolSet, normalize_tools

__all__ = [
    "Format",
    "GrammarError",
    "ParseResult",
    "Segment",
    "Tool",
    "ToolCall",
    "ToolSet",
    "normalize_tools",
    "parse",
]

__version__ = "0.1.0"
