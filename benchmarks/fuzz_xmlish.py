"""A structured fuzz of the `<invoke>`/`<parameter>` formats (MiniMax M2, its
`<function_calls>` block and bare invokes, dots.llm, DeepSeek DSML V3.2 and V4.1,
MiniCPM5, Step-3): well-formed replies whose values hold other formats' (and their own)
open and close tags, written with or without newlines between the tags (MiniMax's
reference example writes `</parameter><parameter` glued), cut short anywhere.

    python benchmarks/fuzz_xmlish.py [--count N] [--seed S] [--start I] [--every-cut]

Case i of seed S is rebuilt from (S, i) alone: a reply of one or two calls of one
format, each value made of 0 to 4 pieces (tags, words, blanks, newlines, a lone `<`;
now and then a parameter tag with no name),
prose before and after at times, and half the time cut at a random place (with
--every-cut, each reply is checked at every cut instead: a case per prefix). Checks,
with tools=None:

  exception   parse() or the stream raised;
  segments    benchmarks/fuzz.py's accounting (segments tile the reply, each call's span
              in a call segment, the text made of the text segments);
  empty_key   a call has an argument named "" (a parameter tag with no name is no
              argument: an error, or no call);
  stream      close() of a stream in 1-, 2- and 3-character deltas (announce="done",
              and "name" for the 1-character one) differs from parse().

It prints the failures by check, and the first few failing replies (replay one with
the script's --show 'RAW'). Exit status 1 when any check failed. A small seeded share
runs in tests/test_fuzz.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import toolgram  # noqa: E402
from toolgram._stream.parser import StreamParser  # noqa: E402


def _fuzz() -> Any:
    """benchmarks/fuzz.py (its checks: accounting_problem, result_difference)."""
    name = "toolgram_benchmarks_fuzz"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "fuzz.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # (dataclasses look their module up)
        spec.loader.exec_module(module)
    return sys.modules[name]


_D = "｜DSML｜"
# format -> (block open, block close, invoke open with {name}, invoke close, parameter
# open with {key}, parameter close); "" where the format writes no block.
SHAPES = {
    "minimax": ("<minimax:tool_call>", "</minimax:tool_call>", '<invoke name="{}">', "</invoke>", '<parameter name="{}">', "</parameter>"),
    "function_calls": ("<function_calls>", "</function_calls>", '<invoke name="{}">', "</invoke>", '<parameter name="{}">', "</parameter>"),
    "bare_invoke": ("", "", '<invoke name="{}">', "</invoke>", '<parameter name="{}">', "</parameter>"),
    "dots": ("<dots_function_call>", "</dots_function_call>", '<invoke name="{}">', "</invoke>", '<parameter name="{}">', "</parameter>"),
    "dsml32": (
        f"<{_D}function_calls>", f"</{_D}function_calls>", f'<{_D}invoke name="{{}}">', f"</{_D}invoke>",
        f'<{_D}parameter name="{{}}" string="true">', f"</{_D}parameter>",
    ),
    "dsml41": (
        f"<{_D} calls>", f"</{_D} calls>", f'<{_D} invoke name="{{}}">', f"</{_D} invoke>",
        f'<{_D} parameter name="{{}}" string="true">', f"</{_D} parameter>",
    ),
    "minicpm5": ("", "", '<function name="{}">', "</function>", '<param name="{}">', "</param>"),
    "step3": (
        "<｜tool_calls_begin｜><｜tool_call_begin｜>", "<｜tool_call_end｜><｜tool_calls_end｜>",
        '<steptml:invoke name="{}">', "</steptml:invoke>", '<steptml:parameter name="{}">', "</steptml:parameter>",
    ),
}  # fmt: skip
# What a value may hold: every shape's tags, other formats' (Qwen3-Coder, GLM, Kimi K3,
# Seed-OSS, Hermes), words, blanks, a `<` that opens nothing.
_TAGS = sorted({t.format("x") for shape in SHAPES.values() for t in shape if t} | {t for shape in SHAPES.values() for t in shape[0].split("><") if t})
PIECES = [
    *_TAGS, "</param></function>", "</parameter></invoke>", "<parameter=a>", "</parameter>", "<function=f>", "</function>",
    "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<|close|>argument<|sep|>",
    "</seed:tool_call>", "<tool_sep>", "<b>", "</b>", "<", "x", "It ends with", " ", "  ", "\n", '{"k": 1}',
]  # fmt: skip
PROSE = ["", "", "Sure.", "I'll write it.\n", "Done.", "\nThat is all."]


def make_reply(seed: int, index: int) -> tuple[str, str]:
    """(shape name, reply) of case `index` of `seed`, before any cut."""
    rng = random.Random(f"{seed}:{index}")
    shape = rng.choice(sorted(SHAPES))
    block, block_end, invoke, invoke_end, param, param_end = SHAPES[shape]
    sep = rng.choice(["", "\n"])  # (no newline between tags: MiniMax's reference example)
    parts = [block] if block else []
    for _ in range(rng.randint(1, 2)):
        parts.append(invoke.format(rng.choice("fg")))
        for key in rng.sample("abc", rng.randint(1, 3)):
            value = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 4)))
            opener = param.format(key)
            if rng.random() < 0.03:  # (a parameter tag with no name: `<parameter>`, `<parameter e=>`)
                opener = opener.replace(f'name="{key}"', rng.choice(["", "e="])).replace(" >", ">")
            parts.append(opener + value + param_end)
        parts.append(invoke_end)
    if block_end:
        parts.append(block_end)
    return shape, rng.choice(PROSE) + sep.join(parts) + rng.choice(PROSE)


def make_case(seed: int, index: int) -> tuple[str, str]:
    """(shape name, reply) of case `index`: the reply, half the time cut short."""
    shape, raw = make_reply(seed, index)
    rng = random.Random(f"{seed}:{index}:cut")
    if rng.random() < 0.5:
        raw = raw[: rng.randint(1, len(raw))]
    return shape, raw


def _stream(raw: str, size: int, announce: str) -> Any:
    sp = StreamParser(announce=announce)
    for i in range(0, len(raw), size):
        sp.feed(raw[i : i + size])
    sp.flush()
    return sp.close()


STREAMS = ((1, "done"), (2, "done"), (3, "done"), (1, "name"))


def check(raw: str) -> list[tuple[str, str]]:
    """The checks that fail on `raw`: (check, detail) pairs."""
    fuzz = _fuzz()
    try:
        result = toolgram.parse(raw)
    except Exception as exc:  # noqa: BLE001
        return [("exception", f"parse: {type(exc).__name__}: {exc}")]
    failed = []
    problem = fuzz.accounting_problem(raw, result)
    if problem:
        failed.append(("segments", problem))
    if any("" in call.arguments for call in result.calls):
        failed.append(("empty_key", f"{[call.arguments for call in result.calls]}"))
    for size, announce in STREAMS:
        try:
            got = _stream(raw, size, announce)
        except Exception as exc:  # noqa: BLE001
            failed.append(("exception", f"stream {size}: {type(exc).__name__}: {exc}"))
            continue
        diff = fuzz.result_difference(result, got)
        if diff:
            failed.append(("stream", f"{size}-character deltas, announce={announce}: {diff}"))
            break
    return failed


def run(seed: int, start: int, count: int, every_cut: bool, show: int) -> dict:
    """Run the cases; the failures by check (and the first `show` printed)."""
    counts: dict[str, int] = {}
    cases = shown = 0
    for index in range(start, start + count):
        if every_cut:
            _, reply = make_reply(seed, index)
            raws = [reply[:cut] for cut in range(1, len(reply) + 1)]
        else:
            raws = [make_case(seed, index)[1]]
        for raw in raws:
            cases += 1
            failed = check(raw)
            for name in {name for name, _ in failed}:
                counts[name] = counts.get(name, 0) + 1
            if failed and shown < show:
                shown += 1
                print(f"case {index}: {raw!r}")
                for name, detail in failed:
                    print(f"    {name}: {detail}")
    counts["cases"] = cases
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=3000, help="replies (default 3000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first case index (default 0)")
    ap.add_argument("--every-cut", action="store_true", help="check each reply cut at every place")
    ap.add_argument("--show", type=int, default=10, help="failing replies printed (default 10)")
    ap.add_argument("--replay", metavar="RAW", help="check this reply only, printing what fails")
    args = ap.parse_args(argv)
    if args.replay is not None:
        failed = check(args.replay)
        for name, detail in failed:
            print(f"{name}: {detail}")
        return 1 if failed else 0
    t0 = time.perf_counter()
    counts = run(args.seed, args.start, args.count, args.every_cut, args.show)
    cases = counts.pop("cases")
    failing = ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"
    print(f"{cases} cases (seed {args.seed}, from {args.start}), {time.perf_counter() - t0:.0f} s; failing: {failing}")
    return 1 if counts else 0


if __name__ == "__main__":
    sys.exit(main())
