"""Where a slow shape of bench_pathological.py spends its parse: the CPU share of each
layer, so that a change is aimed at the layer that holds the time (issue 17).

    python benchmarks/bench_layers.py [--formats pythonic] [--size 32] [--min-ms 45] [--only SUBSTR ...]

For each shape of bench_pathological.build_shapes (the same shapes, built at --size KB)
whose parse takes at least --min-ms, it prints: the parse's CPU time (the least of 3),
the share of it spent in the outermost calls of Driver.run (the LALR driver's reading,
with its lexer's questions), pyframe.advance (plain Python lists, read without the
driver), RegionReader.decode (building the calls) and salvage.salvage; the parse's time
with the garbage collector off (what its passes cost: nothing is collected, the
objects are all alive); and per call of Driver.run, how many tokens its lexer read
(Driver._lex) and fed (Driver._feed). Shares of different layers may overlap where one
calls into another (pyframe feeds through the driver's _feed); each is counted once
per outermost call. Run the copy in the tree to measure: it puts its own src first.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT / "src", ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import bench_pathological as _bench  # noqa: E402
import toolgram  # noqa: E402
from toolgram._lalr.driver import Driver  # noqa: E402
from toolgram._scan import pyframe, region, salvage  # noqa: E402

LAYERS = [
    (Driver, "run", "driver"),
    (pyframe, "advance", "pyframe"),
    (region.RegionReader, "decode", "build"),
    (salvage, "salvage", "salvage"),
]
COUNTED = [(Driver, "run"), (Driver, "_lex"), (Driver, "_feed")]


class Meter:
    """CPU time of each layer's outermost calls, and call counts, while on."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.active: set[str] = set()
        self.on = False

    def timed(self, owner: object, name: str, label: str) -> None:
        fn = getattr(owner, name)
        meter = self

        def wrapper(*args, **kwargs):
            if not meter.on or label in meter.active:
                return fn(*args, **kwargs)
            meter.active.add(label)
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                meter.active.discard(label)
                meter.times[label] = meter.times.get(label, 0.0) + time.process_time() - t0

        setattr(owner, name, wrapper)

    def counted(self, owner: object, name: str) -> None:
        fn = getattr(owner, name)
        meter = self

        def wrapper(*args, **kwargs):
            if meter.on:
                meter.counts[name] = meter.counts.get(name, 0) + 1
            return fn(*args, **kwargs)

        setattr(owner, name, wrapper)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default="pythonic", help="bench_pathological's --formats")
    ap.add_argument("--size", type=int, default=32, help="KB (default 32)")
    ap.add_argument("--min-ms", type=float, default=45.0, help="only shapes whose parse takes this long")
    ap.add_argument("--only", nargs="*", default=[], help="only shapes whose name holds one of these")
    args = ap.parse_args(argv)
    shapes = _bench.build_shapes(args.formats.split(","), False)
    if args.only:
        shapes = [s for s in shapes if any(w in s.name for w in args.only)]
    meter = Meter()
    for owner, name in COUNTED:
        meter.counted(owner, name)  # (inside the timers: their counts cost the layers alike)
    for owner, name, label in LAYERS:
        meter.timed(owner, name, label)
    gc.freeze()
    print(f"{'ms':>6} {'gc off':>6} {'driver':>6} {'pyframe':>7} {'build':>5} {'salvage':>7} {'runs':>5} {'lex/run':>7} {'feed/run':>8}  shape")
    for shape in shapes:
        raw = shape.raw(args.size * _bench.KB)
        t0 = time.process_time()
        toolgram.parse(raw, tools=shape.tools)
        if (time.process_time() - t0) * 1000 < args.min_ms * 0.8:
            continue
        best = None
        for _ in range(3):
            meter.times, meter.counts = {}, {}
            gc.collect()
            meter.on = True
            t0 = time.process_time()
            toolgram.parse(raw, tools=shape.tools)
            took = time.process_time() - t0
            meter.on = False
            if best is None or took < best[0]:
                best = (took, meter.times, meter.counts)
        took, times, counts = best
        if took * 1000 < args.min_ms:
            continue
        gc.collect()
        gc.disable()
        t0 = time.process_time()
        toolgram.parse(raw, tools=shape.tools)
        off = time.process_time() - t0
        gc.enable()
        runs = counts.get("run", 0)
        share = [100 * times.get(label, 0.0) / took for _, _, label in LAYERS]
        per = (f"{counts.get('_lex', 0) / runs:7.1f} {counts.get('_feed', 0) / runs:8.1f}") if runs else f"{'-':>7} {'-':>8}"
        print(
            f"{took * 1000:6.1f} {off * 1000:6.1f} {share[0]:5.0f}% {share[1]:6.0f}% {share[2]:4.0f}% {share[3]:6.0f}% {runs:5d} {per}  {shape.name}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
