"""Grammar files to compiled formats: headers, the Lark build, the registry."""

from . import compile  # noqa: F401 (a Format compiles on first use through it: header.compile_format)
