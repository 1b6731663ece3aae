"""parse() on replies built to be slow: one marker repeated, each left broken.

    python benchmarks/bench_pathological.py

For each shape, a reply of that marker repeated to 8 KB and to 32 KB (the
default max_chars) is parsed once; the table shows the CPU time of each and
their ratio (4 for work that grows linearly with the reply).

Markers whose payload is delimited by a regex stop at the next marker
(Hermes's `<tool_call>{@`). Markers whose payload is a JSON value whose
brackets never close hand the decoder a payload that runs to the end of the
reply, once per marker; the lenient pass gives each up where it breaks, so
that too is linear (it was not while a depth scan of each payload came first:
32 KB took 1 to 2 s), and it is what this script keeps an eye on.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import toolgram  # noqa: E402

SHAPES = ["<tool_call>{@", "<TOOLCALL>[@", '<TOOLCALL>[{"a": ', "<|im_start|>{", "functools[x", "<TOOLCALL>[' "]


def cpu_time(raw: str) -> float:
    t0 = time.process_time()
    toolgram.parse(raw)
    return time.process_time() - t0


def main() -> None:
    toolgram.parse("<tool_call>{}</tool_call>")  # build the grammars outside the timing
    print(f"{'shape':>22} {'8 KB s':>8} {'32 KB s':>8} {'ratio':>6}")
    for unit in SHAPES:
        small, large = (cpu_time(unit * (size // len(unit))) for size in (8_000, 32_000))
        print(f"{unit!r:>22} {small:>8.2f} {large:>8.2f} {large / max(small, 1e-9):>6.1f}")


if __name__ == "__main__":
    main()
