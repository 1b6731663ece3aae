"""Tools the model may call: what parse() and StreamParser take as `tools=`.

    from toolgram.tools import Tool, ToolSet, normalize_tools, validate
"""

from ._tools.tools import Tool, ToolSet, normalize_tools
from ._tools.validate import validate

__all__ = ["Tool", "ToolSet", "normalize_tools", "validate"]
