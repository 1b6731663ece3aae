"""Issue 20's figures in one run, each beside the baseline it is measured against.

    python benchmarks/bench_fast.py [--src PATH] [--rounds 15] [--cold-runs 5]

- cold start: `import toolgram` + the first `parse` of a Hermes reply, in fresh
  processes (bench_cold.py's child: `.pyc` files written and caches warm first), the
  best CPU time of --cold-runs; target at most 100 ms. (Beside it: the regex +
  json.loads extractor's own cold start, its imports and first read, timed the same way.)
- small replies: `parse` (every built-in format tried, no tools) against a `regex` +
  `json.loads` extractor (bench_parse.regex_extract) on a 2 KB Hermes reply of 5 calls
  (issue 20's shape) and of 10 calls (bench_parse.py's); target 1.0x. Then the same
  2 KB / 5 calls with `formats=["hermes"]`, and with tools given (five OpenAI
  definitions, as a list and as a ToolSet made once). And a one-paragraph reply
  with no call against one compiled search for any format's start marker; target 3x.
  Beside them, the floor: bench_parse.same_result, a loop that knows only well-formed
  Hermes blocks and builds the very ParseResult parse() returns (checked equal), against
  the same baseline: about the least a parser returning that result costs in Python.
- streaming: a reply (bench_stream.make_reply) fed to StreamParser in 8-character
  deltas against the floor of one Text event per delta (bench_stream.text_only),
  at 20 KB and 100 KB; target at most 2x, and flat (100 KB / 20 KB near 1). Beside
  it, the floor of any stream parser that looks for a marker in each delta
  (bench_stream.looking_only: one search, the text kept, a Text event) against the same.

Each ratio is the median of the rounds' own ratios, the two sides timed one after
the other in each round (a busy spell of this shared machine hits both), in CPU
time. `--src` measures another source tree (e.g. an export of main) with this same
script: before and after from one command.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

DEFS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')}.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "n": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
    for name in ("get_weather", "search_web", "send_email", "book_table", "convert_units")
]


def five_calls(size: int = 2_000, calls: int = 5, seed: int = 0) -> str:
    """A Hermes reply of about `size` characters holding `calls` calls, prose between
    (bench_parse's hermes_reply has twice as many calls in 2 KB)."""
    import random

    from _replies import WORDS

    rng = random.Random(seed)
    blocks = []
    for i in range(calls):
        call = {
            "name": rng.choice(["get_weather", "search_web", "send_email"]),
            "arguments": {"city": rng.choice(["Tokyo", "Paris", "Lima"]), "days": rng.randint(1, 9), "n": i},
        }
        blocks.append("<tool_call>\n" + json.dumps(call) + "\n</tool_call>\n")
    room = (size - sum(map(len, blocks))) // calls
    parts = []
    for block in blocks:
        words: list[str] = []
        while len(" ".join(words)) < room - 12:
            words.append(rng.choice(WORDS))
        parts += [" ".join(words) + ".\n", block]
    return "".join(parts)


def ratio(mine: list[float], base: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(mine, base))


ROWS: list[tuple[str, str, str, str, str]] = []


def row(what: str, figure: str, baseline: str, value: str, target: str) -> None:
    ROWS.append((what, figure, baseline, value, target))
    print(f"{what}: {figure} | baseline {baseline} | {value} | target {target}", flush=True)


def cold(src: str, runs: int) -> None:
    import bench_cold

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "toolgram-bench-pyc")
    # (A table cache of this run's own, warmed by the first run: the user's may be
    # rewritten meanwhile by other toolgram processes of other versions.)
    env["TOOLGRAM_CACHE_DIR"] = tempfile.mkdtemp(prefix="toolgram-bench-cache-")
    code = bench_cold.CHILD.format(src=src, here=str(HERE))
    bench_cold.run(code, env)  # (writes the .pyc files, warms the caches)
    # The baseline: the regex + json.loads extractor's own cold start, in the same way
    # (its imports, its pattern compiled, the same reply read).
    bare = (
        f"import sys, time; sys.path[:0] = [{str(HERE)!r}]; from _replies import hermes_reply; raw = hermes_reply(400)\n"
        "c = time.process_time()\nimport json, re\nCALL = re.compile(r'<tool_call>(.*?)</tool_call>', re.S)\n"
        "calls = [json.loads(m.group(1)) for m in CALL.finditer(raw)]\nassert len(calls) >= 2\n"
        "print(time.process_time() - c)"
    )
    totals, bases, lark = [], [], False
    for _ in range(runs):
        r = eval(bench_cold.run(code, env).strip().splitlines()[-1])
        totals.append((r["import_cpu"] + r["parse_cpu"]) * 1e3)
        lark = lark or r["lark"]
        # (the interpreter's own start, to the end of `import json, re`, in the same env)
        bases.append(float(bench_cold.run(bare, env).strip()) * 1e3)
    row(
        "cold start: import toolgram + first parse (Hermes, 2 calls)",
        f"{min(totals):.1f} ms best CPU of {runs} (median {statistics.median(totals):.1f}; Lark imported: {lark})",
        f"regex + json.loads, imported and run: {min(bases):.1f} ms",
        f"{min(totals):.1f} ms",
        "<= 100 ms",
    )


def small(rounds: int) -> None:
    import toolgram
    from bench_parse import _formats, regex_extract, same_result, time_rounds
    from _replies import hermes_reply
    from toolgram.tools import normalize_tools

    toolgram.parse("<tool_call>{}</tool_call>", DEFS)  # (grammars built outside the timing)
    toolset = normalize_tools(DEFS)
    for label, raw in (("2 KB, 5 calls", five_calls()), ("2 KB, 10 calls", hermes_reply(2_000))):
        expected = regex_extract(raw)
        assert [c.name for c in toolgram.parse(raw).calls] == [c["name"] for c in expected], "parsers disagree"
        cases = [("every format", lambda: toolgram.parse(raw))]
        if label.endswith("5 calls"):
            cases += [
                ('formats=["hermes"]', lambda: toolgram.parse(raw, formats=["hermes"])),
                ("tools: 5 OpenAI definitions", lambda: toolgram.parse(raw, DEFS)),
                ("tools: a ToolSet", lambda: toolgram.parse(raw, toolset)),
            ]
        # (The floor beside them: bench_parse.same_result, a loop that knows only these
        # well-formed blocks and builds the very ParseResult parse() returns, decoding each
        # payload as parse() does: what any parser returning that result costs at least.)
        assert same_result(raw) == toolgram.parse(raw), "same_result differs from parse()"
        cases.append(("floor: the same result, built by a loop that knows only these blocks", lambda: same_result(raw)))
        times = time_rounds([lambda: regex_extract(raw)] + [fn for _, fn in cases], rounds, budget=0.02)
        for (name, _), mine in zip(cases, times[1:]):
            row(
                f"small reply, {label} ({len(raw)} chars): " + (name if name.startswith("floor") else f"parse, {name}"),
                f"{min(mine) * 1e6:.1f} µs",
                f"regex + json.loads {min(times[0]) * 1e6:.1f} µs",
                f"{ratio(mine, times[0]):.2f}x",
                "1.0x" if name == "every format" else "(reported)",
            )
    import re

    starts = sorted({m for f in _formats() for m in f.starts}, key=len, reverse=True)
    any_start = re.compile("|".join(map(re.escape, starts)))
    prose = " ".join(part.split("<tool_call>")[0].strip() for part in hermes_reply(4000).split("</tool_call>"))[:600]
    assert not toolgram.parse(prose).calls and any_start.search(prose) is None
    t_search, t_parse = time_rounds([lambda: any_start.search(prose), lambda: toolgram.parse(prose)], rounds, budget=0.02)
    row(
        f"a paragraph with no call ({len(prose)} chars): parse",
        f"{min(t_parse) * 1e6:.1f} µs",
        f"one search for any of {len(starts)} start markers {min(t_search) * 1e6:.1f} µs",
        f"{ratio(t_parse, t_search):.2f}x",
        "<= 3x",
    )


def streaming(rounds: int) -> None:
    from bench_parse import time_rounds
    from bench_stream import looking_only, make_reply, stream, text_only

    import toolgram

    toolgram.parse("warm up <tool_call>{}</tool_call>")
    found = {}
    for size in (20_000, 100_000):
        raw = make_reply(size)
        deltas = -(-len(raw) // 8)
        t_stream, t_floor, t_look = time_rounds(
            [lambda: stream(raw, 8), lambda: text_only(raw, 8), lambda: looking_only(raw, 8)], rounds, budget=0.02
        )
        found[size] = ratio(t_stream, t_floor)
        row(
            f"stream, {size // 1000} KB in 8-character deltas ({deltas} deltas)",
            f"{min(t_stream) / deltas * 1e6:.2f} µs a delta",
            f"one Text event a delta {min(t_floor) / deltas * 1e6:.2f} µs",
            f"{found[size]:.2f}x",
            "<= 2x",
        )
        # (The floor of any stream parser that looks for a marker in each delta, beside it:
        # one search of the delta, the text kept, a Text event; calls cost it nothing.)
        row(
            f"stream, {size // 1000} KB: floor, one marker search a delta, the text kept, a Text event",
            f"{min(t_look) / deltas * 1e6:.2f} µs a delta",
            f"one Text event a delta {min(t_floor) / deltas * 1e6:.2f} µs",
            f"{ratio(t_look, t_floor):.2f}x",
            "(reported)",
        )
    row("stream: 100 KB ratio / 20 KB ratio", "", "", f"{found[100_000] / found[20_000]:.2f}", "flat (~1)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=str(HERE.parent / "src"), help="the toolgram source tree to measure")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--skip-cold", action="store_true")
    args = ap.parse_args()
    src = str(Path(args.src).resolve())
    sys.path[:0] = [src, str(HERE)]
    import toolgram  # (from --src: the benchmarks imported after it find it loaded)

    assert Path(toolgram.__file__).resolve().is_relative_to(src), toolgram.__file__
    print(f"toolgram from {src}; load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    if not args.skip_cold:
        cold(src, args.cold_runs)
    small(args.rounds)
    streaming(args.rounds)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(json.dumps([dict(zip(("what", "figure", "baseline", "value", "target"), r)) for r in ROWS], ensure_ascii=False))


if __name__ == "__main__":
    main()
