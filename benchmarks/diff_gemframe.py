"""Differential check of the gemma4_bare line lexer (src/toolgram/_scan/gemframe.py): for
every corpus case (each format, with its tools and options) and N generated or mutated
replies of Gemma's bare calls (with tools, without, repeated), parse() with the fast
paths (fastpath.enabled) and without them must give equal results, segments included;
and a stream of each, in deltas of 1, 2, 3, 7 and 64 characters and random ones, must
give parse()'s.

    python benchmarks/diff_gemframe.py [N] [SEED]

Prints the inputs, how many lines the fast tokens read (in parse()), and the mismatches
(each kept as /tmp/gemframe-badK.pkl: (raw, tools, options)).
"""

import random
import sys

from toolgram._scan import gemframe

from diff_pyframe import corpus, mismatches, mutate

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1

hits = [0]
_orig = gemframe.advance


def counting(drv, buf):
    before = drv.taken
    ok = _orig(drv, buf)
    hits[0] += (drv.taken - before) // 4
    return ok


gemframe.advance = counting

NAMES = ["f", "get_weather", "math.factorial", "a-b", "x1", "_p", "é", "名前", "f\u0301"]
VALUES = [
    "1", "-2", "3.5", "true", "null", '<|"|>Paris<|"|>', '<|"|>a, b}<|"|>', '<|"|><tool_call|><|"|>', "[1,2]",
    "{b:1}", "[", "{", "x y", '"q"', "'s'", "<escape>v<escape>", "call:g{}", "", " ",
]
ARGS = ["{}", "()", "{a:1}", "{a:[}", "(", "{", "{a:1", "{a:1}}", "{ }", "{a:1} ok", "{a:<|\"|>x", "{a:b}\r"]
SEPS = ["\n", "\n", "\n", "\n\n", "\n  ", " \n", "\r\n", "\n\t", "\n\u00a0", "\n\x1c", "", " ", "<tool_call|>\n", "\nprose\n"]
PRE = ["", "", "", " ", "\n", "Sure.\n", "<|tool_call>"]
POST = ["", "", "\n", "\nDone.", "<tool_call|>", "<tool_call|>\nafter", "<turn|>", "\n<turn|>", "\n\n"]


def line(rng):
    if rng.random() < 0.5:
        args = rng.choice(ARGS)
    else:
        keys = rng.sample(["a", "b", "city", "n"], rng.choice((0, 1, 2, 3)))
        args = "{" + ",".join(f"{k}:{rng.choice(VALUES)}" for k in keys) + rng.choice(("}", "}", "}", ""))
    return "call:" + rng.choice(NAMES) + args


def generated(rng):
    text = rng.choice(PRE) + line(rng)
    for _ in range(rng.choice((0, 1, 2, 3, 5, 10))):
        text += rng.choice(SEPS) + line(rng)
    text += rng.choice(POST)
    if rng.random() < 0.1:
        text = (text + "\n") * rng.choice((2, 3))
    text = mutate(rng, text)
    r = rng.random()
    tools = None if r < 0.4 else NAMES if r < 0.8 else ["f", "other"]
    return text, tools, {}


def main() -> int:
    rng = random.Random(SEED)
    cases = list(corpus()) + [generated(rng) for _ in range(N)]
    bad = mismatches(cases, rng, "gemframe")
    print(f"{len(cases)} inputs, {hits[0]} lines read by the fast tokens, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
