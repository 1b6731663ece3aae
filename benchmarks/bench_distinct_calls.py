"""parse() of a reply of many well-formed calls whose values all differ, against the same
call repeated (issue 17: a 32 KB reply parses in 50 ms at most, whatever it holds).

    python benchmarks/bench_distinct_calls.py [--size 32] [--formats qwen3_coder_xml,...] [--stream]

bench_pathological's `(M+payload)*k` repeats one payload: the storm memo (_scan/storm.py)
reads its first regions and serves the rest, so those shapes cost ~5-12 ms at 32 KB.
A model that writes many calls writes different values; each such region is read the
usual way (driver, region reader, builder). For each format whose header declares
stream_call and stream_param (the XML-ish ones), the call

    [start marker] <call opener name=get_weather> <param opener key=city> Paris{i} <param close> <call close> [end marker]

one a line, i = 0, 1, 2, ... up to --size KB, with no tools and with tools
["get_weather"]; and a few JSON formats' plain calls the same way. Printed: parse CPU ms
(the least of 3, warm, in this process), calls read, µs a call, errors, and the same for
the call with i = 0 repeated. "ok" says one unit alone reads as one call with that
value and no error (else the shape measures something else). --stream adds the stream in
8-character deltas and its budget (3x the parse + 10 µs a delta). Run the copy in the
tree to measure: it puts its own src first.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import toolgram  # noqa: E402
from toolgram._grammar.registry import default_registry  # noqa: E402
from toolgram._stream.parser import StreamParser  # noqa: E402

JSON_UNITS = {
    "hermes": '<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "Paris{i}"}}}}\n</tool_call>\n',
    "mistral": '[TOOL_CALLS]get_weather[ARGS]{{"city": "Paris{i}"}}\n',
    "fenced_json": '```json\n{{"name": "get_weather", "arguments": {{"city": "Paris{i}"}}}}\n```\n',
    "llama3_json": '<|python_tag|>{{"name": "get_weather", "parameters": {{"city": "Paris{i}"}}}}<|eom_id|>\n',
}


def xml_unit(fmt) -> str | None:
    if fmt.stream_call is None or fmt.stream_param is None:
        return None
    call_open = fmt.stream_call[0].split(" | ")[0]
    call_open = call_open.replace("{name}", "get_weather").replace("{call}", "").replace("{attrs}", "").replace("{id}", "0")
    param = fmt.stream_param[0].replace("{key}", "city").replace("{type}", "string" if "type=" in fmt.stream_param[0] else "true")
    start = fmt.starts[0] if fmt.starts and not call_open.startswith(fmt.starts[0]) else ""
    end = fmt.ends[0] if fmt.ends and not fmt.stream_call[1].endswith(fmt.ends[0]) else ""
    head = (start + "\n" if start else "") + call_open + "\n" + param
    tail = fmt.stream_param[1] + "\n" + fmt.stream_call[1] + ("\n" + end if end else "") + "\n"
    return (head + "Paris{i}" + tail).replace("{", "{{").replace("}", "}}").replace("{{i}}", "{i}")


def reply(unit: str, size: int, distinct: bool) -> str:
    parts, n, i = [], 0, 0
    while n < size:
        parts.append(unit.format(i=i if distinct else 0))
        n += len(parts[-1])
        i += 1
    return "".join(parts)[:size]


def least(fn, k: int = 3) -> float:
    best = float("inf")
    for _ in range(k):
        gc.collect()
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def stream8(raw: str, tools) -> None:
    sp = StreamParser(tools)
    for i in range(0, len(raw), 8):
        sp.feed(raw[i : i + 8])
    sp.flush()
    sp.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=32, help="KB (default 32)")
    ap.add_argument("--formats", default=None, help="only these, comma-separated")
    ap.add_argument("--stream", action="store_true", help="also the stream in 8-character deltas")
    args = ap.parse_args(argv)
    only = set(args.formats.split(",")) if args.formats else None
    size = args.size * 1024
    units = []
    for fmt in default_registry().select(None):
        unit = JSON_UNITS.get(fmt.name) or xml_unit(fmt)
        if unit and fmt.name != "glm45_bare" and (only is None or fmt.name in only):
            units.append((fmt.name, unit))
    over = 0
    print(f"{'format':24s} {'tools':5s} {'ok':3s} {'distinct ms':>11s} {'calls':>5s} {'µs/call':>7s} {'err':>3s} {'same ms':>8s}" + ("  stream8 ms (budget)" if args.stream else ""))
    for name, unit in units:
        for tools in (None, ["get_weather"]):
            one = toolgram.parse(unit.format(i=3), tools)
            ok = len(one.calls) == 1 and not one.errors and one.calls[0].arguments == {"city": "Paris3"}
            raw, same = reply(unit, size, True), reply(unit, size, False)
            toolgram.parse(raw[:2000], tools)
            took = least(lambda: toolgram.parse(raw, tools))
            took_same = least(lambda: toolgram.parse(same, tools))
            got = toolgram.parse(raw, tools)
            over += took > 0.05
            line = (
                f"{name:24s} {'yes' if tools else 'no':5s} {'ok' if ok else 'NO':3s} {took * 1e3:11.1f} {len(got.calls):5d}"
                f" {took * 1e6 / max(1, len(got.calls)):7.0f} {len(got.errors):3d} {took_same * 1e3:8.1f}"
            )
            if args.stream:
                s8 = least(lambda: stream8(raw, tools), 2)
                budget = 3 * took + 10e-6 * ((len(raw) + 7) // 8)
                line += f"  {s8 * 1e3:8.1f} ({budget * 1e3:.0f}){' OVER' if s8 > budget else ''}"
            print(line, flush=True)
    print(f"summary: {over} of {2 * len(units)} shapes parse over 50 ms at {args.size} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
