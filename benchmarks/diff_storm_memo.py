"""Differential check of the region memo (src/toolgram/_scan/storm.py): for N
inputs -- marker storms of one to three units (a format's marker and what follows it,
a fragment, a corpus case's start; mutated at times), corpus cases repeated and
mutated, and fuzz.py's generators -- parse() with the memo (storm.enabled) and without
it must give equal results, segments included; and so must StreamParser, with the
memo, in deltas of 1, 3, 7 and 64 characters (--no-stream: parse() only), and with
announce="name" in 7-character deltas: each index started once, its ArgumentsDelta
texts its arguments' JSON, and the same CallDone events (name, arguments) as without
the memo.

    python benchmarks/diff_storm_memo.py N [SEED] [--no-stream]

Prints the inputs, how many took an outcome from the memo, how many regions did, and
the mismatches (each kept as /tmp/storm-memo-badK.pkl: (raw, tools, formats, in_think)).
"""

import pickle
import random
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz  # noqa: E402
import toolgram  # noqa: E402
from toolgram._scan import storm  # noqa: E402

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(ARGS[0])
SEED = int(ARGS[1]) if len(ARGS) > 1 else 1
STREAM = "--no-stream" not in sys.argv
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


def stream(raw, n, tools, formats, in_think, announce="done"):
    sp = toolgram.StreamParser(tools, formats=formats, in_think=in_think, announce=announce)
    events = []
    for i in range(0, len(raw), n):
        events += sp.feed(raw[i : i + n])
    events += sp.flush()
    return sp.close(), events


def done(events):
    # (Not their indexes: a stream without the memo may start a call that the rest of its
    # region withdraws, CallCancelled, and an index goes with it; a held region is not
    # started before it is read.)
    return [(e.call.name, e.call.arguments) for e in events if type(e) is toolgram.CallDone]


def run(raw, tools, formats, in_think):
    """None when all agree, else what differs."""
    storm.enabled = True
    a = toolgram.parse(raw, tools, formats=formats, in_think=in_think)
    storm.enabled = False
    b = toolgram.parse(raw, tools, formats=formats, in_think=in_think)
    if canon(a) != canon(b):
        storm.enabled = True
        return "parse() with the memo != without it"
    if not STREAM:
        storm.enabled = True
        return None
    _, plain = stream(raw, 7, tools, formats, in_think, "name")
    storm.enabled = True
    for n in (1, 3, 7, 64):
        if canon(stream(raw, n, tools, formats, in_think)[0]) != canon(a):
            return f"the stream in {n}-character deltas != parse()"
    inp = SimpleNamespace(formats=formats, in_think=in_think)
    chunks = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    problem = fuzz.announce_problem(raw, chunks, tools, inp, a)
    if problem:
        return f'announce="name": {problem}'
    if done(stream(raw, 7, tools, formats, in_think, "name")[1]) != done(plain):
        return 'announce="name": CallDone events differ from the stream without the memo'
    return None


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
        problem = run(*args)
    except Exception as e:
        problem = f"exception {e!r}"
        storm.enabled = True
    used += hits[0] > h0
    if problem:
        bad += 1
        if bad <= 5:
            print("MISMATCH", i, problem, repr(args[0][:200]), args[1:])
            pickle.dump(args, open(f"/tmp/storm-memo-bad{bad}.pkl", "wb"))
print(f"inputs {N}, memo used in {used}, regions from memo {hits[0]}, mismatches {bad}, {time.time() - t0:.0f}s")
