"""The never-raise guard's one rule: which exceptions it may turn into an error.

parse(), the stream and the prose filter promise never to raise for any reply:
a bug of ours becomes an error result and the reply is kept as prose. But some
exceptions are not ours to swallow: running out of memory, a timeout, or any
exception that code outside toolgram raised while toolgram ran (a caller's
signal handler enforcing a deadline). Those pass through; only exceptions raised
by toolgram itself, Lark, `regex` or the standard library it calls are caught.
(KeyboardInterrupt and SystemExit are BaseExceptions, never caught at all.)

Whose code raised is told by the module of the innermost frame (its globals'
`__name__`), not its file: code made at run time (a dataclass's `__init__`) has
no file but its module's globals, and a caller's handler in `python -c`, a
notebook or exec() has no file either, and is `__main__` or the caller's module.
"""

from __future__ import annotations

import sys

_PASS = (MemoryError, TimeoutError)

# The top-level packages whose code toolgram runs.
_OURS = frozenset({__package__ or "toolgram", "lark", "regex", "_regex"}) | frozenset(sys.stdlib_module_names)


def passes_through(exc: BaseException) -> bool:
    """Whether the guard must let `exc` through rather than report it."""
    if isinstance(exc, _PASS):
        return True
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    module = tb.tb_frame.f_globals.get("__name__") or ""
    return module.partition(".")[0] not in _OURS
