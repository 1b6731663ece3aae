"""Differential check of the plain-call shortcuts: pyframe._call and _arg (a plain call
of a list, or an argument, put on the parse stack whole, its tree made without the
table), Builder._plain (a call of a name and one-token arguments read without the
walk of its parts) and Builder._loose_args (Gemma's arguments written the same,
decoded once a region). For every corpus case, N generated or mutated Python call
lists (the inputs of diff_pyframe.py, and long lists: a keyword repeated, calls before
a broken one) and N replies of Gemma's bare calls (diff_gemframe.py's), parse() with them and without them must give equal results, segments, ids and
spans included; and a stream of each (deltas of 1, 2, 3, 7, 64 characters and random
ones) must give parse()'s.

    python benchmarks/diff_plain_calls.py [N] [SEED]

Prints the inputs, how many calls each shortcut took (in parse() and the streams), and the
mismatches
(each kept as /tmp/plain-calls-badK.pkl: (raw, tools, options)).
"""

import random
import sys

from toolgram._build import builder
from toolgram._scan import pyframe

import diff_gemframe as _gemma
import diff_pyframe as _inputs

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1

taken = [0, 0, 0]  # (calls put on the stack whole, arguments put so; calls read by Builder._plain)
_call, _arg, _plain_parts, _shortcut = pyframe._call, pyframe._arg, builder._plain_parts, pyframe._shortcut
_loose_args = builder.Builder._loose_args


def counted_call(*args):
    got = _call(*args)
    taken[0] += got >= 0
    return got


def counted_arg(*args):
    got = _arg(*args)
    taken[1] += got >= 0
    return got


_plain = builder.Builder._plain


def counted_plain(*args):
    # (Counted here, not in _plain_parts: a call pyframe._call made is plain by its
    # making, Meta.plain, and not asked of _plain_parts.)
    taken[2] += 1
    return _plain(*args)


def shortcuts(on: bool) -> None:
    pyframe._call, pyframe._arg = counted_call, counted_arg
    builder._plain_parts = _plain_parts if on else lambda node: None
    builder.Builder._plain = counted_plain
    pyframe._shortcut = _shortcut if on else lambda c: None
    builder.Builder._loose_args = _loose_args if on else lambda self, text, cut: builder.decode_loose(text, cut)


def with_and_without(raw: str, tools, options: dict, rng: random.Random) -> bool:
    """Whether parse() gives the same with the shortcuts and without them, and a stream
    (with them) gives parse()'s."""
    shortcuts(True)
    on = _inputs.outcome(raw, tools, options, True)
    shortcuts(False)
    try:
        off = _inputs.outcome(raw, tools, options, True)
    finally:
        shortcuts(True)
    return on == off and _inputs.streamed(raw, tools, options, rng)


def long_lists(rng):
    """Lists of many calls, and one call of many arguments, cut and closed."""
    for _ in range(40):
        unit = _inputs.call(rng)
        k = rng.choice((5, 30, 200))
        tail = rng.choice(("", "g(b=)]", "g(b='x", "]", "]\n[h(1)]", "'g()']", "g(b=1,)]", "g(b='it's', c=1)]"))
        sep = rng.choice((", ", ",\n", ","))
        yield "[" + (unit + sep) * k + tail, rng.choice((None, _inputs.NAMES)), {}
        key = rng.choice(_inputs.KEYS)
        value = rng.choice(_inputs.VALUES)
        body = "[run(cmd='a', " + f"{key}={value}, " * k
        yield body, ["run"], {}
        yield body + "x=1)]", ["run"], {}
        yield body[:-2] + ")]" + rng.choice(("", "\n", " done")), rng.choice((None, ["run"])), {}


def main() -> int:
    rng = random.Random(SEED)
    cases = list(_inputs.corpus()) + [_inputs.generated(rng) for _ in range(N)] + list(long_lists(rng))
    cases += [_gemma.generated(rng) for _ in range(N)]
    bad = _inputs.mismatches(cases, rng, "plain-calls", same=with_and_without)
    print(f"{len(cases)} inputs, {taken[0]} calls and {taken[1]} arguments put on the stack whole, {taken[2]} calls read by Builder._plain, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
