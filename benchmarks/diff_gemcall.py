"""Differential check of gemma4_call's fast frame (src/toolgram/_scan/gemcall.py): for
every corpus case (each format, with its tools and options) and N generated or mutated
replies of Gemma 4's `<|tool_call>call:NAME{…}<tool_call|>` calls (with tools, without,
with schemas that type their values), parse() with the fast paths (fastpath.enabled) and
without them must give equal results, segments included; and a stream of each, in
deltas of 1, 2, 3, 7 and 64 characters and random ones, must give parse()'s.

    python benchmarks/diff_gemcall.py [N] [SEED]

Prints the inputs, how many calls the frame read (in parse()), and the mismatches (each
kept as /tmp/gemcall-badK.pkl: (raw, tools, options)).
"""

import random
import sys

from toolgram._result.model import ToolCall
from toolgram._scan import gemcall

from diff_pyframe import corpus, mismatches, mutate

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1

hits = [0]
_orig = gemcall.GemmaFrame.read


def counting(self, buf, pos, final, tools, wait=None):
    got = _orig(self, buf, pos, final, tools, wait)
    hits[0] += type(got) is ToolCall
    return got


gemcall.GemmaFrame.read = counting

NAMES = ["f", "get_weather", "math.factorial", "a-b", "x1", "_p", "é", "名前", "f\u0301", "name_x", "call"]
STRINGS = [
    "Paris", "a, b}", "<tool_call|>", "x:y", "", " ", " pad ", "line\nbreak", "{a:1}", "[1,2]", "\\n", 'say "hi"',
    "'s'", "true", "12", "é", "<|tool_call>call:g{}", "tab\there", "a,b:c",
]
VALUES = [
    "1", "-2", "3.5", "1.0", "1e3", "007", "-0", "true", "false", "null", "None", "[1,2]", "[]", "{b:1}", "{}",
    "[<|\"|>a<|\"|>,2]", "{b:{c:[true]}}", "x y", '"q"', "'s'", "<escape>v<escape>", "", " 1", "1 ", "[1,2,]",
] + ['<|"|>' + s + '<|"|>' for s in STRINGS]
KEYS = ["a", "b", "city", "n", "display name", "x-y", "_k", "ключ", "a"]
POST = ["", "", "\n", " Done.", "<tool_call|>", "<tool_call|>\nafter", "<turn|>", "\n<turn|>", "\n\n", "}"]
PRE = ["", "", "Sure. ", "\n", "<|channel>thought x<channel|>", 'He said "', "`", "<tool_call|>"]
SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"}, "b": {"type": "string"}, "city": {"type": "string"}, "n": {"type": "number"},
        "display name": {"type": "boolean"}, "x-y": {"type": "array", "items": {"type": "integer"}},
    },
}  # fmt: skip


def call(rng):
    keys = [rng.choice(KEYS) for _ in range(rng.choice((0, 1, 2, 3, 4)))]
    args = "{" + ",".join(f"{k}:{rng.choice(VALUES)}" for k in keys) + rng.choice(("}", "}", "}", "", "} "))
    head = rng.choice(("call:", "call:", "call:", "", ":", "call: ", " call:"))
    return "<|tool_call>" + head + rng.choice(NAMES) + args + rng.choice(("<tool_call|>",) * 6 + ("", "\n<tool_call|>"))


def generated(rng):
    text = rng.choice(PRE) + call(rng)
    for _ in range(rng.choice((0, 1, 2, 3, 5, 10))):
        text += rng.choice(("", "", " ", "\n", "Okay. ", "<turn|>")) + call(rng)
    text += rng.choice(POST)
    text = mutate(rng, text)
    r = rng.random()
    if r < 0.4:
        tools = None
    elif r < 0.7:
        tools = NAMES
    elif r < 0.8:
        tools = ["f", "other"]
    else:
        tools = [{"type": "function", "function": {"name": n, "parameters": SCHEMA}} for n in NAMES]
    return text, tools, {}


def main() -> int:
    rng = random.Random(SEED)
    cases = list(corpus()) + [generated(rng) for _ in range(N)]
    bad = mismatches(cases, rng, "gemcall")
    print(f"{len(cases)} inputs, {hits[0]} calls read by the frame, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
