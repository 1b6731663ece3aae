"""Streaming cost: a reply fed to StreamParser in 8-character deltas vs one parse().

    python benchmarks/bench_stream.py            # the table
    python benchmarks/bench_stream.py --profile  # cProfile of the 100 KB stream
    python benchmarks/bench_stream.py --phases   # the 100 KB stream's CPU time by where its deltas fall

The reply is generated deterministically: paragraphs of prose (now and then
with a `3 < 5`, an inline `code` span or a newline-framed list) and, after
about 60% of them, a Hermes <tool_call> block with 2-4 arguments; about 120
calls per 100 KB. Both sides get max_chars large enough for the whole reply,
and both results are checked to be equal. Targets: the 100 KB ratio at most
3x, and at most 1.5x the 20 KB one (work per delta does not grow with the
reply).

The last lines (issue 20's figure): the stream against the floor of one Text event
per delta and nothing else, timed in turn round by round at 20 KB and 100 KB (target:
at most 2x, and flat); then the same for the 100 KB reply without its calls (its
prose alone, all of it in the stream's fast lane), to tell the cost of the prose
from that of the calls; and, on that prose, the least any stream parser that looks for
a marker in each delta does (one search, the text kept, a Text event), against the
same floor.

Times are CPU time (time.process_time), the best of --repeat runs: wall time
on a shared machine measures the neighbours.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import toolgram  # noqa: E402
from toolgram.events import Text  # noqa: E402
from toolgram._pipeline import Joiner  # noqa: E402
from toolgram._stream.parser import StreamParser  # noqa: E402

WORDS = (
    "the a model tool call reply weather city price cart product search open list item value "
    "result user answer because which there their about would could should data time order "
    "shipping return size colour stock today tomorrow week cheaper faster"
).split()
TOOLS = ["search_products", "open_product", "get_weather", "add_to_cart"]


def make_reply(size: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    parts: list[str] = []
    n = 0
    while n < size:
        words = [rnd.choice(WORDS) for _ in range(rnd.randint(30, 110))]
        para = " ".join(words).capitalize() + ". "
        roll = rnd.random()
        if roll < 0.15:
            para += "Note that 3 < 5 and `x` stays as it is. "
        elif roll < 0.25:
            para += "\n\n- first\n- second\n\n"
        parts.append(para)
        n += len(para)
        if rnd.random() < 0.6:
            args = {"query": " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 10))), "limit": rnd.randint(1, 50)}
            if rnd.random() < 0.5:
                args["in_stock"] = rnd.random() < 0.5
            if rnd.random() < 0.3:
                args["price_max"] = round(rnd.uniform(5, 500), 2)
            call = "<tool_call>\n" + json.dumps({"name": rnd.choice(TOOLS), "arguments": args}) + "\n</tool_call>\n"
            parts.append(call)
            n += len(call)
    return "".join(parts)


def time_parse(raw: str, repeat: int) -> float:
    # One parse of 20 KB takes well under a millisecond: time enough of them in a
    # row (about 50 ms) that the clock and a busy neighbour matter little.
    t0 = time.process_time()
    toolgram.parse(raw, TOOLS, max_chars=len(raw) + 1)
    number = max(1, int(0.05 / max(time.process_time() - t0, 1e-6)))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(number):
            toolgram.parse(raw, TOOLS, max_chars=len(raw) + 1)
        best = min(best, (time.process_time() - t0) / number)
    return best


def stream(raw: str, delta: int):
    sp = StreamParser(TOOLS, max_chars=len(raw) + 1)
    feed = sp.feed
    for i in range(0, len(raw), delta):
        feed(raw[i : i + delta])
    return sp.close()


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def emit_only(raw: str, delta: int) -> None:
    """The least a stream does per delta: join the text the Assembler's way and
    hand back a Text event (no marker is looked for). A floor, for comparison."""
    joiner = Joiner()
    for i in range(0, len(raw), delta):
        added = joiner.add(raw[i : i + delta])
        _ = [Text(added)] if added else []


def text_only(raw: str, delta: int) -> None:
    """Less than any stream parser can do: one Text event per delta, its text the
    delta itself (no whitespace held, nothing looked for). The events are what the
    API asks for, so this is the floor under StreamParser in CPython."""
    for i in range(0, len(raw), delta):
        _ = [Text(raw[i : i + delta])]


class _Looking:
    """The least a stream parser that looks for markers does with a delta of prose:
    one search of it for where a marker may start (StreamParser's own, Scanner.lane's),
    and, finding none, the text kept (for result.text) and one Text event."""

    def __init__(self) -> None:
        from toolgram._grammar.registry import registry_for
        from toolgram._scan.markers import markers_for

        self.search = markers_for(registry_for(None).select(None), True).shared["lane_search"].search
        self.parts: list[str] = []

    def feed(self, delta: str) -> list:
        if self.search(delta) is None:
            self.parts.append(delta)
            return [Text(delta)]
        return []


def looking_only(raw: str, delta: int) -> None:
    feed = _Looking().feed
    for i in range(0, len(raw), delta):
        feed(raw[i : i + delta])


class _Idle:
    """A stream parser that does nothing: feed() returns no events."""

    def feed(self, delta: str) -> list:
        return []


def feed_only(raw: str, delta: int) -> None:
    """The cost of the feeding itself: the slices and one call per delta, with no
    work done and nothing returned. A floor under any stream parser in Python."""
    feed = _Idle().feed
    for i in range(0, len(raw), delta):
        feed(raw[i : i + delta])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delta", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--phases", action="store_true")
    args = ap.parse_args()
    toolgram.parse("warm up <tool_call>{}</tool_call>", TOOLS)  # build the grammars once
    if args.phases:
        phases(make_reply(100_000), args.delta, args.repeat)
        return
    if args.profile:
        raw = make_reply(100_000)
        cProfile.runctx("stream(raw, args.delta)", globals(), locals(), "/tmp/bench_stream.prof")
        pstats.Stats("/tmp/bench_stream.prof").sort_stats("tottime").print_stats(25)
        return
    ratios = {}
    print(f"{'size':>8} {'calls':>6} {'deltas':>7} {'parse ms':>9} {'stream ms':>10} {'µs/delta':>9} {'ratio':>6}")
    for size in (20_000, 100_000):
        raw = make_reply(size)
        expected = toolgram.parse(raw, TOOLS, max_chars=len(raw) + 1)
        assert stream(raw, args.delta) == expected, "the stream disagrees with parse()"
        one = time_parse(raw, args.repeat)
        streamed = best_time(lambda: stream(raw, args.delta), args.repeat)
        deltas = -(-len(raw) // args.delta)
        ratios[size] = streamed / one
        print(
            f"{len(raw):>8} {len(expected.calls):>6} {deltas:>7} {one * 1e3:>9.2f} {streamed * 1e3:>10.2f}"
            f" {streamed / deltas * 1e6:>9.2f} {ratios[size]:>6.2f}"
        )
    growth = ratios[100_000] / ratios[20_000]
    print(f"ratio at 100 KB: {ratios[100_000]:.2f}x (target <= 3); 100 KB / 20 KB ratios: {growth:.2f} (target <= 1.5)")
    idle = best_time(lambda: feed_only(raw, args.delta), args.repeat)
    print(f"floor at 100 KB (feed() doing nothing, returning []): {idle * 1e3:.2f} ms = {idle / one:.2f}x one parse")
    bare = best_time(lambda: text_only(raw, args.delta), args.repeat)
    print(f"floor at 100 KB (a Text event per delta, nothing else): {bare * 1e3:.2f} ms = {bare / one:.2f}x one parse")
    floor = best_time(lambda: emit_only(raw, args.delta), args.repeat)
    print(f"floor at 100 KB (a Text event per delta, the text joined as result.text): {floor * 1e3:.2f} ms = {floor / one:.2f}x one parse")
    # Issue 20's figure: the stream against the floor of one Text event per delta, the
    # two timed in turn, round after round (a busy spell of the machine hits both),
    # at 20 KB and 100 KB: the median of the rounds' ratios, and the ratio of the bests.
    print("stream / floor (a Text event per delta), in turn, round by round (target <= 2, flat):")
    by_size = {}
    for size in (20_000, 100_000):
        raw = make_reply(size)
        deltas = -(-len(raw) // args.delta)
        t_stream, t_floor = in_turn([lambda: stream(raw, args.delta), lambda: text_only(raw, args.delta)], args.repeat)
        median = statistics.median(a / b for a, b in zip(t_stream, t_floor))
        by_size[size] = median
        print(
            f"{len(raw):>8} chars: stream {min(t_stream) / deltas * 1e6:.2f} µs a delta, floor"
            f" {min(t_floor) / deltas * 1e6:.2f} µs: {median:.2f}x (median of {len(t_stream)} rounds;"
            f" best / best {min(t_stream) / min(t_floor):.2f}x)"
        )
    print(f"100 KB / 20 KB of that ratio: {by_size[100_000] / by_size[20_000]:.2f}")
    # Where the rest goes: the same reply without its calls (the prose lane alone).
    raw = re.sub(r"<tool_call>.*?</tool_call>\n", "", make_reply(100_000), flags=re.DOTALL)
    deltas = -(-len(raw) // args.delta)
    t_stream, t_floor, t_look = in_turn(
        [lambda: stream(raw, args.delta), lambda: text_only(raw, args.delta), lambda: looking_only(raw, args.delta)],
        args.repeat,
    )
    median = statistics.median(a / b for a, b in zip(t_stream, t_floor))
    print(
        f"the same without its calls ({len(raw)} chars of prose): stream {min(t_stream) / deltas * 1e6:.2f} µs a delta,"
        f" floor {min(t_floor) / deltas * 1e6:.2f} µs: {median:.2f}x (best / best {min(t_stream) / min(t_floor):.2f}x)"
    )
    # The least any stream parser that looks for a marker in each delta does (one search,
    # the text kept, a Text event): the floor under the prose lane.
    median = statistics.median(a / b for a, b in zip(t_look, t_floor))
    print(
        f"  one search a delta, the text kept and a Text event, nothing else: {min(t_look) / deltas * 1e6:.2f} µs a delta:"
        f" {median:.2f}x the floor (the stream: {statistics.median(a / b for a, b in zip(t_stream, t_look)):.2f}x that)"
    )


def _phase_of(raw: str, delta: int) -> list[str]:
    """Each delta's phase: where it falls against the reply's <tool_call> blocks."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"<tool_call>.*?</tool_call>\n", raw, flags=re.DOTALL)]
    out, k = [], 0
    for i in range(0, len(raw), delta):
        while k < len(spans) and spans[k][1] + 200 <= i:
            k += 1
        a, b = spans[k] if k < len(spans) else (len(raw) + 1, len(raw) + 1)
        if i + delta <= a:
            out.append("prose" if k == 0 or i >= spans[k - 1][1] + 200 else "prose after a call (200 chars)")
        elif i < a + 16:
            out.append("call: its opener (the deltas to 16 chars in)")
        elif i + delta <= b - 16:
            out.append("call: its payload")
        elif i < b:
            out.append("call: its end (the last 16 chars)")
        else:
            out.append("prose after a call (200 chars)")
    return out


def phases(raw: str, delta: int, repeat: int) -> None:
    """The stream's CPU time by phase: each feed() timed alone (thread time, the
    clock's own cost, measured on an empty call, taken off), the best round kept.
    Tells the prose lane's share from the calls'. (An attribution, not a timing: its
    total runs some 10-15% over the untimed stream's, the clock's reads disturbing it.)"""
    import collections

    kinds = _phase_of(raw, delta)
    clock = time.thread_time_ns
    idle = _Idle().feed
    best: dict = {}
    for _ in range(repeat):
        sp = StreamParser(TOOLS, max_chars=len(raw) + 1)
        feed = sp.feed
        spent: collections.Counter = collections.Counter()
        empty = 0
        for k, i in enumerate(range(0, len(raw), delta)):
            piece = raw[i : i + delta]
            t0 = clock()
            idle(piece)
            t1 = clock()
            feed(piece)
            t2 = clock()
            empty += t1 - t0
            spent[kinds[k]] += t2 - t1
        sp.close()
        clock_cost = empty / len(kinds)
        total = sum(spent.values()) - clock_cost * len(kinds)
        if not best or total < best["total"]:
            best = {"total": total, "spent": spent, "clock": clock_cost}
    counts = collections.Counter(kinds)
    calls = len(re.findall(r"<tool_call>", raw))
    print(f"{len(raw)} chars, {len(kinds)} deltas of {delta}, {calls} calls; best of {repeat} rounds, CPU time")
    for kind, n in sorted(counts.items(), key=lambda kv: kv[0]):
        ns = best["spent"][kind] - best["clock"] * n
        print(f"  {kind:48} {n:6} deltas {ns / 1e6:7.2f} ms {ns / n / 1e3:6.2f} µs a delta {ns / best['total']:6.1%}")
    call_ns = sum(best["spent"][k] - best["clock"] * counts[k] for k in counts if not k.startswith("prose"))
    print(f"  the calls' deltas: {call_ns / calls / 1e3:.1f} µs a call; all: {best['total'] / len(kinds) / 1e3:.2f} µs a delta")


def in_turn(fns, rounds: int) -> list[list[float]]:
    """CPU seconds of each fn in each of `rounds` rounds, the fns taken in turn."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            t0 = time.process_time()
            fn()
            times[k].append(time.process_time() - t0)
    return times


if __name__ == "__main__":
    main()
