"""Streaming cost per XML-ish format: a write_file call whose value holds `<`.

    python benchmarks/bench_stream_formats.py                  # every format, 4- and 1-char deltas
    python benchmarks/bench_stream_formats.py --formats deepseek_v32_dsml minimax_m2_invoke --deltas 4
    python benchmarks/bench_stream_formats.py --profile deepseek_v32_dsml   # cProfile of one 30 KB stream

Each reply is one call of write_file whose `content` is '<div class=a>x</div>\\n'
repeated to about 6 KB and 30 KB (escaped as a JSON string where the format's
payload is JSON), framed by the format's own markers (XMLISH, in _replies.py). The stream is
checked to equal parse(). Printed: parse time, stream time, their ratio; then the
ratio at 30 KB over the ratio at 6 KB (flat, about 1, means the stream's work per
delta does not grow with the value; 5 means the work is quadratic) and the stream
time at 30 KB over that at 6 KB (5: linear; 25: quadratic).

Times are CPU time (time.process_time): wall time on a shared machine measures
the neighbours. A stream slower than --limit seconds at 6 KB is not run at 30 KB
(it would take minutes); its row says so.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import toolgram  # noqa: E402
from toolgram._stream.parser import StreamParser  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _replies import XMLISH, xmlish  # noqa: E402


LINE = "<div class=a>x</div>\n"
TOOLS = {"write_file": {"type": "object", "properties": {"content": {"type": "string"}}}}


def make_reply(fmt: str, size: int) -> str:
    return xmlish(fmt, LINE * max(1, size // len(LINE)))


def stream(raw: str, delta: int):
    sp = StreamParser(TOOLS, max_chars=None)
    feed = sp.feed
    for i in range(0, len(raw), delta):
        feed(raw[i : i + delta])
    return sp.close()


def timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def time_parse(raw: str) -> float:
    number = max(1, int(0.05 / max(timed(lambda: toolgram.parse(raw, TOOLS, max_chars=None)), 1e-6)))
    return min(timed(lambda: [toolgram.parse(raw, TOOLS, max_chars=None) for _ in range(number)]) / number for _ in range(3))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", nargs="*", default=list(XMLISH))
    ap.add_argument("--deltas", nargs="*", type=int, default=[4, 1])
    ap.add_argument("--limit", type=float, default=10.0, help="skip 30 KB when 6 KB streams slower than this (s)")
    ap.add_argument("--profile", metavar="FORMAT")
    args = ap.parse_args()
    if args.profile:
        raw = make_reply(args.profile, 30_000)
        cProfile.runctx("stream(raw, 4)", globals(), locals(), "/tmp/bench_stream_formats.prof")
        pstats.Stats("/tmp/bench_stream_formats.prof").sort_stats("tottime").print_stats(20)
        return
    print(f"{'format':<12} {'delta':>5} {'size':>6} {'parse ms':>9} {'stream ms':>10} {'ratio':>8}   30K/6K: ratio, stream")
    for fmt in args.formats:
        for delta in args.deltas:
            ratios = []
            for size in (6_000, 30_000):
                raw = make_reply(fmt, size)
                expected = toolgram.parse(raw, TOOLS, max_chars=None)
                assert len(expected.calls) == 1 and not expected.errors, (fmt, expected.errors)
                if ratios and ratios[-1][1] > args.limit:
                    print(f"{fmt:<12} {delta:>5} {len(raw):>6} {'':>9} {'skipped':>10}")
                    ratios = []
                    break
                got = None

                def run():
                    nonlocal got
                    got = stream(raw, delta)

                streamed = timed(run)
                assert got == expected, f"{fmt}: the stream disagrees with parse()"
                one = time_parse(raw)
                ratios.append((streamed / one, streamed))
                print(f"{fmt:<12} {delta:>5} {len(raw):>6} {one * 1e3:>9.2f} {streamed * 1e3:>10.1f} {streamed / one:>8.1f}", flush=True)
            if len(ratios) == 2:
                print(f"{'':<12} {'':>5} {'':>6} {'':>9} {'':>10} {'':>8}   {ratios[1][0] / ratios[0][0]:.2f}  {ratios[1][1] / ratios[0][1]:5.1f}", flush=True)


if __name__ == "__main__":
    main()
