"""Differential check of parse()'s region memo (src/toolgram/_scan/storm.py): for N
inputs -- marker storms of one to three units (a format's marker and what follows it,
a fragment, a corpus case's start; mutated at times), corpus cases repeated and
mutated, and fuzz.py's generators -- parse() with the memo (storm.enabled) and without
it must give equal results, segments included.

    python benchmarks/diff_storm_memo.py N [SEED]

Prints the inputs, how many took an outcome from the memo, how many regions did, and
the mismatches (each kept as /tmp/storm-memo-badK.pkl: (raw, tools, formats, in_think)).
"""

import pickle
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz  # noqa: E402
import toolgram  # noqa: E402
from toolgram._scan import storm  # noqa: E402

N = int(sys.argv[1])
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ctx = fuzz.context()
hits = [0]
_orig = storm._moved


def counting(items, start):
    hits[0] += 1
    return _orig(items, start)


storm._moved = counting
PRE = ["", "Sure.\n", "<think>", "<think>x</think>", "`", "'", '"', "  ", "\n", "text `", "[", "x\n\n", "```\n"]
MID = [
    "",
    " ",
    "\n",
    "x",
    "{",
    "[",
    "(",
    '{"',
    '{"name": "f"',
    '{"name": "f", "arguments": {',
    "f(",
    "`",
    "'",
    '"',
    "<",
    "</",
    "}",
    "]",
    ">",
    "\n\n",
    "a b",
    "call:f{",
    "</think>",
    "<think>",
]


def storm_input(rng):
    names = [n for n, (s, _) in ctx.formats.items() if s]
    units = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        starts, ends = ctx.formats[rng.choice(names)]
        m = rng.choice(starts + ends if rng.random() < 0.2 else starts)
        r = rng.random()
        if r < 0.5:
            u = m + rng.choice(MID)
        elif r < 0.7:
            u = rng.choice(MID) + m + rng.choice(MID)
        elif r < 0.85:
            u = (
                m
                + rng.choice(fuzz.FRAGMENTS)
                + (rng.choice(ends) if ends and rng.random() < 0.5 else "")
                + rng.choice(("", "\n", " "))
            )
        else:
            case = rng.choice(ctx.corpus)
            u = case.raw[: rng.randint(1, max(1, min(len(case.raw), 200)))]
        units.append(u)
    size = rng.choice((600, 1500, 3000, 6000, 12000))
    if rng.random() < 0.3:
        body = []
        tot = 0
        while tot < size:
            u = rng.choice(units)
            body.append(u)
            tot += len(u)
        body = "".join(body)
    else:
        unit = "".join(units)
        body = unit * (size // max(1, len(unit)) + 1)
    body = rng.choice(PRE) + body[:size]
    if rng.random() < 0.3:
        body = fuzz.mutate(rng, ctx, body)
    if rng.random() < 0.2:
        body += rng.choice(("", "\n", " done", "</tool_call>", "}"))
    tools = None
    if rng.random() < 0.3:
        tools = ["f", "get_weather", "x"]
    in_think = rng.random() < 0.05
    return body, tools, None, in_think


def corpus_input(rng):
    case = rng.choice(ctx.corpus)
    raw = case.raw
    k = rng.randint(3, 40)
    sep = rng.choice(("", "\n", "\n\n", " "))
    raw = (raw + sep) * k
    if rng.random() < 0.7:
        raw = fuzz.mutate(rng, ctx, raw)
    return raw[:32768], case.tools if rng.random() < 0.7 else None, case.formats, case.in_think


def fuzz_input(rng, i):
    inp = fuzz.make_input(SEED, i, generator=rng.choice(("markers", "mutate", "soup", "deep", "unicode")))
    return inp.raw, inp.case_tools, inp.formats, inp.in_think


def canon(r):
    return repr(r) + "|" + repr(list(r.segments))


def run(raw, tools, formats, in_think):
    storm.enabled = True
    a = toolgram.parse(raw, tools, formats=formats, in_think=in_think)
    storm.enabled = False
    b = toolgram.parse(raw, tools, formats=formats, in_think=in_think)
    storm.enabled = True
    return canon(a) == canon(b), a, b


rng = random.Random(SEED)
bad = 0
used = 0
t0 = time.time()
for i in range(N):
    kind = i % 3
    if kind == 0:
        args = storm_input(rng)
    elif kind == 1:
        args = corpus_input(rng)
    else:
        args = fuzz_input(rng, i)
    h0 = hits[0]
    try:
        ok, a, b = run(*args)
    except Exception as e:
        print("EXC", i, repr(e))
        ok = False
        a = b = None
    used += hits[0] > h0
    if not ok:
        bad += 1
        if bad <= 5:
            print("MISMATCH", i, repr(args[0][:200]), args[1:])
            pickle.dump(args, open(f"/tmp/storm-memo-bad{bad}.pkl", "wb"))
print(f"inputs {N}, memo used in {used}, regions from memo {hits[0]}, mismatches {bad}, {time.time() - t0:.0f}s")
