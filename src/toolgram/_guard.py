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

import contextlib
import signal
import sys
from collections.abc import Iterator

_PASS = (MemoryError, TimeoutError)

# The top-level packages whose code toolgram runs (jsonschema and what it calls: only
# under validate=True).
_OURS = frozenset(
    {__package__ or "toolgram", "lark", "regex", "_regex", "jsonschema", "jsonschema_specifications", "referencing", "rpds", "attr", "attrs"}
) | frozenset(sys.stdlib_module_names)


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


# Set by the test suite (tests/conftest.py), never by a user: a bug of ours then raises
# out of the guards that would have made it an "internal error" result (or, in the
# stream, a quiet fall back to the slow way), so the test that met it fails there. A
# merge once broke the storm reading in a way every test "passed": the guard turned the
# ValueError into internal-error results that only the fuzz counted.
raise_bugs = False


def escapes(exc: BaseException) -> bool:
    """Whether exc leaves a guard around the reading of a reply (parse(), the stream,
    the prose filter): what passes_through lets through, and, in the test suite, every
    exception."""
    return raise_bugs or passes_through(exc)


def fatal(exc: BaseException) -> bool:
    """Whether exc must pass even where foreign code is expected to fail (a plugin's
    entry point): out of memory, or a timeout."""
    return isinstance(exc, _PASS)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold back signals while code that swallows every Exception runs: Lark loading a
    grammar from its cache (on any failure it logs and rebuilds) and the standard
    library's entry-point discovery (`suppress(Exception)` around each listdir). A
    caller's deadline raised from a signal handler in there would be lost, and the
    parse it was meant to stop would go on; held back, the handler runs (and raises)
    right after, in toolgram's own code, which lets it through."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:  # (Windows: no signal masks, and no SIGALRM either)
        yield
        return
    old = mask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, old)
