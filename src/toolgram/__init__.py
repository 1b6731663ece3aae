"""toolgram: read tool calls out of a language model's raw text.

Each format is a Lark grammar file; parse() finds call regions, frames them with
the grammar, decodes payloads with json.loads, repairs what models commonly
break (once, and says so) and never raises.

The core is listed in __all__; the stream's events, tools and prompts are the
public modules toolgram.events, toolgram.tools and toolgram.prompts. Their names
are importable from toolgram itself too, as they always were. toolgram.openai gives
a reply in the OpenAI chat-completions shape, whole or streamed (its names only there).
"""

from . import events, openai, prompts, tools
from ._constrain.grammar import constrain
from ._grammar.catalog import formats_table
from ._grammar.registry import Format, GrammarError
from ._pipeline import parse
from ._result.model import ParseResult, Segment, ToolCall
from ._stream.mfcs import MfcsSession
from ._stream.parser import StreamParser
from ._stream.prose_filter import ProseFilter

# Not in __all__: the warning a questionable grammar gives when it is loaded, to filter
# (warnings.simplefilter("error", toolgram.GrammarWarning)); see grammars/README.md.
from ._grammar.header import GrammarWarning

# (Importable from toolgram as before; documented in their modules.)
from .events import ArgumentsDelta, CallCancelled, CallDone, CallStart, Error, Event, Reasoning, Text
from .prompts import PROMPT_FORMATS, example_call, register_prompt, render_call, render_prompt, render_results
from .tools import Tool, ToolSet, normalize_tools, validate

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
