"""The never-raise guard's one rule: which exceptions it may turn into an error.

parse(), the stream and the prose filter promise never to raise for any reply:
a bug of ours becomes an error result and the reply is kept as prose. But some
exceptions are not ours to swallow: running out of memory, a timeout, or any
exception that code outside toolgram raised while toolgram ran (a caller's
signal handler enforcing a deadline). Those pass through; only exceptions raised
by toolgram itself, Lark, `regex` or the standard library it calls are caught.
(KeyboardInterrupt and SystemExit are BaseExceptions, never caught at all.)
"""

from __future__ import annotations

import os
import sys
import sysconfig

import lark
import regex

_PASS = (MemoryError, TimeoutError)


def _home(module) -> str:
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


# Where code that toolgram runs lives: an exception raised in a frame anywhere else
# (the innermost one) was raised by someone else's code, such as a signal handler.
_OURS = (_home(sys.modules[__package__]), _home(lark), _home(regex))
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_INSTALLED = ("site-packages", "dist-packages")  # (under the stdlib folder, but not it)


def passes_through(exc: BaseException) -> bool:
    """Whether the guard must let `exc` through rather than report it."""
    if isinstance(exc, _PASS):
        return True
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_code.co_filename
    if where.startswith("<"):  # (code made at run time: a dataclass's __init__, …)
        return False
    where = os.path.abspath(where)
    if where.startswith(_OURS):
        return False
    return not where.startswith(_STDLIB) or any(part in where for part in _INSTALLED)
