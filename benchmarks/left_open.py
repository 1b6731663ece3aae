"""A value whose close tags were left out, then the next call, in the XML-ish formats
(Qwen3-Coder, Seed-OSS, MiniMax M2, dots.llm, DeepSeek DSML V3.2 / V4.1, MiniCPM5, GLM,
Step-3): the generator that found QA9's R1 (a call left open swallowing the next one and
taking its arguments, silently), kept so a change to the value reading meets it again.

    python benchmarks/left_open.py [--count 1500] [--seed 1] [--show 12]

Each reply: a call `f(a="x", b=V)` whose `b` value is left open (its close only, its close
and the call's, or every close up to the block's left out), then a whole call `g` whose `c`
value mentions a close tag of the format (`print("</parameter>")`, `close with </function>
here`, a `\"\"\"` line holding one, ...) or says `hello`, with or without a `d` argument,
glued, on the next line or after a space; then nothing or a line of prose. Right means:
two calls, `f` with `a` and `b` (V, blanks stripped) and a repair, `g` with exactly its
arguments; the rest (errors, text) is free. Wrong replies are counted as *silent* when
the result has no error and no call has a repair, the case an agent cannot see. Each
reply is also streamed in 1-, 7- and 64-character deltas, which must equal parse().
Prints the counts by format and kind, --show wrong replies, and exits 1 when a stream
differs from parse().
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import toolgram  # noqa: E402
from toolgram import StreamParser  # noqa: E402

_D = "｜DSML｜"
# format -> (block open, block close, call open, call close, value open, value close); the
# call and value opens take the name.
SHAPES = {
    "qwen3_coder_xml": ("<tool_call>\n", "</tool_call>", "<function={}>\n", "</function>\n", "<parameter={}>\n", "\n</parameter>\n"),
    "seed_oss_xml": ("<seed:tool_call>\n", "</seed:tool_call>", "<function={}>\n", "</function>\n", "<parameter={}>", "</parameter>\n"),
    "minimax_m2_invoke": ("<minimax:tool_call>\n", "</minimax:tool_call>", '<invoke name="{}">\n', "</invoke>\n", '<parameter name="{}">', "</parameter>\n"),
    "dots_invoke": ("<dots_function_call>", "</dots_function_call>", '<invoke name="{}">', "</invoke>", '<parameter name="{}">', "</parameter>"),
    "deepseek_v32_dsml": (f"<{_D}function_calls>\n", f"</{_D}function_calls>", f'<{_D}invoke name="{{}}">\n', f"</{_D}invoke>\n", f'<{_D}parameter name="{{}}" string="true">', f"</{_D}parameter>\n"),
    "deepseek_v41_dsml": (f"<{_D} calls>\n", f"</{_D} calls>", f'<{_D} invoke name="{{}}">\n', f"</{_D} invoke>\n", f'<{_D} parameter name="{{}}" string="true">', f"</{_D} parameter>\n"),
    "minicpm5_function_param": ("", "", '<function name="{}">', "</function>", '<param name="{}">', "</param>"),
    "glm45_arg_kv": ("", "", "<tool_call>{}\n", "</tool_call>", "<arg_key>{}</arg_key><arg_value>", "</arg_value>\n"),
    "step3_steptml": ("<｜tool_calls_begin｜><｜tool_call_begin｜>", "<｜tool_call_end｜><｜tool_calls_end｜>", '<steptml:invoke name="{}">', "</steptml:invoke>", '<steptml:parameter name="{}">', "</steptml:parameter>"),
}
MENTIONS = (
    'print("{vc}")', "the block ends at {bc}", "close with {cc} here", 'x = """\n{vc}\n"""',
    "ends with {vc}", "hello", "{vc} then {cc}", "use {bc}",
)
VALUES = ("Paris is nice.", "ls -la /tm", "celsius")


def call(fmt: str, name: str, args: list[tuple[str, str]]) -> str:
    bo, bc, co, cc, vo, vc = SHAPES[fmt]
    return bo + co.format(name) + "".join(vo.format(k) + v + vc for k, v in args) + cc + bc


def case(seed: int, i: int) -> tuple[str, str, list]:
    """(format, reply, the calls expected: [(name, arguments)])."""
    rng = random.Random(seed * 7919 + i)
    fmt = rng.choice(list(SHAPES))
    bo, bc, co, cc, vo, vc = SHAPES[fmt]
    v1 = rng.choice(VALUES + ("lorem ipsum " * rng.randint(1, 40),))
    first = bo + co.format("f") + vo.format("a") + "x" + vc + vo.format("b") + v1
    left_out = rng.choice(("value", "value and call", "all"))
    if left_out == "value":
        first += cc + bc
    elif left_out == "value and call":
        first += bc
    mention = rng.choice(MENTIONS).format(vc=vc.strip(), cc=cc.strip(), bc=bc.strip() or cc.strip())
    args = [("c", mention), ("d", "NOTES.md")] if rng.random() < 0.6 else [("c", mention)]
    raw = first + rng.choice(("", "\n", " ")) + call(fmt, "g", args) + rng.choice(("", "\nDone."))
    return fmt, raw, [("f", {"a": "x", "b": v1}), ("g", dict(args))]


def _stripped(calls) -> list:
    return [(name, {k: v.strip() if isinstance(v, str) else v for k, v in args.items()}) for name, args in calls]


def _key(r) -> tuple:
    return [(c.name, c.arguments, c.repairs) for c in r.calls], r.text, r.errors


def judge(raw: str, expected: list) -> tuple[str, object]:
    """("right" | "wrong" | "silent", parse()'s result)."""
    r = toolgram.parse(raw)
    got = _stripped((c.name, c.arguments) for c in r.calls)
    if got == _stripped(expected) and r.calls[0].repairs:
        return "right", r
    silent = not r.errors and not any(c.repairs for c in r.calls)
    return ("silent" if silent else "wrong"), r


def stream_equal(raw: str, r) -> bool:
    for k in (1, 7, 64):
        sp = StreamParser()
        for i in range(0, len(raw), k):
            sp.feed(raw[i : i + k])
        sp.flush()
        if _key(sp.close()) != _key(r):
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=12, help="wrong replies to print")
    args = ap.parse_args()
    counts: Counter = Counter()
    differ = shown = 0
    for i in range(args.count):
        fmt, raw, expected = case(args.seed, i)
        kind, r = judge(raw, expected)
        counts[fmt, kind] += 1
        same = stream_equal(raw, r)
        differ += not same
        if (kind != "right" or not same) and shown < args.show:
            shown += 1
            calls = "; ".join(f"{c.name} {c.arguments} {list(c.repairs)}" for c in r.calls)
            print(f"#{i} {kind}{'' if same else ' STREAM != PARSE'} {fmt}: {raw!r}\n    -> {calls} | errors {len(r.errors)} | text {r.text[:60]!r}")
    print(f"{'format':26} {'right':>6} {'wrong':>6} {'silent':>6}")
    for fmt in SHAPES:
        print(f"{fmt:26} {counts[fmt, 'right']:6} {counts[fmt, 'wrong']:6} {counts[fmt, 'silent']:6}")
    total = {k: sum(v for (_, kk), v in counts.items() if kk == k) for k in ("right", "wrong", "silent")}
    print(f"{args.count} replies (seed {args.seed}): {total['right']} right, {total['wrong']} wrong with an error "
          f"or a repair, {total['silent']} wrong silently; {differ} streams differ from parse()")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
